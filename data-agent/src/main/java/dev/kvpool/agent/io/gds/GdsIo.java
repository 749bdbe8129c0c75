package dev.kvpool.agent.io.gds;

import dev.kvpool.agent.io.uring.Libc;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;

/**
 * {@link GpuFileIo} through cuFile: the GPU allocation registered once ({@code cuFileBufRegister} of the whole GPU
 * tier), each slot file opened with O_DIRECT and registered once ({@code cuFileHandleRegister}); many ops go as
 * {@code cuFileBatchIOSubmit}s of up to {@code maxBatch} ops (128 by default, cuFile's own default and the size past
 * which nvidia-fs was seen to hang) and {@code maxBatchBytes} bytes (cuFile 1.15 limits a batch by its compat bounce
 * buffers), single ops as {@code cuFileRead}/{@code cuFileWrite}. Where the batch API fails (it is refused in some
 * compat-mode set-ups) the ops go one by one from then on, logged once. With nvidia-fs the bytes go NVMe ↔ GPU by
 * DMA; without it cuFile runs its compat mode (POSIX I/O through its own pinned buffers), which {@link #mode}
 * reports.
 *
 * <p>No wait on cuFile is unbounded. A batch is polled ({@code cuFileBatchIOGetStatus} with min_nr 0, so cuFile's own
 * timeout semantics do not matter) until a deadline ({@code timeoutNanos}); a batch not complete by then is
 * cancelled and destroyed, and its unfinished ops (and the call's later ones) fail with -ETIMEDOUT: misses for the
 * caller, and a fallback to the bounce path in {@link AutoGpuFileIo}. The cuFile calls themselves run on a thread of
 * this instance's, which the caller waits for with a deadline too: a call that never returns from cuFile leaves
 * this instance wedged (every later transfer fails at once, nothing of cuFile's is touched again, its memory is
 * left allocated since cuFile may still write it), never the caller hung.
 */
public final class GdsIo implements GpuFileIo {
    private static final Logger LOG = Logger.getLogger(GdsIo.class.getName());

    static final long POLL_NANOS = 1_000_000L;

    private final CuFileApi cu;
    private final GpuMemory gpu;
    private final int maxBatch;
    private final long maxBatchBytes, timeoutNanos;
    private final String mode;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment params, events;
    private final ExecutorService worker;
    /** Guards the batch handle, params and events; a lock with a timed try, so close() never waits on a stuck call. */
    private final ReentrantLock lock = new ReentrantLock();
    private MemorySegment batch; // guarded by lock
    /**
     * Cookie of the next submission's first op (guarded by lock): every op of the handle's life gets its own, so an
     * event left over from an earlier submission can never be taken for one of the current.
     */
    private long nextCookie = 1;
    private volatile boolean batchBroken;
    private volatile boolean closed;
    private volatile String wedged; // why cuFile is not called any more, or null

    /**
     * Registers the GPU allocation with cuFile (the driver must be open), with the default deadline and batch bytes.
     *
     * @param compat whether cuFile runs in compat mode here (nvidia-fs absent), for {@link #mode}
     * @throws CuFile.CuFileException when cuFileBufRegister refuses
     */
    public GdsIo(CuFile cu, GpuMemory gpu, int maxBatch, boolean compat) {
        this(cu, gpu, maxBatch, compat, Gds.DEFAULT_TIMEOUT_MS * 1_000_000L, Gds.DEFAULT_MAX_BATCH_BYTES);
    }

    /**
     * @param timeoutNanos  how long one submission (or one single op) may take before it is cancelled and failed
     * @param maxBatchBytes bytes per submission at most (at least one op goes per submission)
     */
    GdsIo(CuFileApi cu, GpuMemory gpu, int maxBatch, boolean compat, long timeoutNanos, long maxBatchBytes) {
        this.cu = cu;
        this.gpu = gpu;
        this.maxBatch = Math.max(1, maxBatch);
        this.maxBatchBytes = Math.max(1, maxBatchBytes);
        this.timeoutNanos = Math.max(1, timeoutNanos);
        this.mode = compat ? "compat" : "gds";
        gpu.bind();
        cu.bufRegister(gpu.address(), gpu.bytes());
        this.params = arena.allocate(CuFile.IO_PARAMS.byteSize() * this.maxBatch, 8);
        this.events = arena.allocate(CuFile.IO_EVENTS.byteSize() * this.maxBatch, 8);
        this.worker = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "kvpool-cufile-" + gpu.id());
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public String mode() {
        return mode;
    }

    @Override
    public GpuMemory gpu() {
        return gpu;
    }

