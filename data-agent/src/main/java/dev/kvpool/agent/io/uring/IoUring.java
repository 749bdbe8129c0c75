package dev.kvpool.agent.io.uring;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * A minimal io_uring over raw syscalls (425 setup, 426 enter, 427 register): the SQ ring, CQ ring and SQE array
 * are mmapped from the ring fd; the shared head/tail words are read with acquire and written with release
 * semantics (the kernel's smp_load_acquire/smp_store_release pairing). Not thread-safe: one owner thread per ring.
 *
 * <p>Layouts (x86-64, {@code <linux/io_uring.h>}): {@code io_uring_params} 120 B, {@code io_uring_sqe} 64 B,
 * {@code io_uring_cqe} 16 B.
 */
public final class IoUring implements AutoCloseable {
    public static final int SYS_SETUP = 425, SYS_ENTER = 426, SYS_REGISTER = 427;
    public static final byte OP_READ_FIXED = 4, OP_WRITE_FIXED = 5, OP_READ = 22, OP_WRITE = 23;
    public static final int ENTER_GETEVENTS = 1;
    public static final int REGISTER_BUFFERS = 0, UNREGISTER_BUFFERS = 1;
    public static final int FEAT_SINGLE_MMAP = 1;
    static final long OFF_SQ_RING = 0L, OFF_CQ_RING = 0x8000000L, OFF_SQES = 0x10000000L;
    public static final int PARAMS_SIZE = 120, SQE_SIZE = 64, CQE_SIZE = 16;

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final Arena arena = Arena.ofShared();
    private final int fd;
    private final int entries;
    private final MemorySegment sqRing, cqRing, sqes;
    private final long sqHead, sqTail, sqMask, sqArray, cqHead, cqTail, cqMask, cqes;
    private final int cqEntries;
    private final int features;
    private int localTail; // SQEs prepared but not yet published
    private int pending;   // published, not yet handed to the kernel by enter
    private boolean buffersRegistered;

    private IoUring(int fd, MemorySegment params) {
        this.fd = fd;
        this.entries = params.get(ValueLayout.JAVA_INT, 0);
        this.cqEntries = params.get(ValueLayout.JAVA_INT, 4);
        this.features = params.get(ValueLayout.JAVA_INT, 20);
        int sqOff = 40, cqOff = 80;
        long sqSize = params.get(ValueLayout.JAVA_INT, sqOff + 24) + (long) entries * 4;
        long cqSize = params.get(ValueLayout.JAVA_INT, cqOff + 20) + (long) cqEntries * CQE_SIZE;
        if ((features & FEAT_SINGLE_MMAP) != 0) {
            long size = Math.max(sqSize, cqSize);
            sqRing = Libc.mmap(size, fd, OFF_SQ_RING);
            cqRing = sqRing;
        } else {
            sqRing = Libc.mmap(sqSize, fd, OFF_SQ_RING);
            cqRing = Libc.mmap(cqSize, fd, OFF_CQ_RING);
        }
        sqes = Libc.mmap((long) entries * SQE_SIZE, fd, OFF_SQES);
        sqHead = params.get(ValueLayout.JAVA_INT, sqOff);
        sqTail = params.get(ValueLayout.JAVA_INT, sqOff + 4);
        sqMask = params.get(ValueLayout.JAVA_INT, sqOff + 8);
        sqArray = params.get(ValueLayout.JAVA_INT, sqOff + 24);
        cqHead = params.get(ValueLayout.JAVA_INT, cqOff);
        cqTail = params.get(ValueLayout.JAVA_INT, cqOff + 4);
        cqMask = params.get(ValueLayout.JAVA_INT, cqOff + 8);
        cqes = params.get(ValueLayout.JAVA_INT, cqOff + 20);
        localTail = (int) INT.getAcquire(sqRing, sqTail);
    }

    /**
     * Sets up a ring with {@code entries} SQEs (a power of two).
     *
     * @throws IoUringUnavailableException when the kernel or a seccomp filter refuses io_uring (ENOSYS, EPERM)
     */
    public static IoUring create(int entries) {
        return create(entries, Integer.getInteger("kvpool.uring.setup-flags", SETUP_COOP_TASKRUN));
    }

    /** IORING_SETUP_COOP_TASKRUN: completions do not interrupt the submitting thread (5.19+); dropped if refused. */
    public static final int SETUP_COOP_TASKRUN = 1 << 8;

    public static IoUring create(int entries, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(PARAMS_SIZE, 8);
            params.set(ValueLayout.JAVA_INT, 8, flags);
            long r = Libc.syscall(SYS_SETUP, entries, params.address(), 0, 0, 0, 0);
            if (r == -22 && flags != 0) { // EINVAL: an older kernel without these flags
                return create(entries, 0);
            }
            if (r < 0) {
                throw new IoUringUnavailableException("io_uring_setup(" + entries + ") failed: errno " + (-r)
                        + (r == -38 ? " (ENOSYS: kernel without io_uring)" : r == -1 ? " (EPERM: blocked by seccomp or sysctl)" : ""));
            }
            return new IoUring((int) r, params);
        }
    }

    /** Whether io_uring can be set up here; the reason when it cannot. */
    public static String unavailableReason() {
        try (IoUring r = create(2)) {
            return null;
        } catch (IoUringUnavailableException | UnsatisfiedLinkError | IllegalStateException e) {
            return e.getMessage();
        }
    }

    public int entries() {
        return entries;
    }

    public int features() {
        return features;
    }

    /** Registers buffers as fixed buffers (index = position in the list); READ_FIXED/WRITE_FIXED address them. */
    public void registerBuffers(List<MemorySegment> buffers) {
        if (buffersRegistered) {
            unregisterBuffers();
        }
        MemorySegment iov = arena.allocate(16L * buffers.size(), 8);
        for (int i = 0; i < buffers.size(); i++) {
            iov.set(ValueLayout.JAVA_LONG, 16L * i, buffers.get(i).address());
            iov.set(ValueLayout.JAVA_LONG, 16L * i + 8, buffers.get(i).byteSize());
        }
        long r = Libc.syscall(SYS_REGISTER, fd, REGISTER_BUFFERS, iov.address(), buffers.size(), 0, 0);
        if (r < 0) {
            throw new IllegalStateException("IORING_REGISTER_BUFFERS failed: errno " + (-r)
                    + (r == -12 ? " (ENOMEM: RLIMIT_MEMLOCK too low)" : ""));
        }
        buffersRegistered = true;
    }

    public void unregisterBuffers() {
        if (buffersRegistered) {
            Libc.syscall(SYS_REGISTER, fd, UNREGISTER_BUFFERS, 0, 0, 0, 0);
            buffersRegistered = false;
        }
    }

    /** Free SQ slots (prepared and published entries the kernel has not consumed count as used). */
    public int sqSpace() {
        int head = (int) INT.getAcquire(sqRing, sqHead);
        return entries - (localTail - head);
    }

    /**
     * Prepares one read/write SQE. {@code bufIndex} ≥ 0 selects a registered buffer (READ_FIXED/WRITE_FIXED).
     *
     * @return false when the SQ is full
     */
    public boolean prep(byte opcode, int fileFd, long fileOffset, long addr, int len, int bufIndex, long userData) {
        if (sqSpace() <= 0) {
            return false;
        }
        int idx = localTail & (int) INT.get(sqRing, sqMask);
        long o = (long) idx * SQE_SIZE;
        for (int w = 0; w < SQE_SIZE; w += 8) { // zero the SQE without a slice object per op
            sqes.set(ValueLayout.JAVA_LONG, o + w, 0L);
        }
        sqes.set(ValueLayout.JAVA_BYTE, o, opcode);
        sqes.set(ValueLayout.JAVA_INT, o + 4, fileFd);
        sqes.set(ValueLayout.JAVA_LONG, o + 8, fileOffset);
        sqes.set(ValueLayout.JAVA_LONG, o + 16, addr);
        sqes.set(ValueLayout.JAVA_INT, o + 24, len);
        sqes.set(ValueLayout.JAVA_LONG, o + 32, userData);
        if (bufIndex >= 0) {
            sqes.set(ValueLayout.JAVA_SHORT, o + 40, (short) bufIndex);
        }
        sqRing.set(ValueLayout.JAVA_INT, sqArray + 4L * idx, idx);
        localTail++;
        pending++;
        return true;
    }

    /** Publishes prepared SQEs and enters the kernel, waiting for at least {@code minComplete} completions. */
    public int submit(int minComplete) {
        INT.setRelease(sqRing, sqTail, localTail);
        int toSubmit = pending;
        while (true) {
            long r = Libc.syscall(SYS_ENTER, fd, toSubmit, minComplete, minComplete > 0 ? ENTER_GETEVENTS : 0, 0, 0);
            if (r == -4) { // EINTR
                continue;
            }
            if (r < 0) {
                throw new IllegalStateException("io_uring_enter failed: errno " + (-r));
            }
            pending -= (int) Math.min(pending, r);
            return (int) r;
        }
    }

    /** Prepared SQEs not yet handed to the kernel by {@link #submit}. */
    public int pendingSubmit() {
        return pending;
    }

    /** Whether a completion is waiting in the CQ (reap would return it without entering the kernel). */
    public boolean completionReady() {
        return (int) INT.get(cqRing, cqHead) != (int) INT.getAcquire(cqRing, cqTail);
    }

    /** Completion visitor: user data and result (bytes, or -errno). */
    public interface Completion {
        void complete(long userData, int res);
    }

    /** Reaps every available CQE; returns how many. */
    public int reap(Completion c) {
        int head = (int) INT.get(cqRing, cqHead);
        int tail = (int) INT.getAcquire(cqRing, cqTail);
        int mask = (int) INT.get(cqRing, cqMask);
        int n = 0;
        while (head != tail) {
            long o = cqes + (long) (head & mask) * CQE_SIZE;
            long ud = cqRing.get(ValueLayout.JAVA_LONG, o);
            int res = cqRing.get(ValueLayout.JAVA_INT, o + 8);
            head++;
            n++;
            c.complete(ud, res);
        }
        if (n > 0) {
            INT.setRelease(cqRing, cqHead, head);
        }
        return n;
    }

    public int cqEntries() {
        return cqEntries;
    }

    @Override
    public void close() {
        unregisterBuffers();
        Libc.munmap(sqes);
        Libc.munmap(sqRing);
        if (cqRing != sqRing) {
            Libc.munmap(cqRing);
        }
        Libc.close(fd);
        arena.close();
    }
}
