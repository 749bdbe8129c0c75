package dev.kvpool.agent.io.gds;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * Whether the GPU ↔ NVMe path uses cuFile, decided once per GPU at start-up ({@link #choose}, pure: the
 * environment comes in as an {@link Env}, real or faked), then watched for the first transfer by
 * {@link AutoGpuFileIo}. {@code kvpool.agent.gds.mode}: {@code auto} (default) uses cuFile where it works and the
 * bounce path otherwise; {@code on} insists (a start without cuFile fails, naming why); {@code off} never loads it.
 */
public final class Gds {
    private static final Logger LOG = Logger.getLogger(Gds.class.getName());
    public static final String MODE_PROPERTY = "kvpool.agent.gds.mode";
    public static final String BATCH_PROPERTY = "kvpool.agent.gds.max-batch";
    public static final int DEFAULT_MAX_BATCH = 128;
    /** How long one cuFile batch (or single op) may take before it is cancelled and its ops failed (ms). */
    public static final String TIMEOUT_PROPERTY = "kvpool.agent.gds.timeout-ms";
    public static final long DEFAULT_TIMEOUT_MS = 10_000;
    /**
     * Bytes per cuFileBatchIOSubmit at most: cuFile 1.15 limits a batch by its compat bounce buffers (lifted in
     * 1.16), and 16 MiB (8 x 2 MiB) is the largest batch seen to work in compat mode on the test machine.
     */
    public static final String BATCH_BYTES_PROPERTY = "kvpool.agent.gds.max-batch-bytes";
    public static final long DEFAULT_MAX_BATCH_BYTES = 16L << 20;

    public enum Mode {
        AUTO, ON, OFF;

        /** auto, on or off (any case); anything else is refused naming the setting. */
        public static Mode parse(String s) {
            if (s == null || s.isBlank()) {
                return AUTO;
            }
            return switch (s.strip().toLowerCase(Locale.ROOT)) {
                case "auto" -> AUTO;
                case "on", "true" -> ON;
                case "off", "false" -> OFF;
                default -> throw new IllegalArgumentException(MODE_PROPERTY + " '" + s + "': auto, on or off");
            };
        }
    }

    /** cuFile as opened in this process: what {@link #choose} needs of it. */
    public interface Driver {
        /** cuFileGetVersion, e.g. "1150". */
        String version();

        /** Whether cuFile runs in compat mode here (its own POSIX path, no nvidia-fs). */
        boolean compat();

        /** The driver's limits in words (cuFileDriverGetProperties), for logs and the bench; empty if unknown. */
        default String limits() {
            return "";
        }

        /** Registers the GPU allocation and returns the cuFile path over it; throws when registration fails. */
        GpuFileIo open(GpuMemory gpu, int maxBatch);
    }

    /** Where cuFile comes from: loads the library and opens the driver, or says why not. */
    public interface Env {
        Driver driver() throws CuFile.Unavailable;
    }

    private Gds() {
    }

    /**
     * The path for one GPU. Falls back to {@code bounce} (mode auto) when the GPU is a host-memory stand-in, the
     * library is missing, the driver does not open or the buffer registration fails; in mode on each of those
     * throws {@link IllegalStateException} with the reason.
     */
    public static AutoGpuFileIo choose(Mode mode, GpuMemory gpu, Env env, Supplier<GpuFileIo> bounce, int maxBatch) {
        if (mode == Mode.OFF) {
            return new AutoGpuFileIo(gpu, null, bounce, true, MODE_PROPERTY + "=off", null);
        }
        String why;
        String version = null;
        if (gpu.ordinal() < 0) {
            why = "no CUDA device (the GPU tier is host memory)";
        } else {
            try {
                Driver d = env.driver();
                version = d.version();
                try {
                    GpuFileIo io = d.open(gpu, maxBatch);
                    String what = d.compat()
                            ? "cuFile " + version + " in compat mode (no nvidia-fs: cuFile's own POSIX path through"
                            + " its pinned buffers, not DMA from NVMe)"
                            : "cuFile " + version + " with nvidia-fs (GPUDirect Storage DMA)";
                    LOG.info("GPU ↔ NVMe path on " + gpu.id() + ": " + what);
                    return new AutoGpuFileIo(gpu, io, bounce, mode == Mode.AUTO, what, version);
                } catch (RuntimeException e) {
                    why = "cuFileBufRegister of " + gpu.id() + " (" + (gpu.bytes() >> 20) + " MiB) failed: "
                            + e.getMessage();
                }
            } catch (CuFile.Unavailable e) {
                why = e.getMessage();
            }
        }
        if (mode == Mode.ON) {
            throw new IllegalStateException(MODE_PROPERTY + "=on but GPUDirect Storage cannot be used: " + why);
        }
        LOG.warning("GPU ↔ NVMe path on " + gpu.id() + ": bounce (O_DIRECT into pinned host memory + copy), since "
                + why);
        return new AutoGpuFileIo(gpu, null, bounce, true, why, version);
    }

    /** The process's cuFile, loaded and opened on first use; the same answer (or reason) every time after. */
    public static Env system(String library) {
        return () -> Holder.open(library);
    }

    /** The library and driver of the process, opened once; never closed (cuFile is per process, as its driver is). */
    static final class Holder {
        /** Per library asked for: a Driver or the Unavailable that answers every later call. */
        private static final java.util.Map<String, Object> STATE = new java.util.HashMap<>();

        static synchronized Driver open(String library) throws CuFile.Unavailable {
            Object state = STATE.get(library);
            if (state == null) {
                try {
                    state = real(library);
                } catch (CuFile.Unavailable e) {
                    state = e;
                }
                STATE.put(library, state);
            }
            if (state instanceof CuFile.Unavailable u) {
                throw u;
            }
            return (Driver) state;
        }

        private static Driver real(String library) throws CuFile.Unavailable {
            CuFile cu = CuFile.load(library);
            try {
                cu.driverOpen();
            } catch (RuntimeException e) {
                throw new CuFile.Unavailable("cuFileDriverOpen failed: " + e.getMessage(), e);
            }
            String version;
            try {
                version = Integer.toString(cu.version());
            } catch (RuntimeException e) {
                version = "unknown (" + e.getMessage() + ")";
            }
            boolean compat = compat(cu);
            String v = version;
            String lim;
            try {
                lim = CuFile.limits(cu.driverProperties());
            } catch (RuntimeException e) {
                lim = "cuFileDriverGetProperties failed: " + e.getMessage();
            }
            String limits = lim;
            // cuFile 1.15 compat mode gives each op of a batch a bounce buffer: keep a submission to half of them
            int bounceBuffers;
            try {
                bounceBuffers = CuFile.bounceBuffers(cu.driverProperties());
            } catch (RuntimeException e) {
                bounceBuffers = 0;
            }
            int opCap = bounceBuffers > 1 ? bounceBuffers / 2 : Integer.MAX_VALUE;
            long timeoutNanos = Math.max(1, Long.getLong(TIMEOUT_PROPERTY, DEFAULT_TIMEOUT_MS)) * 1_000_000L;
            long batchBytes = Math.max(4096, Long.getLong(BATCH_BYTES_PROPERTY, DEFAULT_MAX_BATCH_BYTES));
            return new Driver() {
                @Override
                public String version() {
                    return v;
                }

                @Override
                public boolean compat() {
                    return compat;
                }

                @Override
                public String limits() {
                    return limits;
                }

                @Override
                public GpuFileIo open(GpuMemory gpu, int maxBatch) {
                    int ops = Math.min(maxBatch, opCap);
                    if (ops < maxBatch) {
                        LOG.info("cuFile batches on " + gpu.id() + ": " + ops + " ops at most (half of cuFile's "
                                + (2 * ops) + " bounce buffers), not " + maxBatch);
                    }
                    return new GdsIo(cu, gpu, ops, compat, timeoutNanos, batchBytes);
                }
            };
        }

        /**
         * Compat mode: nvidia-fs is not loaded ({@code /proc/driver/nvidia-fs} absent) or the driver reports no
         * nvidia-fs version. cuFile's PCI P2PDMA mode (no nvidia-fs either) cannot be told apart from compat this
         * way and is reported as compat.
         */
        static boolean compat(CuFile cu) {
            boolean nvfs = Files.exists(Path.of("/proc/driver/nvidia-fs"));
            try {
                MemorySegment props = cu.driverProperties();
                int[] v = CuFile.nvfsVersion(props);
                return !nvfs || v[0] == 0;
            } catch (RuntimeException e) {
                return !nvfs;
            }
        }
    }
}
