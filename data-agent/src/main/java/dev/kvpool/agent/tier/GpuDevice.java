package dev.kvpool.agent.tier;

import dev.kvpool.agent.pool.Device;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Logger;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaEvent_t;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;

/**
 * G1: one GPU's memory through JCuda (cudart 12.6 linked statically into its natives): one device allocation cut
 * into slots, copies issued with {@code cudaMemcpyAsync} on the device's own non-blocking stream, one stream
 * synchronize per batch.
 *
 * <p>Host buffers inside a region registered with {@link #pin} (the host pool's regions and the engine's shared
 * segment, pinned by the agent at start-up) are copied directly by the copy engines. Any other buffer is pageable:
 * CUDA would copy it synchronously through its own small bounce buffer, so it goes through this device's pinned
 * staging buffer instead, in two halves so the CPU copy of one group (spread over the cores) overlaps the DMA of the other.
 *
 * <p>Only constructed where {@link #deviceCount()} &gt; 0; elsewhere the agent puts a {@link MemoryDevice} in the GPU
 * tier's place.
 */
public final class GpuDevice implements Device {
    private static final Logger LOG = Logger.getLogger(GpuDevice.class.getName());
    /** cudaHostRegister works on contiguous ranges; big regions are registered piecewise. */
    static final long PIN_PIECE = 1L << 30;
    /** Bytes of each staging half (rounded to whole slots). */
    static final long STAGE_HALF = 16L << 20;
    /** Registered host ranges {start, end}; a buffer is direct only when one piece holds all of it. */
    private static final List<long[]> PINNED = new CopyOnWriteArrayList<>();

    private final String id;
    private final int ordinal;
    private final long slots;
    private final int slotBytes;
    private final Pointer base = new Pointer();
    private final cudaStream_t stream = new cudaStream_t();
    private final Pointer staging = new Pointer();
    private final MemorySegment stagingMem;
    private final int stageSlots;
    private final cudaEvent_t[] halfDone = {new cudaEvent_t(), new cudaEvent_t()};
    private long directOps;
    private long stagedOps;

