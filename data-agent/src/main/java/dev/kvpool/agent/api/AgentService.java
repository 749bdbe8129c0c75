package dev.kvpool.agent.api;

import dev.kvpool.agent.events.BlockEventPublisher;
import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.events.SeqFile;
import dev.kvpool.agent.heartbeat.HeartbeatReporter;
import dev.kvpool.agent.io.DirLock;
import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.store.AgentSetup;
import dev.kvpool.agent.store.BlockStore;
import dev.kvpool.agent.store.GdsSettings;
import dev.kvpool.agent.store.GpuPromoter;
import dev.kvpool.agent.tier.GlobalPoolTier;
import dev.kvpool.agent.tier.GpuDevice;
import dev.kvpool.agent.tier.Tier;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.api.events.KafkaClientConfig;
import dev.kvpool.api.events.Topics;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import java.util.logging.Logger;
import org.eclipse.microprofile.config.ConfigProvider;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Builds the store, the shared segment and the event publisher from {@link AgentConfig} at start-up. */
@ApplicationScoped
public class AgentService {
    private static final Logger LOG = Logger.getLogger(AgentService.class.getName());

    @Inject
    AgentConfig config;

    @Inject
    MeterRegistry registry;

    @ConfigProperty(name = "quarkus.http.port", defaultValue = "6390")
    int httpPort;

    private BlockStore store;
    private SharedMemory shm;
    private BlockEventPublisher publisher;
    private AgentSetup.Built built;
    private String agentId;
    private HeartbeatReporter heartbeat;
    private DirLock dataLock;
    /** How far start-up got (the startup health check's data), then "started". */
    private volatile String phase = "not started";
    private volatile long startedInMs = -1;
    private boolean stopped;

    void start(@Observes StartupEvent ev) {
        try {
            doStart();
        } catch (RuntimeException | Error e) {
            stop(null); // what was opened is closed: locks released, a segment created here removed
            phase = "failed: " + e;
            throw e;
        }
    }

