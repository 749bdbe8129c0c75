package dev.kvpool.agent.tier;

import dev.kvpool.agent.pool.Device;
import java.lang.foreign.MemorySegment;
import java.util.logging.Logger;
import jcuda.Pointer;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;

/**
 * G1: one GPU's memory through JCuda (cudart 12.6 linked statically into its natives): one device allocation cut
 * into slots, copies issued with {@code cudaMemcpyAsync} on the device's own stream, one stream synchronize per
 * batch. Host buffers are the agent's 4 KiB-aligned off-heap segments (pin them with {@link #pin} to make the
 * copies truly asynchronous). Only constructed where {@link #deviceCount()} &gt; 0; elsewhere the agent puts a
 * {@link MemoryDevice} in the GPU tier's place.
 */
public final class GpuDevice implements Device {
    private static final Logger LOG = Logger.getLogger(GpuDevice.class.getName());
    private final String id;
    private final int ordinal;
    private final long slots;
    private final int slotBytes;
    private final Pointer base = new Pointer();
    private final cudaStream_t stream = new cudaStream_t();

    public GpuDevice(String id, int ordinal, long slots, int slotBytes) {
        this.id = id;
        this.ordinal = ordinal;
        this.slots = slots;
        this.slotBytes = slotBytes;
        JCuda.setExceptionsEnabled(true);
        JCuda.cudaSetDevice(ordinal);
        JCuda.cudaMalloc(base, slots * slotBytes);
        JCuda.cudaStreamCreate(stream);
    }

    /** CUDA devices visible here; 0 when JCuda's natives, the driver or a device are missing. */
    public static int deviceCount() {
        try {
            JCuda.setExceptionsEnabled(false);
            int[] n = new int[1];
            int err = JCuda.cudaGetDeviceCount(n);
            return err == 0 ? n[0] : 0;
        } catch (Throwable t) { // UnsatisfiedLinkError, NoClassDefFoundError: no natives or no driver
            LOG.fine("no CUDA: " + t);
            return 0;
        }
    }

    /** Page-locks a host region so copies from and to it run asynchronously on the copy engines. */
    public static void pin(MemorySegment region) {
        JCuda.cudaHostRegister(Pointer.to(region.asByteBuffer()), region.byteSize(), 0);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public long slotCount() {
        return slots;
    }

    @Override
    public int slotBytes() {
        return slotBytes;
    }

    @Override
    public boolean[] io(boolean write, long[] slotNos, MemorySegment[] bufs) {
        JCuda.cudaSetDevice(ordinal);
        boolean[] ok = new boolean[slotNos.length];
        for (int i = 0; i < slotNos.length; i++) {
            long len = bufs[i].byteSize();
            if (len > slotBytes) {
                continue;
            }
            Pointer dev = base.withByteOffset(slotNos[i] * slotBytes);
            Pointer host = Pointer.to(bufs[i].asByteBuffer());
            if (write) {
                JCuda.cudaMemcpyAsync(dev, host, len, cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
            } else {
                JCuda.cudaMemcpyAsync(host, dev, len, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
            }
            ok[i] = true;
        }
        JCuda.cudaStreamSynchronize(stream);
        return ok;
    }

    @Override
    public void close() {
        JCuda.cudaSetDevice(ordinal);
        JCuda.cudaStreamDestroy(stream);
        JCuda.cudaFree(base);
    }
}
