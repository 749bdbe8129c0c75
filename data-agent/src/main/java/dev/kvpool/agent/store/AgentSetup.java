package dev.kvpool.agent.store;

import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.agent.io.gds.GpuMemory;
import dev.kvpool.agent.io.uring.IoUring;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import dev.kvpool.agent.pool.BandwidthProbe;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.Layout;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.pool.ThrottledDevice;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.FileDevice;
import dev.kvpool.agent.tier.GlobalPoolTier;
import dev.kvpool.agent.tier.GpuDevice;
import dev.kvpool.agent.tier.MemoryDevice;
import dev.kvpool.api.client.KvcmHttpClient;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

/** Builds the agent's tiers and store from plain settings (used by the Quarkus app, the tests and the bench). */
public final class AgentSetup {
    private static final Logger LOG = Logger.getLogger(AgentSetup.class.getName());

    /** Everything the store needs; see data-agent/README.md for the matching config keys. */
    public record Settings(
            String agentId, int blockBytes, int blockTokens,
            int hostRegions, long hostRegionBytes,
            List<Path> nvmeDirs, long nvmeDeviceBytes, String ioEngine, int queueDepth,
            List<Double> nvmeBandwidthMBps, List<Double> nvmeThrottleMBps, long probeBytes,
            boolean gpuEnabled, long gpuBytes,
            boolean poolEnabled, String metaUri, String instanceId, String instanceGroup, String spec,
            int writeTimeoutSeconds, String model, boolean requireChecksum,
            int chunkOps, int highWaterOps, long guardMicros, boolean nvmeKeep, List<Path> poolRoots) {

        public static Settings defaults(Path dataDir) {
            return new Settings("agent", 256 * 1024, 16, 2, 64L << 20, List.of(dataDir.resolve("nvme0")),
                    256L << 20, "auto", 8, List.of(), List.of(), 16L << 20, false, 64L << 20, false,
                    "http://127.0.0.1:6382", "agent", "default", "tp0", 30, "kvpool-agent", true, 4, 4096, 500, true,
                    List.of(dataDir.resolve("nfs")));
        }

        public Settings withNvme(List<Path> dirs, long deviceBytes) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, dirs, deviceBytes,
                    ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled, gpuBytes,
                    poolEnabled, metaUri, instanceId, instanceGroup, spec, writeTimeoutSeconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }

