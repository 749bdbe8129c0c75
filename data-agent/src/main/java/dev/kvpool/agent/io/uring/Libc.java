package dev.kvpool.agent.io.uring;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * The few libc entry points the agent needs, bound with FFM: {@code syscall} (io_uring has no libc wrapper),
 * {@code open}/{@code close}/{@code posix_fallocate} (raw fds with O_DIRECT), {@code mmap}/{@code munmap} (the
 * rings). Every call that can fail captures {@code errno}.
 *
 * <p>A native image can only make downcalls whose descriptor and options were registered at build time. So every
 * downcall is declared once in {@link #DOWNCALLS} and bound by {@link #bind}, the only place that calls
 * {@code Linker.downcallHandle}; {@code NativeImageMetadataTest} holds the list against the {@code foreign}
 * section of {@code META-INF/native-image/dev.kvpool/kvpool-data-agent/reachability-metadata.json} and fails on a
 * downcall made anywhere else. The handles are made in the static initializer, so this class is initialized at run
 * time in a native image ({@code quarkus.native.additional-build-args}).
 */
public final class Libc {
    public static final int O_RDONLY = 0, O_RDWR = 2, O_CREAT = 0100, O_DIRECT = 040000, O_CLOEXEC = 02000000;
    public static final int PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, MAP_POPULATE = 0x8000;
    public static final long MAP_FAILED = -1L;

    /**
     * One libc function as it is bound: its symbol, its descriptor, the index of its first variadic argument (-1:
     * none) and whether {@code errno} is captured. Exactly what the native image has to know at build time.
     */
    public record Downcall(String symbol, FunctionDescriptor descriptor, int firstVariadicArg, boolean captureErrno) {
        Linker.Option[] options() {
            List<Linker.Option> o = new ArrayList<>(2);
            if (firstVariadicArg >= 0) {
                o.add(Linker.Option.firstVariadicArg(firstVariadicArg));
            }
            if (captureErrno) {
                o.add(Linker.Option.captureCallState("errno"));
            }
            return o.toArray(Linker.Option[]::new);
        }
    }

    /** {@code long syscall(long number, ...)}: six variadic arguments, enough for every io_uring call. */
    public static final Downcall SYSCALL6_CALL = new Downcall("syscall",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG), 1, true);
    /** {@code int open(const char *path, int flags, ...)}: the mode is variadic. */
    public static final Downcall OPEN_CALL = new Downcall("open",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            2, true);
    public static final Downcall CLOSE_CALL = new Downcall("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), -1, false);
    /** {@code int posix_fallocate(int fd, off_t offset, off_t len)}: returns the error, sets no errno. */
    public static final Downcall FALLOCATE_CALL = new Downcall("posix_fallocate",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
            -1, false);
    public static final Downcall MMAP_CALL = new Downcall("mmap",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), -1, true);
    public static final Downcall MUNMAP_CALL = new Downcall("munmap",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), -1, false);
    /**
     * Not libc: the CUDA 13 driver's {@code CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs,
     * size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream)}, bound
     * from {@code libcuda.so.1} by {@code tier.CudaBatchCopy} through {@link #bind(SymbolLookup, Downcall)}; declared
     * here so that the native image's list of downcalls stays in one place.
     */
    public static final Downcall CU_MEMCPY_BATCH_ASYNC_CALL = new Downcall("cuMemcpyBatchAsync_v2",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS), -1, false);

    /** Every downcall the agent makes. */
    public static final List<Downcall> DOWNCALLS = List.of(SYSCALL6_CALL, OPEN_CALL, CLOSE_CALL, FALLOCATE_CALL,
            MMAP_CALL, MUNMAP_CALL, CU_MEMCPY_BATCH_ASYNC_CALL);

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final VarHandle ERRNO_HANDLE = Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final long STATE_SIZE = Linker.Option.captureStateLayout().byteSize();

    private static final MethodHandle SYSCALL6 = bind(SYSCALL6_CALL);
    private static final MethodHandle OPEN = bind(OPEN_CALL);
    private static final MethodHandle CLOSE = bind(CLOSE_CALL);
    private static final MethodHandle FALLOCATE = bind(FALLOCATE_CALL);
    private static final MethodHandle MMAP = bind(MMAP_CALL);
    private static final MethodHandle MUNMAP = bind(MUNMAP_CALL);

    private static MethodHandle bind(Downcall d) {
        return bind(d, LIBC);
    }

    /**
     * The one place that makes downcall handles: {@code d} from {@code library} (libc, or a library loaded lazily
     * such as libcufile). {@code d} must be declared in {@link #DOWNCALLS} or
     * {@link dev.kvpool.agent.io.gds.CuFile#DOWNCALLS}, the lists the native image's metadata holds.
     *
     * @throws java.util.NoSuchElementException when the library lacks the symbol
     */
    public static MethodHandle bind(Downcall d, SymbolLookup library) {
        if (!DOWNCALLS.contains(d) && !dev.kvpool.agent.io.gds.CuFile.DOWNCALLS.contains(d)) {
            // a downcall outside the lists would be missing from the native image
            throw new IllegalStateException("downcall " + d.symbol() + " is not in Libc.DOWNCALLS or CuFile.DOWNCALLS");
        }
        return LINKER.downcallHandle(library.find(d.symbol()).orElseThrow(
                () -> new java.util.NoSuchElementException("symbol " + d.symbol() + " not found")), d.descriptor(),
                d.options());
    }

    private Libc() {
    }

    /** A syscall's result: the return value, or -errno when it failed. */
    public static long syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(STATE_SIZE);
            long r = (long) SYSCALL6.invokeExact(st, nr, a1, a2, a3, a4, a5, a6);
            return r == -1 ? -(int) ERRNO_HANDLE.get(st, 0L) : r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** open(2); the fd, or -errno. */
    public static int open(String path, int flags, int mode) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(STATE_SIZE);
            int r = (int) OPEN.invokeExact(st, a.allocateFrom(path), flags, mode);
            return r < 0 ? -(int) ERRNO_HANDLE.get(st, 0L) : r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** posix_fallocate(3): 0, or an errno value (it does not set errno). */
    public static int fallocate(int fd, long offset, long len) {
        try {
            return (int) FALLOCATE.invokeExact(fd, offset, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** mmap(2) of a shared mapping of {@code fd}; throws with errno on failure. */
    public static MemorySegment mmap(long len, int fd, long offset) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(STATE_SIZE);
            MemorySegment p = (MemorySegment) MMAP.invokeExact(st, MemorySegment.NULL, len, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, fd, offset);
            if (p.address() == MAP_FAILED) {
                throw new IllegalStateException("mmap failed: errno " + (int) ERRNO_HANDLE.get(st, 0L));
            }
            return p.reinterpret(len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void munmap(MemorySegment s) {
        try {
            int ignored = (int) MUNMAP.invokeExact(s, s.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** What a downcall handle threw, as an unchecked exception (an Error goes on as it is). */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
