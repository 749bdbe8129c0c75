package dev.kvpool.bench.agent;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import dev.kvpool.agent.io.gds.BounceIo;
import dev.kvpool.agent.io.gds.CuFile;
import dev.kvpool.agent.io.gds.Gds;
import dev.kvpool.agent.io.gds.GdsIo;
import dev.kvpool.agent.io.gds.GpuFileIo;
import dev.kvpool.agent.io.gds.GpuMemory;
import dev.kvpool.agent.tier.GpuDevice;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * NVMe ↔ GPU through cuFile ({@link GdsIo}: GPUDirect Storage, or cuFile's compat mode where nvidia-fs is absent)
 * against the agent's bounce path ({@link BounceIo}: io_uring O_DIRECT into pinned host memory + a copy), in one
 * run: a slot file of {@code --file-mib} read whole into one GPU allocation (file → GPU) and written back (GPU →
 * file), per block size, the page cache dropped before every timed pass where we are root, A/B alternated, median
 * of {@code --rounds}. The limit it is held against is measured in the same run: min(the disk's own O_DIRECT read
 * (write) rate through io_uring into host memory, the pinned host → GPU copy rate). The bytes of every pass are
 * checked (a sample of blocks read back from the GPU against the file); a mismatch exits non-zero. Needs a CUDA
 * device; elsewhere it says so and exits 0.
 */
public final class GdsBench {
    private GdsBench() {
    }

    public static void run(Map<String, String> opt) throws Exception {
        boolean dry = Boolean.parseBoolean(opt.getOrDefault("dry-run", "false"));
        if (!dry && GpuDevice.deviceCount() == 0) {
            System.out.println("gds: no CUDA device here (JCuda natives, driver or GPU missing): nothing measured"
                    + " (--dry-run: host memory stands in for the GPU and a second bounce path for cuFile)");
            return;
        }
        long fileBytes = Long.parseLong(opt.getOrDefault("file-mib", "1024")) << 20;
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "5"));
        int maxBatch = Integer.parseInt(opt.getOrDefault("batch", String.valueOf(Gds.DEFAULT_MAX_BATCH)));
        int qd = Integer.parseInt(opt.getOrDefault("qd", "16"));
        Path dir = Files.createDirectories(Path.of(opt.getOrDefault("dir", "/var/tmp/kvpool-gds")));
        Path file = dir.resolve("gds-bench.dat");
        if (opt.containsKey("batch-mib")) { // read when the driver opens: bytes per cuFile submission
            System.setProperty(Gds.BATCH_BYTES_PROPERTY, Long.toString(Long.parseLong(opt.get("batch-mib")) << 20));
        }
        Stages stages = new Stages(Long.parseLong(opt.getOrDefault("pass-timeout-s", "60")));
        stages.cleanUp = file;
        Gds.Driver driver = null;
        String why = null;
        if (dry) {
            driver = dryDriver(qd);
        } else {
            try {
                driver = stages.run("cuFile driver open", () -> Gds.system(CuFile.configuredLibrary()).driver());
            } catch (IOException e) {
                why = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
            }
        }
        // --drop-caches false: leave the page cache alone (a shared machine); O_DIRECT passes skip it anyway
        boolean root = "root".equals(System.getProperty("user.name"))
                && Boolean.parseBoolean(opt.getOrDefault("drop-caches", "true"));
        System.out.printf(Locale.ROOT, "gds: file %s (%d MiB), %s, batch %d ops / %d MiB, io_uring qd %d, page cache %s,"
                        + " %d s per stage at most%n", file,
                fileBytes >> 20, driver == null ? "cuFile unavailable: " + why
                        : "cuFile " + driver.version() + (driver.compat() ? " in compat mode (no nvidia-fs)" : " with nvidia-fs"),
                maxBatch, Long.getLong(Gds.BATCH_BYTES_PROPERTY, Gds.DEFAULT_MAX_BATCH_BYTES) >> 20, qd,
                root ? "dropped before each pass" : "NOT dropped (not root, or --drop-caches false)", stages.timeoutS);
        if (driver != null && !driver.limits().isEmpty()) {
            System.out.println("gds: cuFile limits: " + driver.limits());
        }
        List<String> rows = new ArrayList<>();
        boolean ok = true;
        try (Arena arena = Arena.ofShared()) {
            for (String b : opt.getOrDefault("blocks", "256K,2M").split(",")) {
                int bs = b.endsWith("M") ? Integer.parseInt(b.substring(0, b.length() - 1)) << 20
                        : Integer.parseInt(b.substring(0, b.length() - 1)) << 10;
                ok &= one(stages, arena, driver, file, fileBytes, bs, rounds, maxBatch, qd, root, rows, dry);
            }
        } finally {
            Files.deleteIfExists(file);
        }
        System.out.println();
        System.out.printf(Locale.ROOT, "GDS bench: median of %d rounds, A/B alternated; limit = min(disk O_DIRECT via io_uring,"
                + " pinned H2D (D2H) copy)%n", rounds);
        System.out.println("| block | direction | cuFile GB/s | bounce GB/s | cuFile / bounce | disk GB/s | copy GB/s | limit GB/s | cuFile / limit | bounce / limit | bytes checked |");
        System.out.println("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|");
        rows.forEach(System.out::println);
        if (!ok) {
            System.out.println("gds: BYTE MISMATCH (see above)");
            System.exit(1);
        }
    }

    /**
     * Runs each stage on a thread of its own under a deadline, printing what it is before and its elapsed time
     * after; a stage past the deadline prints its thread's stack and halts the bench (exit 3): a cuFile or CUDA call
     * that does not return cannot be interrupted, and the run must show where it stopped.
     */
    static final class Stages {
        final long timeoutS;
        final ExecutorService ex = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "gds-bench-stage");
            t.setDaemon(true);
            return t;
        });
        volatile Thread runner;
        volatile Path cleanUp; // deleted before a halt (the bench's finally blocks do not run then)

        Stages(long timeoutS) {
            this.timeoutS = Math.max(1, timeoutS);
        }

        <T> T run(String what, Callable<T> c) throws IOException {
            return run(what, c, r -> "");
        }

        /** {@code tail} adds to the stage's line after its elapsed time (a rate, a failure). */
        <T> T run(String what, Callable<T> c, java.util.function.Function<T, String> tail) throws IOException {
            System.out.print("gds: " + what + " ... ");
            System.out.flush();
            long t0 = System.nanoTime();
            Future<T> f = ex.submit(() -> {
                runner = Thread.currentThread();
                return c.call();
            });
            try {
                T r = f.get(timeoutS, TimeUnit.SECONDS);
                System.out.printf(Locale.ROOT, "%.3f s%s%n", (System.nanoTime() - t0) / 1e9, tail.apply(r));
                return r;
            } catch (TimeoutException e) {
                System.out.printf(Locale.ROOT, "TIMED OUT after %d s (--pass-timeout-s); the stage's thread is at:%n",
                        timeoutS);
                Thread t = runner;
                if (t != null) {
                    for (StackTraceElement el : t.getStackTrace()) {
                        System.out.println("    at " + el);
                    }
                }
                System.out.println("gds: bench stopped at \"" + what + "\"");
                try {
                    if (cleanUp != null) {
                        Files.deleteIfExists(cleanUp);
                    }
                } catch (IOException | RuntimeException ignored) {
                    // best effort: the bench file may be held by the stuck call
                }
                System.out.flush();
                System.err.flush();
                Runtime.getRuntime().halt(3);
                throw new IllegalStateException("unreachable");
            } catch (ExecutionException e) {
                System.out.println("failed: " + e.getCause());
                if (e.getCause() instanceof IOException io) {
                    throw io;
                }
                if (e.getCause() instanceof RuntimeException r) {
                    throw r;
                }
                throw new IOException(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted during " + what, e);
            }
        }
    }

    /** The dry run's stand-in for cuFile: a second bounce path, so the bench's own logic runs without a GPU. */
    static Gds.Driver dryDriver(int qd) {
        return new Gds.Driver() {
            public String version() {
                return "dry-run";
            }

            public boolean compat() {
                return true;
            }

            public GpuFileIo open(GpuMemory gpu, int maxBatch) {
                return new BounceIo(gpu, IoUringBlockIo.bestAvailable(qd, true), 64L << 20);
            }
        };
    }

    static boolean one(Stages st, Arena arena, Gds.Driver driver, Path file, long fileBytes, int bs, int rounds,
                       int maxBatch, int qd, boolean root, List<String> rows, boolean dry) throws IOException {
        int n = (int) (fileBytes / bs);
        long bytes = (long) n * bs;
        long[] offs = new long[n];
        for (int i = 0; i < n; i++) {
            offs[i] = (long) i * bs;
        }
        String label = bs >= 1 << 20 ? (bs >> 20) + " MiB" : (bs >> 10) + " KiB";
        String size = n + " x " + label + " = " + (bytes >> 20) + " MiB";
        BlockIo disk = IoUringBlockIo.bestAvailable(qd, true);
        MemorySegment host = arena.allocate(bytes, 4096); // the file's content, and the disk pass's buffer
        MemorySegment check = arena.allocate(bs, 4096);
        boolean good = true;
        try (AutoCloseableDevice dev = dry ? () -> { } : st.run(label + ": GPU allocation of " + (bytes >> 20) + " MiB",
                () -> new GpuDeviceHolder(new GpuDevice("gpu0", 0, n, bs)));
             BlockFile df = disk.open(file, bytes)) {
            GpuMemory mem = dry ? GpuMemory.ofHost("host-as-gpu", arena.allocate(bytes, 4096))
                    : ((GpuDeviceHolder) dev).d.memory();
            st.run(label + ": pin " + (bytes >> 20) + " MiB host, fill, write the bench file (" + size + ")", () -> {
                mem.pin(host);
                Random r = new Random(bs);
                for (long o = 0; o < bytes; o += 8) {
                    host.set(ValueLayout.JAVA_LONG, o, r.nextLong());
                }
                long[] w = diskPass(disk, df, true, host, offs, bs);
                if (!all(w, bs)) {
                    throw new IOException("writing the bench file failed: " + GpuFileIo.describe(firstBad(w, bs)));
                }
                return null;
            });
            GpuFileIo gds = null;
            if (driver != null) {
                try {
                    gds = st.run(label + ": cuFileBufRegister of " + (bytes >> 20) + " MiB",
                            () -> driver.open(mem, maxBatch));
                } catch (RuntimeException e) {
                    System.out.println("gds: cuFileBufRegister failed: " + e.getMessage());
                }
            }
            try (GpuFileIo bounce = new BounceIo(mem, IoUringBlockIo.bestAvailable(qd, true), 64L << 20);
                 GpuFileIo.File bf = bounce.open(file); GpuMemory.Copier copier = mem.copier()) {
                GpuFileIo.File gf = null;
                if (gds != null) {
                    GpuFileIo g = gds;
                    try {
                        gf = st.run(label + ": cuFileHandleRegister", () -> g.open(file));
                    } catch (IOException e) {
                        System.out.println("gds: cuFileHandleRegister failed: " + e.getMessage());
                    }
                }
                for (boolean toGpu : new boolean[] {true, false}) {
                    String dir = toGpu ? "NVMe → GPU" : "GPU → NVMe";
                    List<Double> g = new ArrayList<>(), bo = new ArrayList<>(), dk = new ArrayList<>(),
                            cp = new ArrayList<>();
                    String checked;
                    for (int round = 0; round < rounds + 1; round++) { // round 0 warms up, not counted
                        boolean gdsFirst = round % 2 == 0;
                        String rl = round == 0 ? "warm-up" : "round " + round + "/" + rounds;
                        for (int k = 0; k < 2; k++) {
                            boolean useGds = gdsFirst == (k == 0);
                            GpuFileIo io = useGds ? gds : bounce;
                            GpuFileIo.File f = useGds ? gf : bf;
                            if (io == null || f == null) {
                                continue;
                            }
                            String what = label + " " + dir + " " + rl + " " + (useGds ? "cuFile" : "bounce") + " ("
                                    + size + ")";
                            double[] gbs = new double[1];
                            String bad = st.run(what, () -> {
                                if (!toGpu) { // the GPU holds the file's bytes before a write pass
                                    fillGpu(copier, host, offs, bs);
                                }
                                drop(root);
                                long t0 = System.nanoTime();
                                long[] res = io.transfer(toGpu, f, offs, offs, bs);
                                gbs[0] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                                return toGpu ? checkGpu(copier, host, check, offs, bs, res)
                                        : checkFile(disk, df, host, check, offs, bs, res);
                            }, b -> String.format(Locale.ROOT, ", %.2f GB/s%s", gbs[0], b == null ? "" : ", " + b));
                            if (bad != null) {
                                good = false;
                            }
                            if (round > 0) {
                                (useGds ? g : bo).add(gbs[0]);
                            }
                        }
                        // the limit's parts, in the same rounds
                        double[] dc = new double[2];
                        boolean diskOk = st.run(label + " " + dir + " " + rl + " disk O_DIRECT + pinned copy", () -> {
                            drop(root);
                            long t0 = System.nanoTime();
                            long[] dr = diskPass(disk, df, !toGpu, host, offs, bs);
                            dc[0] = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;
                            t0 = System.nanoTime();
                            long chunk = Math.min(bytes, 256L << 20);
                            if (toGpu) {
                                copier.toGpu(0, host.asSlice(0, chunk));
                            } else {
                                copier.toHost(0, host.asSlice(0, chunk));
                            }
                            copier.sync();
                            dc[1] = chunk / ((System.nanoTime() - t0) / 1e9) / 1e9;
                            return all(dr, bs);
                        }, ok -> String.format(Locale.ROOT, ", disk %.2f GB/s%s, copy %.1f GB/s", dc[0],
                                ok ? "" : " (FAILED)", dc[1]));
                        if (!diskOk) {
                            System.out.println("gds: disk pass failed");
                            good = false;
                        }
                        if (round > 0) {
                            dk.add(dc[0]);
                            cp.add(dc[1]);
                        }
                    }
                    checked = good ? "yes (" + Math.min(n, 16) + " blocks per pass vs the file)" : "MISMATCH";
                    double gm = g.isEmpty() ? Double.NaN : median(g), bm = median(bo), dm = median(dk), cm = median(cp),
                            limit = Math.min(dm, cm);
                    String mode = gds == null || gf == null ? "n/a" : gds.mode();
                    rows.add(String.format(Locale.ROOT, "| %s | %s | %s | %.2f | %s | %.2f | %.1f | %.2f | %s | %.2f | %s |",
                            label, dir,
                            Double.isNaN(gm) ? "n/a" : String.format(Locale.ROOT, "%.2f (%s)", gm, mode), bm,
                            Double.isNaN(gm) ? "-" : String.format(Locale.ROOT, "%.2f", gm / bm), dm, cm, limit,
                            Double.isNaN(gm) ? "-" : String.format(Locale.ROOT, "%.2f", gm / limit), bm / limit, checked));
                }
                if (gf != null) {
                    gf.close();
                }
            } finally {
                if (gds != null) {
                    gds.close();
                }
                mem.unpin(host);
            }
        } finally {
            disk.close();
        }
        return good;
    }

    interface AutoCloseableDevice extends AutoCloseable {
        @Override
        void close();
    }

    record GpuDeviceHolder(GpuDevice d) implements AutoCloseableDevice {
        @Override
        public void close() {
            d.close();
        }
    }

    static double median(List<Double> l) {
        double[] a = l.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (a.length == 0) {
            return Double.NaN;
        }
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    static long[] diskPass(BlockIo disk, BlockFile f, boolean write, MemorySegment host, long[] offs, int bs) {
        List<BlockIo.Op> ops = new ArrayList<>(offs.length);
        for (long o : offs) {
            ops.add(new BlockIo.Op(write, o, host.asSlice(o, bs)));
        }
        int[] r = disk.execute(f, ops);
        long[] out = new long[r.length];
        for (int i = 0; i < r.length; i++) {
            out[i] = r[i];
        }
        return out;
    }

    static boolean all(long[] res, int bs) {
        for (long r : res) {
            if (r != bs) {
                return false;
            }
        }
        return true;
    }

    static void fillGpu(GpuMemory.Copier c, MemorySegment host, long[] offs, int bs) {
        c.toGpu(0, host.asSlice(0, (long) offs.length * bs));
        c.sync();
    }

    /** Sample blocks (first, last, spread) read back from the GPU against the file's bytes (held in host). */
    static String checkGpu(GpuMemory.Copier c, MemorySegment host, MemorySegment buf, long[] offs, int bs, long[] res) {
        if (!all(res, bs)) {
            return "ops failed or short, first " + GpuFileIo.describe(firstBad(res, bs));
        }
        for (int s = 0; s < Math.min(offs.length, 16); s++) {
            int i = (int) ((long) s * (offs.length - 1) / Math.max(1, Math.min(offs.length, 16) - 1));
            buf.fill((byte) 0);
            c.toHost(offs[i], buf);
            c.sync();
            if (buf.mismatch(host.asSlice(offs[i], bs)) >= 0) {
                return "block " + i + " differs from the file";
            }
        }
        return null;
    }

    static String checkFile(BlockIo disk, BlockFile f, MemorySegment host, MemorySegment buf, long[] offs, int bs,
                            long[] res) {
        if (!all(res, bs)) {
            return "ops failed or short, first " + GpuFileIo.describe(firstBad(res, bs));
        }
        for (int s = 0; s < Math.min(offs.length, 16); s++) {
            int i = (int) ((long) s * (offs.length - 1) / Math.max(1, Math.min(offs.length, 16) - 1));
            buf.fill((byte) 0);
            if (disk.execute(f, List.of(BlockIo.Op.read(offs[i], buf)))[0] != bs
                    || buf.mismatch(host.asSlice(offs[i], bs)) >= 0) {
                return "block " + i + " on disk differs from the GPU's";
            }
        }
        return null;
    }

    static long firstBad(long[] res, int bs) {
        for (long r : res) {
            if (r != bs) {
                return r;
            }
        }
        return bs;
    }

    /** sync + drop_caches where we are root (O_DIRECT reads skip the cache anyway; cuFile's compat path may not). */
    static void drop(boolean root) {
        if (!root) {
            return;
        }
        try {
            new ProcessBuilder("sync").inheritIO().start().waitFor();
            Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
        } catch (IOException e) {
            // not allowed here (a container): the header line says root, the figures then include the cache
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