    record CuFileFile(Path path, int fd, MemorySegment handle, CuFileApi cu) implements File {
        @Override
        public void close() {
            cu.handleDeregister(handle);
            Libc.close(fd);
        }
    }

    /** Opens the slot file with O_DIRECT and registers it; a refusal (e.g. CU_FILE_HANDLE_NOT_REGISTERED) throws. */
    @Override
    public File open(Path slotFile) throws IOException {
        if (wedged != null) {
            throw new IOException(slotFile + ": cuFile not used any more: " + wedged);
        }
        int fd = Libc.open(slotFile.toString(), Libc.O_RDWR | Libc.O_DIRECT | Libc.O_CLOEXEC, 0);
        if (fd < 0) {
            throw new IOException("open(" + slotFile + ", O_DIRECT) failed: errno " + (-fd));
        }
        try {
            gpu.bind();
            return new CuFileFile(slotFile, fd, cu.handleRegister(fd), cu);
        } catch (CuFile.CuFileException e) {
            Libc.close(fd);
            throw new IOException(slotFile + ": " + e.getMessage(), e);
        }
    }

    /** Ops per submission: maxBatch, fewer where they would pass maxBatchBytes, at least one. */
    int perSubmission(int len) {
        return (int) Math.max(1, Math.min(maxBatch, maxBatchBytes / len));
    }

