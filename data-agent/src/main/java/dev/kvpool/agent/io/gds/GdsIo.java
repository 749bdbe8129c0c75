package dev.kvpool.agent.io.gds;

import dev.kvpool.agent.io.uring.Libc;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.logging.Logger;

/**
 * {@link GpuFileIo} through cuFile: the GPU allocation registered once ({@code cuFileBufRegister} of the whole GPU
 * tier), each slot file opened with O_DIRECT and registered once ({@code cuFileHandleRegister}); many ops go as one
 * {@code cuFileBatchIOSubmit} of up to {@code maxBatch} (128 by default, cuFile's own default and the size past
 * which nvidia-fs was seen to hang), single ops as {@code cuFileRead}/{@code cuFileWrite}. Where the batch API
 * fails (it is refused in some compat-mode set-ups) the ops go one by one from then on, logged once. With
 * nvidia-fs the bytes go NVMe ↔ GPU by DMA; without it cuFile runs its compat mode (POSIX I/O through its own
 * pinned buffers), which {@link #mode} reports.
 */
public final class GdsIo implements GpuFileIo {
    private static final Logger LOG = Logger.getLogger(GdsIo.class.getName());
    /** How long a batch may make no progress before its ops are failed (a hung device must not hang a load). */
    static final long STALL_NANOS = 30_000_000_000L;

    private final CuFile cu;
    private final GpuMemory gpu;
    private final int maxBatch;
    private final String mode;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment params, events;
    private MemorySegment batch; // guarded by this
    /**
     * Cookie of the next submission's first op (guarded by this): every op of the handle's life gets its own, so an
     * event left over from an earlier submission can never be taken for one of the current.
     */
    private long nextCookie = 1;
    private volatile boolean batchBroken;
    private volatile boolean closed;

    /**
     * Registers the GPU allocation with cuFile (the driver must be open).
     *
     * @param compat whether cuFile runs in compat mode here (nvidia-fs absent), for {@link #mode}
     * @throws CuFile.CuFileException when cuFileBufRegister refuses
     */
    public GdsIo(CuFile cu, GpuMemory gpu, int maxBatch, boolean compat) {
        this.cu = cu;
        this.gpu = gpu;
        this.maxBatch = Math.max(1, maxBatch);
        this.mode = compat ? "compat" : "gds";
        gpu.bind();
        cu.bufRegister(gpu.address(), gpu.bytes());
        this.params = arena.allocate(CuFile.IO_PARAMS.byteSize() * this.maxBatch, 8);
        this.events = arena.allocate(CuFile.IO_EVENTS.byteSize() * this.maxBatch, 8);
    }

    @Override
    public String mode() {
        return mode;
    }

    @Override
    public GpuMemory gpu() {
        return gpu;
    }

    record CuFileFile(Path path, int fd, MemorySegment handle, CuFile cu) implements File {
        @Override
        public void close() {
            cu.handleDeregister(handle);
            Libc.close(fd);
        }
    }

    /** Opens the slot file with O_DIRECT and registers it; a refusal (e.g. CU_FILE_HANDLE_NOT_REGISTERED) throws. */
    @Override
    public File open(Path slotFile) throws IOException {
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

    @Override
    public long[] transfer(boolean toGpu, File file, long[] fileOffsets, long[] gpuOffsets, int len) {
        long[] res = new long[fileOffsets.length];
        String bad = GpuFileIo.check(gpu, fileOffsets, gpuOffsets, len);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        if (closed) {
            Arrays.fill(res, -EIO);
            return res;
        }
        CuFileFile f = (CuFileFile) file;
        gpu.bind();
        boolean write = !toGpu;
        if (fileOffsets.length > 1 && !batchBroken) {
            try {
                batched(write, f, fileOffsets, gpuOffsets, len, res);
                return res;
            } catch (CuFile.CuFileException e) {
                batchBroken = true;
                LOG.warning("cuFile batch I/O failed (" + e.getMessage() + "): ops go one by one from now on");
                synchronized (this) {
                    destroyBatch();
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

    /** The ops in submissions of up to {@link #maxBatch}, each waited for in full before the next. */
    private synchronized void batched(boolean write, CuFileFile f, long[] fileOffsets, long[] gpuOffsets, int len,
                                      long[] res) {
        if (batch == null) {
            batch = cu.batchSetUp(maxBatch);
        }
        for (int from = 0; from < res.length; from += maxBatch) {
            int n = Math.min(maxBatch, res.length - from);
            long first = nextCookie;
            nextCookie += n;
            for (int j = 0; j < n; j++) {
                CuFile.param(params, j, write, f.handle(), gpu.address(), fileOffsets[from + j], gpuOffsets[from + j],
                        len, first + j);
            }
            cu.batchSubmit(batch, n, params);
            boolean[] done = new boolean[n];
            int left = n;
            long lastProgress = System.nanoTime();
            while (left > 0) {
                int got = cu.batchStatus(batch, left, n, events, 1_000_000_000L);
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
                    lastProgress = System.nanoTime();
                }
                if (left > 0 && System.nanoTime() - lastProgress > STALL_NANOS) {
                    // the batch handle is in an unknown state: give it up, fail what did not complete
                    destroyBatch();
                    for (int j = 0; j < n; j++) {
                        if (!done[j]) {
                            res[from + j] = -ETIMEDOUT;
                        }
                    }
                    for (int k = from + n; k < res.length; k++) {
                        res[k] = -ETIMEDOUT;
                    }
                    LOG.warning("cuFile batch of " + n + " ops made no progress for 30 s: " + left + " failed");
                    return;
                }
            }
        }
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

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        destroyBatch();
        gpu.bind();
        CuFile.Status s = cu.bufDeregister(gpu.address());
        if (!s.ok()) {
            LOG.fine("cuFileBufDeregister: " + s);
        }
        arena.close();
    }
}
