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
        return pinnedPiece(buf.address(), buf.byteSize()) != null;
    }

    /** The registered piece holding all of [a, a+len), or null. */
    private static long[] pinnedPiece(long a, long len) {
        for (long[] r : PINNED) {
            if (a >= r[0] && a + len <= r[1]) {
                return r;
            }
        }
        return null;
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

    /**
     * This device's whole allocation as {@link dev.kvpool.agent.io.gds.GpuMemory} (slot {@code s} at offset
     * {@code s * slotBytes}), for the NVMe ↔ GPU path ({@link dev.kvpool.agent.io.gds.GpuFileIo}).
     */
    public dev.kvpool.agent.io.gds.GpuMemory memory() {
        return new CudaMemory(id, ordinal, base, slots * slotBytes);
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
            Run run = new Run();
            for (int i = 0; i < slotNos.length; i++) {
                long len = bufs[i].byteSize();
                if (len > slotBytes || slotNos[i] < 0 || slotNos[i] >= slots) {
                    continue;
                }
                long[] piece = pinnedPiece(bufs[i].address(), len);
                if (piece == null) {
                    staged[nStaged++] = i;
                    continue;
                }
                if (!run.extend(bufs[i].address(), slotNos[i] * slotBytes, len, piece)) {
                    issue(write, run);
                    run.start(bufs[i].address(), slotNos[i] * slotBytes, len, piece);
                }
                directOps++;
            }
            issue(write, run);
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

    /**
     * Consecutive direct ops whose host bytes and slots are both adjacent (engine buffers and host-pool slots are
     * usually laid out in key order): one copy instead of one per block, since at 256 KiB the per-copy cost is a
     * third of the transfer time.
     */
    private final class Run {
        long host;
        long dev;
        long len;
        long[] piece;

        void start(long host, long dev, long len, long[] piece) {
            this.host = host;
            this.dev = dev;
            this.len = len;
            this.piece = piece;
        }

        boolean extend(long h, long d, long l, long[] p) {
            if (len == 0 || len % slotBytes != 0 || p != piece || h != host + len || d != dev + len) {
                return false;
            }
            len += l;
            return true;
        }
    }

    private void issue(boolean write, Run r) {
        if (r.len == 0) {
            return;
        }
        Pointer dev = base.withByteOffset(r.dev);
        // the run spans several callers' slices of one pinned piece: address it as one segment
        Pointer host = Pointer.to(MemorySegment.ofAddress(r.host).reinterpret(r.len).asByteBuffer());
        if (write) {
            JCuda.cudaMemcpyAsync(dev, host, r.len, cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
        } else {
            JCuda.cudaMemcpyAsync(host, dev, r.len, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
        }
        r.len = 0;
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
            copyGroup(true, half, slotNos, bufs, ops, start, m);
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
                copyGroup(false, half, slotNos, bufs, ops, g * stageSlots, Math.min(stageSlots, n - g * stageSlots));
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

    /** DMA between one staging half and the slots of ops[from..from+m), merging runs of consecutive slots. */
    private void copyGroup(boolean h2d, int half, long[] slotNos, MemorySegment[] bufs, int[] ops, int from, int m) {
        for (int j = 0; j < m; ) {
            int i = ops[from + j];
            long len = bufs[i].byteSize();
            int k = j + 1;
            while (k < m && len % slotBytes == 0 && slotNos[ops[from + k]] == slotNos[i] + (k - j)) {
                len += bufs[ops[from + k]].byteSize();
                k++;
            }
            Pointer dev = base.withByteOffset(slotNos[i] * slotBytes);
            Pointer host = staging.withByteOffset(stageOffset(half, j));
            if (h2d) {
                JCuda.cudaMemcpyAsync(dev, host, len, cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
            } else {
                JCuda.cudaMemcpyAsync(host, dev, len, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
            }
            j = k;
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