    @Override
    public long[] transfer(boolean toGpu, File file, long[] fileOffsets, long[] gpuOffsets, int len) {
        String bad = GpuFileIo.check(gpu, fileOffsets, gpuOffsets, len);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        long[] res = new long[fileOffsets.length];
        if (closed || wedged != null) {
            Arrays.fill(res, closed ? -EIO : -ETIMEDOUT);
            return res;
        }
        CuFileFile f = (CuFileFile) file;
        int per = perSubmission(len);
        int waits = fileOffsets.length > 1 && !batchBroken ? (res.length + per - 1) / per : res.length;
        // the worker's own deadlines end each submission; this one only catches a cuFile call that never returns
        long limit = timeoutNanos * (waits + 1L);
        Future<long[]> done;
        try {
            done = worker.submit(() -> run(!toGpu, f, fileOffsets, gpuOffsets, len));
        } catch (java.util.concurrent.RejectedExecutionException e) { // closed meanwhile
            Arrays.fill(res, -EIO);
            return res;
        }
        long end = System.nanoTime() + limit;
        boolean interrupted = false;
        try {
            while (true) {
                try { // an interrupt does not end the wait: the ops still in flight would write after we return
                    return done.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
                } catch (TimeoutException e) {
                    wedged = "a cuFile call did not return within " + (limit / 1_000_000) + " ms";
                    LOG.severe("cuFile on " + gpu.id() + ": " + wedged + " (" + res.length + " ops of " + len
                            + " bytes, " + (toGpu ? "file → GPU" : "GPU → file") + "): all failed, cuFile not used"
                            + " again by this path");
                    Arrays.fill(res, -ETIMEDOUT);
                    return res;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** On the worker: the ops as batches (or one by one), each batch bounded by the deadline. */
    private long[] run(boolean write, CuFileFile f, long[] fileOffsets, long[] gpuOffsets, int len) {
        long[] res = new long[fileOffsets.length];
        gpu.bind();
        if (fileOffsets.length > 1 && !batchBroken) {
            try {
                batched(write, f, fileOffsets, gpuOffsets, len, res);
                return res;
            } catch (CuFile.CuFileException e) {
                batchBroken = true;
                LOG.warning("cuFile batch I/O failed (" + e.getMessage() + "): ops go one by one from now on");
                lock.lock();
                try { // ops of the failed batch may be in flight: cancel them before the handle goes
                    if (batch != null) {
                        try {
                            cu.batchCancel(batch);
                        } catch (RuntimeException c) {
                            LOG.fine("cuFileBatchIOCancel: " + c);
                        }
                    }
                    destroyBatch();
                } finally {
                    lock.unlock();
                }
            }
        }
        int[] errno = new int[1];
        for (int i = 0; i < res.length; i++) {
            long r = cu.io(write, f.handle(), gpu.address(), len, fileOffsets[i], gpuOffsets[i], errno);
            res[i] = r == -1 ? -Math.max(1, errno[0]) : r;
        }
        return res;
    }

    /** The ops in submissions of up to {@link #perSubmission}, each waited for in full (or its deadline) first. */
    private void batched(boolean write, CuFileFile f, long[] fileOffsets, long[] gpuOffsets, int len, long[] res) {
        lock.lock();
        try {
            submissions(write, f, fileOffsets, gpuOffsets, len, res);
        } finally {
            lock.unlock();
        }
    }

    private void submissions(boolean write, CuFileFile f, long[] fileOffsets, long[] gpuOffsets, int len,
                             long[] res) {
        if (batch == null) {
            batch = cu.batchSetUp(maxBatch);
        }
        int per = perSubmission(len);
        for (int from = 0; from < res.length; from += per) {
            int n = Math.min(per, res.length - from);
            long first = nextCookie;
            nextCookie += n;
            for (int j = 0; j < n; j++) {
                CuFile.param(params, j, write, f.handle(), gpu.address(), fileOffsets[from + j], gpuOffsets[from + j],
                        len, first + j);
            }
            cu.batchSubmit(batch, n, params);
            boolean[] done = new boolean[n];
            int left = n;
            long t0 = System.nanoTime(), deadline = t0 + timeoutNanos, pause = 20_000;
            while (left > 0) {
                // min_nr 0: cuFile has nothing to wait for, so whether it honours its timeout argument does not
                // matter; the 1 ms (not 0) is in case a zero timespec were read as "no timeout"
                int got = cu.batchStatus(batch, 0, n, events, POLL_NANOS);
                int before = left;
                for (int e = 0; e < got; e++) {
                    long j0 = CuFile.eventCookie(events, e) - first;
                    int st = CuFile.eventStatus(events, e);
                    if (j0 < 0 || j0 >= n || done[(int) j0]
                            || (st & (CuFile.STATUS_WAITING | CuFile.STATUS_PENDING)) != 0) {
                        continue; // not one of this submission's, already counted, or not finished
                    }
                    int j = (int) j0;
                    long r = CuFile.eventRet(events, e);
                    res[from + j] = st == CuFile.STATUS_COMPLETE ? r : (r < 0 ? r : -EIO);
                    done[j] = true;
                    left--;
                }
                if (left == 0) {
                    break;
                }
                if (System.nanoTime() - deadline > 0) {
                    expire(n, left, len, t0, done, from, res);
                    return;
                }
                if (left < before) {
                    pause = 20_000;
                } else {
                    LockSupport.parkNanos(pause);
                    pause = Math.min(1_000_000, pause * 2);
                }
            }
        }
    }

    /**
     * A submission past its deadline: cancelled and its handle destroyed (a fresh one serves the next call), its
     * unfinished ops and the call's later ones failed with -ETIMEDOUT.
     */
    private void expire(int n, int left, int len, long t0, boolean[] done, int from, long[] res) {
        CuFile.Status c;
        try {
            c = cu.batchCancel(batch);
        } catch (RuntimeException e) {
            c = null;
        }
        destroyBatch();
        for (int j = 0; j < n; j++) {
            if (!done[j]) {
                res[from + j] = -ETIMEDOUT;
            }
        }
        for (int k = from + n; k < res.length; k++) {
            res[k] = -ETIMEDOUT;
        }
        LOG.warning("cuFile on " + gpu.id() + ": a batch of " + n + " ops of " + len + " bytes had " + left
                + " unfinished after " + (System.nanoTime() - t0) / 1_000_000 + " ms: cancelled ("
                + (c == null ? "cuFileBatchIOCancel threw" : c) + "), " + (res.length - from - n + left)
                + " ops failed");
    }

    private void destroyBatch() {
        if (batch != null) {
            try {
                cu.batchDestroy(batch);
            } catch (RuntimeException e) {
                LOG.fine("cuFileBatchIODestroy: " + e);
            }
            batch = null;
        }
    }

    /** Whether batches are still used (false after the batch API failed once). */
    public boolean batching() {
        return !batchBroken;
    }

    /** Why cuFile is not called any more (a call that did not return in time), or null. */
    public String wedged() {
        return wedged;
    }

    @Override
    public void close() {
        if (wedged != null) { // a worker may be inside cuFile, holding this monitor and this memory: touch neither
            closed = true;
            worker.shutdown();
            return;
        }
        boolean locked = false;
        try { // a batch in flight ends by its deadline; a lock held longer means a call that does not return
            locked = lock.tryLock(2 * timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!locked) {
            wedged = "close found a cuFile batch still running past its deadline";
            LOG.severe("cuFile on " + gpu.id() + ": " + wedged + "; its resources are left as they are");
            closed = true;
            worker.shutdown();
            return;
        }
        try {
            if (closed) {
                return;
            }
            closed = true;
            worker.shutdown();
            destroyBatch();
            gpu.bind();
            CuFile.Status s = cu.bufDeregister(gpu.address());
            if (!s.ok()) {
                LOG.fine("cuFileBufDeregister: " + s);
            }
            arena.close();
        } finally {
            lock.unlock();
        }
    }
}