    private void doStart() {
        long t0 = System.nanoTime();
        if (!loopback(config.httpHost())) {
            LOG.warning("engine API on " + config.httpHost() + ":" + httpPort + ", beyond this host, without"
                    + " credentials: whoever reaches it can save any bytes of the shared segment under any key and remove"
                    + " blocks. Keep it on 127.0.0.1 (engines on the node share /dev/shm with the agent anyway) or behind"
                    + " a network policy.");
        }
        agentId = agentId(config.id().orElse(null), hostName());
        Path data = Path.of(config.dataDir());
        phase = "locking the data directory";
        dataLock = DirLock.acquire(data, "kvpool.agent.data-dir"); // before any file in it is opened or written
        phase = "opening the tiers (device probes, the NVMe kept-block index)";
        List<Path> dirs = new ArrayList<>();
        if (config.nvme().enabled()) {
            for (String d : config.nvme().dirs().orElse(List.of(data.resolve("nvme0").toString()))) {
                dirs.add(Path.of(d));
            }
        }
        var s = new AgentSetup.Settings(agentId, config.blockBytes(), config.blockTokens(), config.host().regions(),
                config.host().regionMib() << 20, dirs, config.nvme().deviceMib() << 20, config.nvme().io(),
                config.nvme().queueDepth(), config.nvme().bandwidthMbps().orElse(List.of()),
                config.nvme().throttleMbps().orElse(List.of()), config.nvme().probeMib() << 20,
                config.gpu().enabled(), config.gpu().mib() << 20, config.pool().enabled(), config.pool().metaUri(),
                config.pool().instanceId(), config.pool().instanceGroup(), config.pool().spec(),
                config.pool().writeTimeoutSeconds(), config.pool().model(), config.pool().requireChecksum(),
                config.sched().chunkOps(), config.sched().highWaterOps(), config.sched().guardMicros(),
                config.nvme().keep(), config.pool().storageRoots().stream().map(Path::of).toList())
                .validate(); // before anything is created from these names: the seq file below carries the agent id
        dev.kvpool.agent.pool.Layout layout = dev.kvpool.agent.pool.Layout.of(config.layout(), config.layers(),
                config.blockBytes());

        EventSink sink = EventSink.NONE;
        if (config.events().bootstrapServers().filter(x -> !x.isBlank()).isPresent()) {
            SeqFile seqs = SeqFile.open(data.resolve("events-" + agentId + ".seq")); // a valid id: one file name
            publisher = new BlockEventPublisher(BlockEventPublisher.createProducer(
                    config.events().bootstrapServers().get(),
                    KafkaClientConfig.load(config.events().clientConfigDir())), Topics.BLOCKS, agentId,
                    config.pool().instanceId(), config.pool().instanceGroup(), config.events().maxEvents(),
                    config.events().lingerMs(), config.events().spoolBatches(), seqs.first(), seqs,
                    SpoolLog.open(data.resolve("events-" + agentId + ".spool")))
                    .maxBatchBytes(config.events().maxBatchBytes()).maxSpoolBytes(config.events().spoolMib() << 20);
            sink = publisher;
        }
        var g = config.gds();
        if (g.stagingMib() < 1 || g.stagingMib() > 4096) {
            throw new IllegalArgumentException("kvpool.agent.gds.staging-mib " + g.stagingMib() + ": 1 to 4096");
        }
        built = AgentSetup.build(s, sink, layout, new GdsSettings(dev.kvpool.agent.io.gds.Gds.Mode.parse(g.mode()),
                g.library().orElse(dev.kvpool.agent.io.gds.CuFile.configuredLibrary()), g.maxBatch(),
                g.stagingMib() << 20));
        store = built.store();
        built.verifyGpuLoads(config.gpu().verify());
        built.gpuBatchCopies(config.gpu().batchCopies());
        phase = "mapping the shared segment";
        shm = new SharedMemory(Path.of(config.shm().path().orElse("/dev/shm/kvpool-agent-" + httpPort)),
                config.shm().mib() << 20);
        built.pinForGpu(shm.segment()); // engine buffers: GPU-tier copies DMA straight from/to them
        metrics();
        heartbeat = heartbeat(java.time.Instant.now());
        startedInMs = (System.nanoTime() - t0) / 1_000_000;
        phase = "started";
        LOG.info(String.format("KVPool data agent %s ready in %d ms: engine API http://%s:%d, metrics %s/q/metrics,"
                        + " shared memory %s (%d MiB), block %d KiB, tiers %s, NVMe I/O %s, GPU %s, events %s", agentId,
                (System.nanoTime() - t0) / 1_000_000, config.httpHost(), httpPort, config.metricsHost() + ":" + config.metricsPort(), shm.path(), shm.size() >> 20, config.blockBytes() / 1024, store, built.ioEngine(), built.gpu(),
                publisher == null ? "off" : config.events().bootstrapServers().get()));
    }

    /** The engine API has no credentials: say so loudly when it listens beyond this host. */
    static boolean loopback(String host) {
        return host.equals("localhost") || host.equals("::1") || host.startsWith("127.");
    }

    /** With kvpool.agent.control-plane.url: heartbeats to the control plane on their own daemon thread. */
    private HeartbeatReporter heartbeat(java.time.Instant startedAt) {
        var cp = config.controlPlane();
        if (cp.url().filter(u -> !u.isBlank()).isEmpty()) {
            return null;
        }
        var client = new ControlPlaneClient(cp.url().get(), cp.user().orElse(null), cp.password().orElse(null),
                cp.token().orElse(null), cp.timeout());
        String version = ConfigProvider.getConfig().getOptionalValue("quarkus.application.version", String.class)
                .orElse(null);
        var info = new HeartbeatReporter.Info(agentId + "-" + httpPort, engineUrl(config.httpHost(), httpPort),
                version, startedAt);
        LOG.info("heartbeats to the control plane " + client.url + " every " + cp.period() + " as " + info.id());
        return new HeartbeatReporter(client::post, info, this::tierUsage, cp.period()).start();
    }

