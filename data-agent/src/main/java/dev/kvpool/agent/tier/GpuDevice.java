package dev.kvpool.agent.tier;

import dev.kvpool.agent.pool.Device;
import java.lang.foreign.Arena;
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
    private final DevicePointer base = new DevicePointer();
    private final Stream stream = new Stream();
    private final Pointer staging = new Pointer();
    private final MemorySegment stagingMem;
    private final int stageSlots;
    private final cudaEvent_t[] halfDone = {new cudaEvent_t(), new cudaEvent_t()};
    private long directOps;
    private long stagedOps;
    /** Native arrays for batch copies (freed with the device). */
    private final Arena nativeArrays = Arena.ofShared();
    /** cuMemcpyBatchAsync_v2 on this device's stream, or null (driver before 13.0). */
    private final CudaBatchCopy batchCopy;
    /** {@link #batchCopy} while in use; null once turned off or refused by the driver. */
    private CudaBatchCopy batch;
    private final Copies copies = new Copies();
    private long batchCalls;
    private long batchedCopies;
    private long singleCopies;

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
        this.baseAddress = base.address();
        long streamHandle = stream.handle();
        this.batchCopy = baseAddress == 0 || streamHandle == 0 ? null : CudaBatchCopy.create(nativeArrays, streamHandle);
        this.batch = batchCopy;
    }

    /** Device address of slot 0, for batch copies. */
    private final long baseAddress;

    /** The device allocation; JCuda keeps its address in a protected field, which a subclass may read. */
    private static final class DevicePointer extends Pointer {
        long address() {
            return getNativePointer();
        }
    }

    /** The device's stream, whose CUstream handle (the same object) the driver's batch copy takes. */
    private static final class Stream extends cudaStream_t {
        long handle() {
            return getNativePointer();
        }
    }

    /** How scattered copies are issued here, for the log and the status. */
    public String copyPath() {
        return batch != null ? "scattered copies batched (cuMemcpyBatchAsync_v2, up to " + CudaBatchCopy.MAX + " a call)"
                : "scattered copies one by one (cudaMemcpyAsync" + (CudaBatchCopy.unavailableReason() == null ? ""
                : "; " + CudaBatchCopy.unavailableReason()) + ")";
    }

    /**
     * Turns batched copies off (per-block {@code cudaMemcpyAsync}, as before CUDA 13) or back on where the driver
     * has them: for the benchmark's comparison and for a driver whose batch copies misbehave. Not during an
     * {@link #io}.
     */
    public void batchCopies(boolean on) {
        batch = on ? batchCopy : null;
    }

    public boolean batched() {
        return batch != null;
    }

    /** Batch-copy calls made, copies they carried, and copies issued one by one (for tests and the bench). */
    public long[] copyCounts() {
        return new long[] {batchCalls, batchedCopies, singleCopies};
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
            copies.flush();
            if (nStaged > 0) {
                if (write) {
                    stagedWrite(slotNos, bufs, staged, nStaged);
                } else {
                    stagedRead(slotNos, bufs, staged, nStaged);
                }
                stagedOps += nStaged;
            }
            JCuda.cudaStreamSynchronize(stream);
        } catch (CudaException | IllegalStateException e) { // the whole batch is in doubt: report it failed, the
            // caller treats it as a miss
            copies.n = 0;
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
        copies.add(write, r.dev, r.host, r.len);
        r.len = 0;
    }

    /**
     * The copies of one phase (the direct ops of a batch, one staging group), issued together by {@link #flush}: one
     * batch call where the driver has it, else one {@code cudaMemcpyAsync} each. At 256 KiB a copy call costs about
     * as long as the transfer itself, so scattered blocks reach the link only when their copies go as one call.
     */
    private final class Copies {
        final long[] devOff = new long[CudaBatchCopy.MAX];
        final long[] host = new long[CudaBatchCopy.MAX];
        final long[] len = new long[CudaBatchCopy.MAX];
        final long[] dst = new long[CudaBatchCopy.MAX];
        final long[] src = new long[CudaBatchCopy.MAX];
        int n;
        boolean h2d;

        void add(boolean write, long dev, long hostAddr, long bytes) {
            if (n == CudaBatchCopy.MAX || (n > 0 && write != h2d)) {
                flush();
            }
            h2d = write;
            devOff[n] = dev;
            host[n] = hostAddr;
            len[n++] = bytes;
        }

        void flush() {
            if (n == 0) {
                return;
            }
            CudaBatchCopy b = batch;
            if (b != null && n > 1) {
                for (int i = 0; i < n; i++) {
                    dst[i] = h2d ? baseAddress + devOff[i] : host[i];
                    src[i] = h2d ? host[i] : baseAddress + devOff[i];
                }
                int rc = b.copy(dst, src, len, n);
                if (rc == 0) {
                    batchCalls++;
                    batchedCopies += n;
                    n = 0;
                    return;
                }
                // refused (nothing enqueued): copies are idempotent, so the same ones go one by one, now and later
                batch = null;
                LOG.warning(id + ": cuMemcpyBatchAsync_v2 returned CUresult " + rc + " for " + n
                        + " copies: batch copies off for this device, copies go one by one");
            }
            for (int i = 0; i < n; i++) {
                Pointer dev = base.withByteOffset(devOff[i]);
                // a run spans several callers' slices of one pinned piece: address it as one segment
                Pointer h = Pointer.to(MemorySegment.ofAddress(host[i]).reinterpret(len[i]).asByteBuffer());
                if (h2d) {
                    JCuda.cudaMemcpyAsync(dev, h, len[i], cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
                } else {
                    JCuda.cudaMemcpyAsync(h, dev, len[i], cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
                }
            }
            singleCopies += n;
            n = 0;
        }
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
            copies.add(h2d, slotNos[i] * slotBytes, stagingMem.address() + stageOffset(half, j), len);
            j = k;
        }
        copies.flush(); // before the caller records the half's event
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
        nativeArrays.close();
    }
}
