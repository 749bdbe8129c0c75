package dev.kvpool.agent.tier;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.kvpool.agent.io.uring.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The CUDA 13 driver's {@code cuMemcpyBatchAsync_v2} through FFM: many scattered copies in one call, where JCuda
 * (cudart 12.6) has only one {@code cudaMemcpyAsync} per block. Looked up once in {@code libcuda.so.1} (the library
 * JCuda's static cudart already loaded, so the same driver and contexts); absent on drivers before 13.0 (their
 * {@code cuMemcpyBatchAsync} has another signature, with a {@code failIdx}: not bound), and then the caller copies
 * block by block.
 *
 * <p>ABI, from CUDA 13.0's {@code cuda.h}: {@code CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr
 * *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream)};
 * {@code CUmemcpyAttributes} is 24 bytes: {@code srcAccessOrder} (int) at 0, {@code srcLocHint} {type, id} at 4,
 * {@code dstLocHint} at 12, {@code flags} at 20. Host pointers are passed as they are: the agent's host buffers are
 * registered with the driver (unified addressing tells host from device). The downcall is declared in
 * {@link Libc#DOWNCALLS} (the native image's list); this class is initialized at run time in a native image.
 */
final class CudaBatchCopy {
    /** {@code CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}: sources read in stream order (the batch waits for what precedes it). */
    static final int SRC_ACCESS_ORDER_STREAM = 1;
    static final long ATTRS_BYTES = 24;
    /** Copies per call: the native arrays are this long (24 KiB a device). */
    static final int MAX = 1024;

    private static final MethodHandle FN;
    private static final String UNAVAILABLE;

    static {
        MethodHandle fn = null;
        String why = null;
        try {
            SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
            if (cuda.find(Libc.CU_MEMCPY_BATCH_ASYNC_CALL.symbol()).isEmpty()) {
                why = "the CUDA driver has no cuMemcpyBatchAsync_v2 (driver before CUDA 13.0)";
            } else {
                fn = Libc.bind(Libc.CU_MEMCPY_BATCH_ASYNC_CALL, cuda);
            }
        } catch (Throwable t) { // no libcuda.so.1 here, or native access denied
            why = "cannot bind the CUDA driver: " + t;
        }
        FN = fn;
        UNAVAILABLE = why;
    }

    private final MemorySegment dsts;
    private final MemorySegment srcs;
    private final MemorySegment sizes;
    private final MemorySegment attrs;
    private final MemorySegment attrIdx;
    private final MemorySegment stream;

    /** Null where the driver has no batch copy ({@link #unavailableReason()} says why). */
    static CudaBatchCopy create(Arena arena, long streamHandle) {
        return FN == null ? null : new CudaBatchCopy(arena, streamHandle);
    }

    /** Why batch copies are not available here, or null. */
    static String unavailableReason() {
        return UNAVAILABLE;
    }

    private CudaBatchCopy(Arena arena, long streamHandle) {
        dsts = arena.allocate(8L * MAX, 8);
        srcs = arena.allocate(8L * MAX, 8);
        sizes = arena.allocate(8L * MAX, 8);
        attrs = arena.allocate(ATTRS_BYTES, 8); // zeroed: no location hints (ignored for registered memory), flags 0
        attrs.set(JAVA_INT, 0, SRC_ACCESS_ORDER_STREAM);
        attrIdx = arena.allocate(8, 8); // {0}: the one attribute applies to every copy
        stream = MemorySegment.ofAddress(streamHandle);
    }

    /**
     * Enqueues {@code n} (&le; {@link #MAX}) copies dst[i] &larr; src[i] of len[i] bytes on the stream; returns the
     * CUresult (0: enqueued).
     */
    int copy(long[] dst, long[] src, long[] len, int n) {
        for (int i = 0; i < n; i++) {
            dsts.setAtIndex(JAVA_LONG, i, dst[i]);
            srcs.setAtIndex(JAVA_LONG, i, src[i]);
            sizes.setAtIndex(JAVA_LONG, i, len[i]);
        }
        try {
            return (int) FN.invokeExact(dsts, srcs, sizes, (long) n, attrs, attrIdx, 1L, stream);
        } catch (Throwable t) {
            throw new IllegalStateException("cuMemcpyBatchAsync_v2: " + t, t);
        }
    }
}