    /** The engine API's URL as the heartbeat names it: the host name where it listens on every interface. */
    static String engineUrl(String host, int port) {
        String h = host.equals("0.0.0.0") || host.equals("::") ? hostName() : host;
        return "http://" + (h.contains(":") ? "[" + h + "]" : h) + ":" + port;
    }

    /**
     * Each local tier's capacity, blocks and bytes, read as {@code /v1/status} reads them; the global pool is left
     * out (its blocks are counted by the metadata plane, not here).
     */
    List<HeartbeatReporter.TierUsage> tierUsage() {
        List<HeartbeatReporter.TierUsage> u = new ArrayList<>();
        for (Tier t : store.tiers()) {
            long blocks = t.size();
            if (blocks < 0) { // not tracked by this agent
                continue;
            }
            Long cap = t instanceof PooledTier p ? p.capacity() * t.blockBytes() : null;
            u.add(new HeartbeatReporter.TierUsage(t.name(), cap, blocks * t.blockBytes(), blocks));
        }
        return u;
    }

    void stop(@Observes ShutdownEvent ev) {
        synchronized (this) {
            if (stopped) { // a failed start stopped already; Quarkus may stop again
                return;
            }
            stopped = true;
        }
        phase = "stopping";
        if (heartbeat != null) {
            heartbeat.close();
        }
        if (store != null) {
            store.close();
        }
        if (publisher != null) {
            publisher.close();
        }
        if (shm != null) {
            if (built != null && built.cuda()) {
                GpuDevice.unpin(shm.segment());
            }
            shm.close(); // unmapped and removed: a clean stop leaves nothing in /dev/shm
        }
        if (dataLock != null) {
            dataLock.close();
        }
        phase = "stopped";
    }