        public Settings withPool(String uri, String instance) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled,
                    gpuBytes, true, uri, instance, instanceGroup, spec, writeTimeoutSeconds, model, requireChecksum,
                    chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }

        public Settings withBlock(int bytes, int hostRegions, long hostRegionBytes) {
            return new Settings(agentId, bytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled,
                    gpuBytes, poolEnabled, metaUri, instanceId, instanceGroup, spec, writeTimeoutSeconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }

        /** The roots of the file storages whose slab files the global-pool tier may read and write. */
        public Settings withPoolRoots(List<Path> roots) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled,
                    gpuBytes, poolEnabled, metaUri, instanceId, instanceGroup, spec, writeTimeoutSeconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, roots);
        }

        /**
         * The names in these settings checked against the one identifier rule ({@link Identifiers}): they become
         * file names (the event spool and seq file carry the agent id), Kafka keys, the key space of the kept NVMe
         * blocks and the instance the pool's paths must lie in. Throws naming the setting and what is wrong.
         */
        public Settings validate() {
            checkName(Identifiers.Kind.AGENT, "kvpool.agent.id", agentId);
            checkName(Identifiers.Kind.INSTANCE, "kvpool.agent.pool.instance-id", instanceId);
            checkName(Identifiers.Kind.GROUP, "kvpool.agent.pool.instance-group", instanceGroup);
            checkName(Identifiers.Kind.SPEC, "kvpool.agent.pool.spec", spec);
            String m = Text.opaqueProblem(model, Limits.MAX_TEXT);
            if (m != null || model == null || model.isEmpty()) {
                throw new IllegalArgumentException("kvpool.agent.pool.model: " + (m != null ? m : "must not be empty"));
            }
            if (poolEnabled && (poolRoots == null || poolRoots.isEmpty())) {
                throw new IllegalArgumentException("kvpool.agent.pool.storage-roots: the global pool needs the root"
                        + " path of each file storage it writes to (the storages' root_path), so that no location"
                        + " the metadata plane hands out can lead outside them");
            }
            for (Path r : poolRoots == null ? List.<Path>of() : poolRoots) {
                for (Path part : r) { // a root is meant as written: '/data/../etc' is a mistake, not /etc
                    if (part.toString().equals(".") || part.toString().equals("..")) {
                        throw new IllegalArgumentException("kvpool.agent.pool.storage-roots: '" + Text.safe(r.toString())
                                + "' holds a '" + part + "' segment; give the root as a plain path");
                    }
                }
            }
            return this;
        }

        /** The global pool's write sessions last this long (their deadline, as the metadata plane keeps it). */
        public Settings withWriteTimeout(int seconds) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled,
                    gpuBytes, poolEnabled, metaUri, instanceId, instanceGroup, spec, seconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }

        /** The instance whose keys these are (its blocks go to the pool only where the pool is on). */
        public Settings withInstance(String instance) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, ioEngine, queueDepth, nvmeBandwidthMBps, nvmeThrottleMBps, probeBytes, gpuEnabled,
                    gpuBytes, poolEnabled, metaUri, instance, instanceGroup, spec, writeTimeoutSeconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }

        /** What the keys mean on these devices: a slot table written under another identity is not trusted. */
        public String keySpace() {
            return "instance=" + instanceId + " spec=" + spec + " model=" + model + " block_tokens=" + blockTokens
                    + " block_bytes=" + blockBytes;
        }

        public Settings withIo(String engine, int qd, List<Double> bandwidthMBps, List<Double> throttleMBps) {
            return new Settings(agentId, blockBytes, blockTokens, hostRegions, hostRegionBytes, nvmeDirs,
                    nvmeDeviceBytes, engine, qd, bandwidthMBps, throttleMBps, probeBytes, gpuEnabled, gpuBytes,
                    poolEnabled, metaUri, instanceId, instanceGroup, spec, writeTimeoutSeconds, model,
                    requireChecksum, chunkOps, highWaterOps, guardMicros, nvmeKeep, poolRoots);
        }
    }

    /** The built store and what was chosen on the way; {@code cuda}: the GPU tier is on real devices. */
    public record Built(BlockStore store, String ioEngine, String gpu, List<String> devices, boolean cuda) {
        /**
         * Pins host memory the GPU tier copies from or to (the engine's shared segment), where the tier is on
         * CUDA; elsewhere nothing to do.
         */
        public void pinForGpu(MemorySegment region) {
            if (cuda) {
                GpuDevice.pin(region);
            }
        }

        /**
         * {@code kvpool.agent.gpu.verify}: whether loads from the GPU tier check each block's CRC32C. Off by default
         * ({@link #build} leaves it off): the tier holds only bytes the agent verified or checksummed on their way in,
         * in its own ECC device memory (see data-agent/README.md, "GPU tier").
         */
        public void verifyGpuLoads(boolean on) {
            if (store.gpu() instanceof PooledTier g) {
                g.verifyLoads(on);
            }
        }

        /**
         * {@code kvpool.agent.gpu.batch-copies}: scattered copies as {@code cuMemcpyBatchAsync_v2} calls where the
         * driver has them (the default), or one {@code cudaMemcpyAsync} per block. Before the store serves.
         */
        public void gpuBatchCopies(boolean on) {
            if (store.gpu() instanceof PooledTier g) {
                for (Device d : g.devices()) {
                    if (d instanceof GpuDevice c) {
                        c.batchCopies(on);
                        LOG.info("GPU tier " + c.id() + ": " + c.copyPath());
                    }
                }
            }
        }
    }

    private AgentSetup() {
    }

    /** A BlockIo per the setting: auto picks io_uring when it works here and logs the fallback otherwise. */
    public static BlockIo blockIo(String engine, int queueDepth) {
        return switch (engine) {
            case "io_uring", "io-uring" -> new IoUringBlockIo(queueDepth);
            case "filechannel" -> new FileChannelBlockIo(queueDepth);
            default -> IoUringBlockIo.bestAvailable(queueDepth, true);
        };
    }

    /**
     * Throws {@link IllegalArgumentException} naming {@code key} when {@code value} breaks the identifier rule:
     * {@code kvpool.agent.pool.instance-id '../x': must not start with '.' (an instance id is 1 to 128 characters
     * of A-Z a-z 0-9 . _ -, not starting with . or -)}.
     */
    public static String checkName(Identifiers.Kind kind, String key, String value) {
        String p = Identifiers.problem(kind, value);
        if (p != null) {
            throw new IllegalArgumentException(key + (value == null ? "" : " '" + Text.safe(value) + "'") + ": " + p
                    + " (" + kindArticle(kind) + " is 1 to " + Identifiers.MAX_LENGTH
                    + " characters of A-Z a-z 0-9 . _ -, not starting with . or -)");
        }
        return value;
    }

    private static String kindArticle(Identifiers.Kind kind) {
        return ("aeiou".indexOf(kind.what.charAt(0)) >= 0 ? "an " : "a ") + kind.what;
    }

    public static Built build(Settings s, EventSink events) {
        return build(s, events, Layout.CONTIGUOUS, GdsSettings.fromSystemProperties());
    }

    /** As {@link #build(Settings, EventSink)}, with the GPU tier's path to the NVMe slot files as given. */
    public static Built build(Settings s, EventSink events, GdsSettings gds) {
        return build(s, events, Layout.CONTIGUOUS, gds);
    }

    /** As {@link #build(Settings, EventSink, Layout, GdsSettings)} with the GDS settings of the system properties. */
    public static Built build(Settings s, EventSink events, Layout layout) {
        return build(s, events, layout, GdsSettings.fromSystemProperties());
    }

    /**
     * As {@link #build(Settings, EventSink)} with blocks of {@code layout.layers()} layers kept as {@code layout}
     * says (layered: the host and NVMe tiers keep a CRC32C per layer, so loads can go layer by layer, and each slot
     * file is cut into a region per layer; the GPU tier keeps whole blocks either way), and the GPU tier's path to
     * the NVMe slot files as {@code gds} says.
     */
    public static Built build(Settings s, EventSink events, Layout layout, GdsSettings gds) {
        return build(s, events, layout, gds, null);
    }

    /** As {@link #build(Settings, EventSink, Layout, GdsSettings)}, each GPU's path picked by {@code paths} (tests). */
    static Built build(Settings s, EventSink events, Layout layout, GdsSettings gds, GpuPromoter.PathChooser paths) {
        s.validate();
        Layout.of(layout.name(), layout.layers(), s.blockBytes()); // the same checks as the settings get
        if (s.blockBytes() % BlockIo.ALIGN != 0) {
            throw new IllegalArgumentException("kvpool.agent.block-bytes must be a multiple of 4096: " + s.blockBytes());
        }
        List<String> described = new ArrayList<>();
        // G2: host pool regions
        List<MemoryDevice> regions = new ArrayList<>();
        long slotsPerRegion = Math.max(1, s.hostRegionBytes() / s.blockBytes());
        for (int i = 0; i < s.hostRegions(); i++) {
            regions.add(new MemoryDevice("host" + i, slotsPerRegion, s.blockBytes()));
        }
        double[] hostBw = probeAll(regions, s.probeBytes(), List.of());
        PooledTier host = withWorkers("host", BlockEvent.CPU, s, regions, hostBw, layout);
        // a save's blocks in one stretch per region: the write-behind into the GPU tier copies them as a few runs
        host.placeBatchesInRuns(true);
        for (int i = 0; i < regions.size(); i++) {
            described.add(String.format("host %s %.0f MB/s", regions.get(i).id(), hostBw[i] / 1e6));
        }
        // G3: NVMe, one preallocated slot file per directory
        PooledTier nvme = null;
        String engine = "none";
        if (!s.nvmeDirs().isEmpty()) {
            List<Device> disks = new ArrayList<>();
            List<MemorySegment> fixed = regions.stream().map(MemoryDevice::region).toList();
            for (int i = 0; i < s.nvmeDirs().size(); i++) {
                // layered, a block is read and written as one op per layer: as many bytes in flight as whole
                // blocks would have, in more, smaller ops
                int qd = layout.perLayer() ? Math.min(1024, s.queueDepth() * layout.layers()) : s.queueDepth();
                BlockIo io = blockIo(s.ioEngine(), qd);
                io.registerBuffers(fixed); // write-behinds go straight from host slots: WRITE_FIXED
                engine = io.name();
                Device d = new FileDevice("nvme" + i, s.nvmeDirs().get(i), Math.max(1, s.nvmeDeviceBytes() / s.blockBytes()),
                        s.blockBytes(), io, s.nvmeKeep() ? s.keySpace() : null, layout.perLayer() ? layout.layers() : 1);
                if (i < s.nvmeThrottleMBps().size() && s.nvmeThrottleMBps().get(i) > 0) {
                    d = new ThrottledDevice(d, s.nvmeThrottleMBps().get(i) * 1e6);
                }
                disks.add(d);
            }
            double[] bw = probeAll(disks, s.probeBytes(), s.nvmeBandwidthMBps());
            nvme = withWorkers("nvme", BlockEvent.DISK, s, disks, bw, layout);
            for (int i = 0; i < disks.size(); i++) {
                described.add(String.format("nvme %s %s %.0f MB/s", disks.get(i).id(), s.nvmeDirs().get(i), bw[i] / 1e6));
            }
            LOG.info("NVMe tier: " + disks.size() + " device(s), I/O engine " + engine
                    + (IoUring.unavailableReason() == null ? "" : " (io_uring unavailable: " + IoUring.unavailableReason() + ")"));
        }
        // G1: GPU through JCuda, or a host-memory stand-in
        PooledTier gpu = null;
        String gpuMode = "off";
        boolean cuda = false;
        List<GpuMemory> gpuMemory = new ArrayList<>();
        if (s.gpuEnabled()) {
            int n = GpuDevice.deviceCount();
            List<Device> gs = new ArrayList<>();
            long slots = Math.max(1, s.gpuBytes() / s.blockBytes());
            if (n > 0) {
                // write-behinds copy from host slots and loads may land in them: pinned, the copy engines DMA
                // them directly instead of CUDA's synchronous pageable path
                for (MemoryDevice r : regions) {
                    GpuDevice.pin(r.region());
                }
                for (int i = 0; i < n; i++) {
                    GpuDevice g = new GpuDevice("gpu" + i, i, slots, s.blockBytes());
                    gs.add(g);
                    gpuMemory.add(g.memory());
                }
                gpuMode = n + " CUDA device(s) via JCuda";
                cuda = true;
            } else {
                MemoryDevice m = new MemoryDevice("gpu0-host", slots, s.blockBytes());
                gs.add(m);
                gpuMemory.add(GpuMemory.ofHost(m.id(), m.region()));
                gpuMode = "no CUDA device: host-memory implementation";
            }
            LOG.info("GPU tier: " + gpuMode);
            gpu = withWorkers("gpu", BlockEvent.GPU, s, gs, probeAll(gs, s.probeBytes(), List.of()), Layout.CONTIGUOUS);
            // filled only by write-behind from the host pool (CRC32C taken at save, passed along) and by cuFile
            // promotions (checked on their first load): a load does not checksum every block again unless
            // kvpool.agent.gpu.verify says so (Built.verifyGpuLoads)
            gpu.verifyLoads(false);
            gpu.placeBatchesInRuns(true); // several GPUs: each one's share of a load is one run in the engine's buffer
        }
        // G4: the global pool through the metadata plane
        GlobalPoolTier pool = null;
        if (s.poolEnabled()) {
            pool = new GlobalPoolTier(new KvcmHttpClient(URI.create(s.metaUri()), Duration.ofSeconds(10)),
                    s.instanceId(), s.instanceGroup(), s.blockTokens(), s.blockBytes(), s.spec(),
                    s.writeTimeoutSeconds(), s.requireChecksum(), 4, s.poolRoots());
            try {
                pool.register(s.model());
            } catch (RuntimeException e) {
                LOG.warning("global pool: registerInstance failed (retried on use): " + e.getMessage());
            }
        }
        // copies owed to the pool outlive a restart where the blocks they copy do: in the NVMe tier, kept
        SpoolLog backlogLog = pool != null && nvme != null && s.nvmeKeep()
                ? SpoolLog.open(s.nvmeDirs().get(0).resolve("pool-backlog"), SpoolLog.DEFAULT_SEGMENT_BYTES,
                "global-pool backlog") : null;
        BlockStore store = new BlockStore(s.blockBytes(), s.blockTokens(), gpu, host, nvme, pool, events, backlogLog);
        // G3 → G1: NVMe hits go into GPU memory straight from the slot files (README "GPUDirect Storage")
        if (gpu != null && nvme != null) {
            try {
                GpuPromoter p = new GpuPromoter(gpu, gpuMemory, nvme, gds, () -> blockIo(s.ioEngine(), s.queueDepth()),
                        paths);
                store.attachGpuPromoter(p, null);
            } catch (RuntimeException e) { // mode on and no cuFile: the start fails, saying why
                store.close();
                throw e;
            }
        } else {
            store.attachGpuPromoter(null, gpu == null ? "the GPU tier is off (kvpool.agent.gpu.enabled)"
                    : "no NVMe tier to promote from");
        }
        return new Built(store, engine, gpuMode, described, cuda);
    }

    private static PooledTier withWorkers(String name, String medium, Settings s, List<? extends Device> ds,
                                          double[] bw, Layout layout) {
        List<DeviceWorker> ws = new ArrayList<>();
        for (Device d : ds) {
            ws.add(new DeviceWorker(d, s.chunkOps(), s.highWaterOps(), s.guardMicros() * 1000, 64));
        }
        return new PooledTier(name, medium, s.blockBytes(), ds, bw, ws, layout);
    }

    /** Configured bandwidths (MB/s) where given, else a short probe of each device. */
    static double[] probeAll(List<? extends Device> ds, long probeBytes, List<Double> configured) {
        double[] bw = new double[ds.size()];
        for (int i = 0; i < ds.size(); i++) {
            if (i < configured.size() && configured.get(i) > 0) {
                bw[i] = configured.get(i) * 1e6;
            } else {
                bw[i] = BandwidthProbe.probe(ds.get(i), probeBytes).readBps();
            }
        }
        return bw;
    }
}
