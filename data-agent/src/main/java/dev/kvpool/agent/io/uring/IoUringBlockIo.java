package dev.kvpool.agent.io.uring;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Logger;

/**
 * {@link BlockIo} on our FFM io_uring: one ring per instance, a whole batch prepared into the SQ and handed to the
 * kernel with one {@code io_uring_enter} per refill, up to {@code queueDepth} in flight; ops whose buffer lies in
 * a registered region use READ_FIXED/WRITE_FIXED (no per-I/O page pinning). Files are opened with O_DIRECT and
 * preallocated with posix_fallocate, so no filesystem metadata changes on the hot path. Calls are serialized per
 * instance (the device worker is the only caller in the agent).
 */
public final class IoUringBlockIo implements BlockIo {
    private static final Logger LOG = Logger.getLogger(IoUringBlockIo.class.getName());
    private final IoUring ring;
    private final int queueDepth;
    private List<MemorySegment> fixed = List.of();
    private long fixedOps, plainOps;
    private int pipelined; // pipeline ops in flight on the ring (execute must not reap their completions)

    public IoUringBlockIo(int queueDepth) {
        this.queueDepth = Math.max(1, queueDepth);
        this.ring = IoUring.create(Integer.highestOneBit(Math.max(2, this.queueDepth * 2 - 1)));
    }

    @Override
    public String name() {
        return "io_uring(qd=" + queueDepth + (fixed.isEmpty() ? "" : ", " + fixed.size() + " fixed buffers") + ")";
    }

    @Override
    public BlockFile open(Path path, long size) throws IOException {
        Files.createDirectories(path.toAbsolutePath().getParent());
        int fd = Libc.open(path.toString(), Libc.O_RDWR | Libc.O_CREAT | Libc.O_DIRECT | Libc.O_CLOEXEC, 0644);
        if (fd < 0) {
            throw new IOException("open(" + path + ", O_DIRECT) failed: errno " + (-fd));
        }
        long cur = Files.size(path);
        if (cur < size) {
            int e = Libc.fallocate(fd, 0, size);
            if (e != 0) {
                Libc.close(fd);
                throw new IOException("posix_fallocate(" + path + ", " + size + ") failed: errno " + e);
            }
        }
        return new BlockFile(path, fd, null, Math.max(cur, size), () -> Libc.close(fd));
    }

    @Override
    public synchronized void registerBuffers(List<MemorySegment> buffers) {
        try {
            ring.registerBuffers(buffers);
            fixed = List.copyOf(buffers);
        } catch (IllegalStateException e) {
            LOG.warning("io_uring fixed buffers not registered, using plain READ/WRITE: " + e.getMessage());
            fixed = List.of();
        }
    }

    private int fixedIndex(MemorySegment buf) {
        long a = buf.address(), e = a + buf.byteSize();
        for (int i = 0; i < fixed.size(); i++) {
            MemorySegment f = fixed.get(i);
            if (a >= f.address() && e <= f.address() + f.byteSize()) {
                return i;
            }
        }
        return -1;
    }

    private byte opcode(Op op, int bufIdx) {
        if (bufIdx >= 0) {
            fixedOps++;
            return op.write() ? IoUring.OP_WRITE_FIXED : IoUring.OP_READ_FIXED;
        }
        plainOps++;
        return op.write() ? IoUring.OP_WRITE : IoUring.OP_READ;
    }

    @Override
    public synchronized int[] execute(BlockFile file, List<Op> ops) {
        if (pipelined > 0) {
            throw new IllegalStateException("execute while " + pipelined + " pipelined ops are in flight on this ring");
        }
        int n = ops.size();
        int[] res = new int[n];
        int[] bufIdx = new int[n];
        for (int i = 0; i < n; i++) {
            BlockIo.checkAligned(ops.get(i));
            bufIdx[i] = fixedIndex(ops.get(i).buf());
        }
        int next = 0, inflight = 0;
        while (next < n || inflight > 0) {
            while (next < n && inflight < queueDepth) {
                if (ring.sqSpace() <= 0) {
                    break;
                }
                Op op = ops.get(next);
                ring.prep(opcode(op, bufIdx[next]), file.fd(), op.offset(), op.buf().address(),
                        (int) op.buf().byteSize(), bufIdx[next], next);
                next++;
                inflight++;
            }
            ring.submit(1);
            inflight -= ring.reap((ud, r) -> res[(int) ud] = r);
        }
        return res;
    }

    /**
     * The ring kept full across batches: ops go into the SQ as they are offered and the next ones enter while
     * earlier ones complete, so a sequential stream sees the queue depth in flight without the drain to zero that
     * ends every {@link #execute} batch. Shares this instance's ring; {@link #execute} is refused while pipelined
     * ops are in flight.
     */
    @Override
    public Pipeline pipeline(BlockFile file) {
        return new Pipeline() {
            private int inFlight;

            @Override
            public int depth() {
                return queueDepth;
            }

            @Override
            public int inFlight() {
                return inFlight;
            }

            @Override
            public boolean offer(Op op, long tag) {
                synchronized (IoUringBlockIo.this) {
                    if (inFlight >= queueDepth || ring.sqSpace() <= 0) {
                        return false;
                    }
                    BlockIo.checkAligned(op);
                    int idx = fixedIndex(op.buf());
                    ring.prep(opcode(op, idx), file.fd(), op.offset(), op.buf().address(), (int) op.buf().byteSize(),
                            idx, tag);
                    inFlight++;
                    pipelined++;
                    return true;
                }
            }

            @Override
            public int poll(boolean wait, Completion c) {
                synchronized (IoUringBlockIo.this) {
                    if (ring.pendingSubmit() > 0 || (wait && inFlight > 0 && !ring.completionReady())) {
                        ring.submit(wait && inFlight > 0 ? 1 : 0);
                    }
                    int n = ring.reap(c::complete);
                    inFlight -= n;
                    pipelined -= n;
                    return n;
                }
            }
        };
    }

    /** Ops that went through registered buffers vs plain ones, since start. */
    public synchronized long[] opCounts() {
        return new long[] {fixedOps, plainOps};
    }

    @Override
    public synchronized void close() {
        ring.close();
    }

    /** Opens io_uring if it works here, else FileChannel+O_DIRECT; logs which and why. */
    public static BlockIo bestAvailable(int queueDepth, boolean allowUring) {
        if (allowUring) {
            String why = IoUring.unavailableReason();
            if (why == null) {
                return new IoUringBlockIo(queueDepth);
            }
            LOG.warning("io_uring unavailable (" + why + "); using FileChannel + O_DIRECT");
        }
        return new dev.kvpool.agent.io.FileChannelBlockIo(queueDepth);
    }
}