    private void metrics() {
        gauge("kvpool_agent_saved_blocks_total", store, BlockStore::savedBlocks);
        gauge("kvpool_agent_load_hits_total", store, BlockStore::loadHits);
        gauge("kvpool_agent_load_misses_total", store, BlockStore::loadMisses);
        gauge("kvpool_agent_write_behind_failures_total", store, BlockStore::writeBehindFailures);
        if (store.pool() != null) {
            gauge("kvpool_agent_pool_backlog_blocks", store, BlockStore::poolBacklog);
            gauge("kvpool_agent_pool_backlog_written_total", store, BlockStore::poolBacklogWritten);
            gauge("kvpool_agent_pool_backlog_dropped_total", store, BlockStore::poolBacklogDropped);
            gauge("kvpool_agent_pool_backlog_gone_total", store, BlockStore::poolBacklogGone);
            gauge("kvpool_agent_pool_late_retries_total", store, BlockStore::poolLateRetries);
            GlobalPoolTier pool = store.pool();
            Gauge.builder("kvpool_agent_checksum_failures_total", pool, GlobalPoolTier::checksumFailures)
                    .tag("tier", "pool").register(registry);
            gauge("kvpool_agent_pool_write_failures_total", pool, GlobalPoolTier::writeFailures);
            Gauge.builder("kvpool_agent_pool_refused_locations_total", pool, GlobalPoolTier::refusedLocations)
                    .description("locations from the metadata plane refused: outside the storage roots or this"
                            + " instance's directory, or not a slot of this tier (a failed write, a miss)")
                    .register(registry);
            Gauge.builder("kvpool_agent_pool_late_skips_total", pool, GlobalPoolTier::lateSkips)
                    .description("blocks not written to the pool because their session neared its deadline")
                    .register(registry);
        }
        for (PooledTier t : new PooledTier[] {store.host(), store.nvme()}) {
            if (t == null) {
                continue;
            }
            Gauge.builder("kvpool_agent_tier_blocks", t, PooledTier::size).tag("tier", t.name()).register(registry);
            Gauge.builder("kvpool_agent_checksum_failures_total", t, PooledTier::checksumFailures).tag("tier", t.name())
                    .register(registry);
            Gauge.builder("kvpool_agent_evictions_total", t, PooledTier::evictions).tag("tier", t.name()).register(registry);
            Gauge.builder("kvpool_agent_io_failures_total", t, PooledTier::ioFailures).tag("tier", t.name()).register(registry);
            for (int d = 0; d < t.workers().size(); d++) {
                DeviceWorker w = t.workers().get(d);
                String dev = w.device().id();
                int dd = d;
                Gauge.builder("kvpool_agent_device_failed", t, x -> x.failed(dd) ? 1 : 0).tag("device", dev)
                        .description("1 while the device is out of use after failing ops in a row").register(registry);
                Gauge.builder("kvpool_agent_device_read_bytes_total", w, DeviceWorker::readBytes).tag("device", dev).register(registry);
                Gauge.builder("kvpool_agent_device_write_bytes_total", w, DeviceWorker::writeBytes).tag("device", dev).register(registry);
                Gauge.builder("kvpool_agent_device_deferred_writes", w, DeviceWorker::pendingDeferredOps).tag("device", dev).register(registry);
            }
        }
        GpuPromoter gp = store.gpuPromoter();
        if (gp != null) { // the NVMe → GPU path: bytes through cuFile, fallbacks to the bounce path
            for (String dir : new String[] {"read", "write"}) {
                boolean toGpu = dir.equals("read");
                Gauge.builder("kvpool_agent_gds_bytes_total", gp,
                                x -> x.paths().stream().mapToLong(io -> io.gdsBytes(toGpu)).sum())
                        .tag("dir", dir).description("bytes moved through cuFile (read: NVMe → GPU)").register(registry);
            }
            Gauge.builder("kvpool_agent_gds_fallbacks_total", gp,
                            x -> x.paths().stream().mapToLong(io -> io.fallbacks()).sum())
                    .description("switches from cuFile to the bounce path (a refused registration or a failed first"
                            + " transfer)").register(registry);
            gauge("kvpool_agent_gpu_promoted_blocks_total", gp, GpuPromoter::promoted);
            gauge("kvpool_agent_gpu_promote_failures_total", gp, GpuPromoter::failed);
        }
        if (publisher != null) {
            gauge("kvpool_agent_events_sent_batches_total", publisher, BlockEventPublisher::sentBatches);
            gauge("kvpool_agent_events_spooled_batches", publisher, BlockEventPublisher::spooled);
            gauge("kvpool_agent_events_spooled_bytes", publisher, BlockEventPublisher::spooledBytes);
            gauge("kvpool_agent_events_dropped_batches_total", publisher, BlockEventPublisher::droppedBatches);
        }
    }

    private <T> void gauge(String name, T obj, ToDoubleFunction<T> f) {
        Gauge.builder(name, obj, f).register(registry);
    }

    /**
     * The agent id: {@code kvpool.agent.id} when set, else the host name; either way checked against the identifier
     * rule (it names the event spool's files and every event's source), so a start-up with a bad one fails saying
     * which setting to fix.
     */
    static String agentId(String configured, String hostName) {
        if (configured != null) {
            return AgentSetup.checkName(Identifiers.Kind.AGENT, "kvpool.agent.id", configured);
        }
        String problem = Identifiers.problem(Identifiers.Kind.AGENT, hostName);
        if (problem != null) {
            throw new IllegalArgumentException("kvpool.agent.id is not set and the host name '" + Text.safe(hostName)
                    + "' is not a valid agent id (" + problem + "): set kvpool.agent.id to 1 to "
                    + Identifiers.MAX_LENGTH + " characters of A-Z a-z 0-9 . _ -, not starting with . or -");
        }
        return hostName;
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "agent";
        }
    }

    public BlockStore store() {
        return store;
    }

    public SharedMemory shm() {
        return shm;
    }

    public BlockEventPublisher publisher() {
        return publisher;
    }

    public AgentSetup.Built built() {
        return built;
    }

    public String agentId() {
        return agentId;
    }

    /** What start-up is doing, "started" once the engine API can serve, "stopped" after a stop. */
    public String phase() {
        return phase;
    }

    /** Start-up time in ms, -1 until started. */
    public long startedInMs() {
        return startedInMs;
    }
}
