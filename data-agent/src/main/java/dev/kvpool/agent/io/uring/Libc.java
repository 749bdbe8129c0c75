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

/**
 * The few libc entry points the agent needs, bound with FFM: {@code syscall} (io_uring has no libc wrapper),
 * {@code open}/{@code close}/{@code posix_fallocate} (raw fds with O_DIRECT), {@code mmap}/{@code munmap} (the
 * rings). Every call that can fail captures {@code errno}. All descriptors are fixed here, so a native image can
 * register them at build time (no reflection, no dynamic descriptors).
 */
public final class Libc {
    public static final int O_RDONLY = 0, O_RDWR = 2, O_CREAT = 0100, O_DIRECT = 040000, O_CLOEXEC = 02000000;
    public static final int PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, MAP_POPULATE = 0x8000;
    public static final long MAP_FAILED = -1L;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final VarHandle ERRNO_HANDLE = Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final long STATE_SIZE = Linker.Option.captureStateLayout().byteSize();

    private static final MethodHandle SYSCALL6 = LINKER.downcallHandle(LIBC.find("syscall").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG),
            Linker.Option.firstVariadicArg(1), ERRNO);
    private static final MethodHandle OPEN = LINKER.downcallHandle(LIBC.find("open").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2), ERRNO);
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LIBC.find("close").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle FALLOCATE = LINKER.downcallHandle(LIBC.find("posix_fallocate").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    private static final MethodHandle MMAP = LINKER.downcallHandle(LIBC.find("mmap").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), ERRNO);
    private static final MethodHandle MUNMAP = LINKER.downcallHandle(LIBC.find("munmap").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));

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

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