    public GpuDevice(String id, int ordinal, long slots, int slotBytes) {
        this.id = id;
        this.ordinal = ordinal;
        this.slots = slots;
        this.slotBytes = slotBytes;
        JCuda.setExceptionsEnabled(true);
        JCuda.cudaSetDevice(ordinal);
        JCuda.cudaMalloc(base, slots * slotBytes);
        JCuda.cudaStreamCreateWithFlags(stream, JCuda.cudaStreamNonBlocking);
        this.stageSlots = (int) Math.max(1, STAGE_HALF / slotBytes);
        long stageBytes = 2L * stageSlots * slotBytes;
        JCuda.cudaHostAlloc(staging, stageBytes, JCuda.cudaHostAllocPortable);
        this.stagingMem = MemorySegment.ofBuffer(staging.getByteBuffer(0, stageBytes));
        for (cudaEvent_t e : halfDone) {
            JCuda.cudaEventCreateWithFlags(e, JCuda.cudaEventDisableTiming);
        }
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

    /**
     * Page-locks a host region (portable: for every device) so copies from and to it run asynchronously on the copy
     * engines. Returns false, leaving copies staged, where the driver refuses (e.g. a locked-memory limit).
     */
    public static boolean pin(MemorySegment region) {
        long addr = region.address();
        long size = region.byteSize();
        if (size == 0 || isPinned(region)) {
            return true;
        }
        JCuda.setExceptionsEnabled(true);
        for (long off = 0; off < size; off += PIN_PIECE) {
            long len = Math.min(PIN_PIECE, size - off);
            try {
                JCuda.cudaHostRegister(Pointer.to(region.asSlice(off, len).asByteBuffer()), len,
                        JCuda.cudaHostRegisterPortable);
            } catch (CudaException e) {
                LOG.warning(String.format("cannot pin %d MiB of host memory at offset %d (%s): copies from it are staged",
                        len >> 20, off, e.getMessage()));
                return false;
            }
            PINNED.add(new long[] {addr + off, addr + off + len});
        }
        return true;
    }

    /** Unregisters a region pinned with {@link #pin} (before its memory is freed or unmapped). */
    public static void unpin(MemorySegment region) {
        long addr = region.address();
        long end = addr + region.byteSize();
        for (long[] r : PINNED) {
            if (r[0] >= addr && r[1] <= end && PINNED.remove(r)) {
                JCuda.cudaHostUnregister(Pointer.to(region.asSlice(r[0] - addr, r[1] - r[0]).asByteBuffer()));
            }
        }
    }

    static boolean isPinned(MemorySegment buf) {
        long a = buf.address();
        long e = a + buf.byteSize();
        for (long[] r : PINNED) {
            if (a >= r[0] && e <= r[1]) {
                return true;
            }
        }
        return false;
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

    /** Ops copied straight from or to pinned memory, and ops that went through the staging buffer. */
    public long[] opCounts() {
        return new long[] {directOps, stagedOps};
    }

    @Override
    public boolean[] io(boolean write, long[] slotNos, MemorySegment[] bufs) {
        boolean[] ok = new boolean[slotNos.length];
        int[] staged = new int[slotNos.length];
        int nStaged = 0;
        try {
            JCuda.cudaSetDevice(ordinal);
            for (int i = 0; i < slotNos.length; i++) {
                long len = bufs[i].byteSize();
                if (len > slotBytes || slotNos[i] < 0 || slotNos[i] >= slots) {
                    continue;
                }
                if (!isPinned(bufs[i])) {
                    staged[nStaged++] = i;
                    continue;
                }
                Pointer dev = base.withByteOffset(slotNos[i] * slotBytes);
                Pointer host = Pointer.to(bufs[i].asByteBuffer());
                if (write) {
                    JCuda.cudaMemcpyAsync(dev, host, len, cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
                } else {
                    JCuda.cudaMemcpyAsync(host, dev, len, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
                }
                directOps++;
            }
            if (nStaged > 0) {
                if (write) {
                    stagedWrite(slotNos, bufs, staged, nStaged);
                } else {
                    stagedRead(slotNos, bufs, staged, nStaged);
                }
                stagedOps += nStaged;
            }
            JCuda.cudaStreamSynchronize(stream);
        } catch (CudaException e) { // the whole batch is in doubt: report it failed, the caller treats it as a miss
            LOG.warning(id + ": CUDA " + (write ? "write" : "read") + " batch of " + slotNos.length + " failed: " + e.getMessage());
            return new boolean[slotNos.length];
        }
        for (int i = 0; i < slotNos.length; i++) {
            ok[i] = bufs[i].byteSize() <= slotBytes && slotNos[i] >= 0 && slotNos[i] < slots;
        }
        return ok;
    }

    /** Host → staging half (CPU) then staging → device (DMA); a half is refilled once its previous DMA is done. */
    private void stagedWrite(long[] slotNos, MemorySegment[] bufs, int[] ops, int n) {
        boolean[] used = new boolean[2];
        for (int g = 0, start = 0; start < n; g++, start += stageSlots) {
            int half = g & 1;
            if (used[half]) {
                JCuda.cudaEventSynchronize(halfDone[half]);
            }
            int first = start;
            int m = Math.min(stageSlots, n - start);
            HostParallel.forEach(m, (long) m * slotBytes, j -> {
                MemorySegment b = bufs[ops[first + j]];
                MemorySegment.copy(b, 0, stagingMem, stageOffset(half, j), b.byteSize());
            });
            for (int j = 0; j < m; j++) {
                int i = ops[start + j];
                JCuda.cudaMemcpyAsync(base.withByteOffset(slotNos[i] * slotBytes), staging.withByteOffset(stageOffset(half, j)),
                        bufs[i].byteSize(), cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
            }
            JCuda.cudaEventRecord(halfDone[half], stream);
            used[half] = true;
        }
    }

    /** Device → staging half (DMA) then staging → host (CPU) while the next group's DMA runs. */
    private void stagedRead(long[] slotNos, MemorySegment[] bufs, int[] ops, int n) {
        int groups = (n + stageSlots - 1) / stageSlots;
        for (int g = 0; g <= groups; g++) {
            if (g < groups) {
                int half = g & 1;
                for (int j = 0; j < stageSlots && g * stageSlots + j < n; j++) {
                    int i = ops[g * stageSlots + j];
                    JCuda.cudaMemcpyAsync(staging.withByteOffset(stageOffset(half, j)),
                            base.withByteOffset(slotNos[i] * slotBytes), bufs[i].byteSize(),
                            cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
                }
                JCuda.cudaEventRecord(halfDone[half], stream);
            }
            if (g > 0) { // drain the previous group while this one's DMA runs
                int prev = g - 1;
                int half = prev & 1;
                JCuda.cudaEventSynchronize(halfDone[half]);
                int m = Math.min(stageSlots, n - prev * stageSlots);
                HostParallel.forEach(m, (long) m * slotBytes, j -> {
                    MemorySegment b = bufs[ops[prev * stageSlots + j]];
                    MemorySegment.copy(stagingMem, stageOffset(half, j), b, 0, b.byteSize());
                });
            }
        }
    }

    private long stageOffset(int half, int j) {
        return ((long) half * stageSlots + j) * slotBytes;
    }

    @Override
    public void close() {
        JCuda.cudaSetDevice(ordinal);
        JCuda.cudaStreamSynchronize(stream);
        for (cudaEvent_t e : halfDone) {
            JCuda.cudaEventDestroy(e);
        }
        JCuda.cudaStreamDestroy(stream);
        JCuda.cudaFreeHost(staging);
        JCuda.cudaFree(base);
    }
}
