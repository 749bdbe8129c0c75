package dev.kvpool.agent.io.gds;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The GPU ↔ NVMe path the agent uses: cuFile ({@link GdsIo}) while it works, the bounce path ({@link BounceIo})
 * otherwise. In mode {@code auto} a refused file registration, or a FIRST transfer that fails or moves a wrong
 * length, switches to the bounce path for good (logged once, counted in {@link #fallbacks}), and that transfer is
 * redone through it, so the caller never sees the failure. Once a cuFile transfer went through in full, later
 * failures are the ops' own (misses for the caller), as on any device, except a transfer that ran past cuFile's
 * deadline ({@link GdsIo}: -ETIMEDOUT): its ops are misses and the path falls back for good. In mode {@code on}
 * nothing falls back.
 */
public final class AutoGpuFileIo implements GpuFileIo {
    private static final Logger LOG = Logger.getLogger(AutoGpuFileIo.class.getName());

    private final GpuMemory gpu;
    private final boolean mayFallBack;
    private final Supplier<GpuFileIo> bounceFactory;
    private final String version;
    private volatile GpuFileIo active;
    private volatile GpuFileIo gds; // null once fallen back
    private volatile GpuFileIo bounce;
    private volatile boolean verified;
    private volatile String reason;
    private final AtomicLong fallbacks = new AtomicLong(), gdsRead = new AtomicLong(), gdsWritten = new AtomicLong();

    /**
     * @param gds           the cuFile path, or null where it is not to be used ({@code reason} says why)
     * @param bounceFactory the bounce path, made when first needed
     * @param mayFallBack   false in mode {@code on}
     * @param version       cuFile's version (cuFileGetVersion), or null
     */
    public AutoGpuFileIo(GpuMemory gpu, GpuFileIo gds, Supplier<GpuFileIo> bounceFactory, boolean mayFallBack,
                         String reason, String version) {
        this.gpu = gpu;
        this.gds = gds;
        this.bounceFactory = bounceFactory;
        this.mayFallBack = mayFallBack;
        this.reason = reason;
        this.version = version;
        this.active = gds != null ? gds : bounce();
    }

    private synchronized GpuFileIo bounce() {
        if (bounce == null) {
            bounce = bounceFactory.get();
        }
        return bounce;
    }

    @Override
    public String mode() {
        return active.mode();
    }

    /** Why this mode: the reason GDS is not used, or what it runs as. */
    public String reason() {
        return reason;
    }

    public String version() {
        return version;
    }

    /** Whether a transfer went through the active path in full already (cuFile's first-I/O check passed). */
    public boolean verified() {
        return verified;
    }

    public long fallbacks() {
        return fallbacks.get();
    }

    /** Bytes moved through cuFile, GPU-bound (read from NVMe) and NVMe-bound. */
    public long gdsBytes(boolean toGpu) {
        return toGpu ? gdsRead.get() : gdsWritten.get();
    }

    @Override
    public GpuMemory gpu() {
        return gpu;
    }

    /** A file opened lazily per path, so a fallback reopens it through the bounce path. */
    final class AutoFile implements File {
        final Path path;
        final Map<GpuFileIo, File> inner = new ConcurrentHashMap<>();

        AutoFile(Path path) {
            this.path = path;
        }

        File in(GpuFileIo io) throws IOException {
            File f = inner.get(io);
            if (f == null) {
                synchronized (this) {
                    f = inner.get(io);
                    if (f == null) {
                        f = io.open(path);
                        inner.put(io, f);
                    }
                }
            }
            return f;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public void close() {
            inner.values().forEach(File::close);
            inner.clear();
        }
    }

    @Override
    public File open(Path slotFile) throws IOException {
        AutoFile f = new AutoFile(slotFile);
        GpuFileIo g = gds;
        if (g != null && active == g) {
            try {
                f.in(g); // registered now, so a refusal shows at start-up, not at the first load
            } catch (IOException | RuntimeException e) {
                if (!mayFallBack) {
                    throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
                }
                fallBack("cuFileHandleRegister refused " + slotFile + ": " + e.getMessage());
            }
        }
        if (active != gds) {
            f.in(active);
        }
        return f;
    }

    @Override
    public long[] transfer(boolean toGpu, File file, long[] fileOffsets, long[] gpuOffsets, int len) {
        AutoFile f = (AutoFile) file;
        GpuFileIo io = active;
        if (io == gds && mayFallBack && !verified) {
            synchronized (this) { // the first cuFile transfer decides; others wait for its verdict
                if (active == gds && !verified) {
                    String failed = null;
                    long[] res = null;
                    try {
                        res = gds.transfer(toGpu, f.in(gds), fileOffsets, gpuOffsets, len);
                        for (int i = 0; i < res.length && failed == null; i++) {
                            if (res[i] != len) {
                                failed = "op " + i + " of " + res.length + " moved " + GpuFileIo.describe(res[i])
                                        + " of " + len;
                            }
                        }
                    } catch (IOException | RuntimeException e) {
                        failed = e.getMessage();
                    }
                    if (failed == null) {
                        verified = true;
                        count(toGpu, res, len);
                        return res;
                    }
                    fallBack("the first cuFile " + (toGpu ? "read" : "write") + " failed: " + failed);
                }
            }
            io = active;
        }
        try {
            long[] res = io.transfer(toGpu, f.in(io), fileOffsets, gpuOffsets, len);
            if (io == gds) {
                count(toGpu, res, len);
                if (mayFallBack && timedOut(res)) { // these ops stay misses; later transfers go the bounce path
                    fallBack("a cuFile " + (toGpu ? "read" : "write") + " of " + res.length
                            + " ops did not complete within its deadline");
                }
            }
            if (io != gds) {
                verified |= allOk(res, len);
            }
            return res;
        } catch (IOException e) { // the file cannot be opened on this path: every op failed
            LOG.warning(io.mode() + ": " + e.getMessage());
            long[] res = new long[fileOffsets.length];
            java.util.Arrays.fill(res, -EIO);
            return res;
        }
    }

    private static boolean timedOut(long[] res) {
        for (long r : res) {
            if (r == -ETIMEDOUT) {
                return true;
            }
        }
        return false;
    }

    private static boolean allOk(long[] res, int len) {
        for (long r : res) {
            if (r != len) {
                return false;
            }
        }
        return true;
    }

    private void count(boolean toGpu, long[] res, int len) {
        long b = 0;
        for (long r : res) {
            b += r > 0 ? r : 0;
        }
        (toGpu ? gdsRead : gdsWritten).addAndGet(b);
    }

    private synchronized void fallBack(String why) {
        if (gds == null) {
            return;
        }
        fallbacks.incrementAndGet();
        reason = why + "; using the bounce path (O_DIRECT into pinned host memory + copy)";
        LOG.warning("GPUDirect Storage on " + gpu.id() + ": " + reason);
        GpuFileIo g = gds;
        active = bounce();
        gds = null;
        verified = false;
        try {
            g.close();
        } catch (RuntimeException e) {
            LOG.fine("closing the cuFile path: " + e);
        }
    }

    @Override
    public synchronized void close() {
        if (gds != null) {
            gds.close();
        }
        if (bounce != null) {
            bounce.close();
        }
    }
}
