package dev.kvpool.meta.runtime;

import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.meta.index.StoreException;
import dev.kvpool.api.events.CacheEvent;
import dev.kvpool.api.events.KafkaClientConfig;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.meta.config.ControlPlaneSync;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.events.CacheEvents;
import dev.kvpool.meta.ha.Leadership;
import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.reclaim.Reclaimer;
import dev.kvpool.meta.backend.BackendContext;
import dev.kvpool.meta.backend.BackendProvider;
import dev.kvpool.meta.backend.LoadProgress;
import dev.kvpool.meta.backend.MetaBackend;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.query.QueryPath;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import dev.kvpool.meta.write.WritePath;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.jboss.logging.Logger;

/**
 * Builds the metadata plane at start-up — index store, registry, quota ledger, read and write paths — recovers
 * what the store kept, and only then opens the leader gate. Stops in the reverse order.
 */
@ApplicationScoped
public class MetaRuntime {
    private static final Logger LOG = Logger.getLogger(MetaRuntime.class);

    @Inject
    MetaSettings cfg;
    @Inject
    MeterRegistry meters;
    /** The storage kinds on the class path (one per backend module); kvpool.meta.store picks one. */
    @Inject
    @jakarta.enterprise.inject.Any
    jakarta.enterprise.inject.Instance<BackendProvider> backends;

    private MetaBackend backend;
    private IndexStore store;
    private Registry registry;
    private QuotaLedger ledger;
    private Deletions deletions;
    private WritePath write;
    private Recovery recovery;
    private QueryPath query;
    /** Per-instance counts reported to the control plane (the console's time series): the KVCM calls and the reclaimer count. */
    private final dev.kvpool.meta.stats.StatsCounters stats = new dev.kvpool.meta.stats.StatsCounters();
    private Leadership leadership;
    private Reclaimer reclaimer;
    private dev.kvpool.meta.reclaim.FileSweep fileSweep;
    private volatile CacheEvents events = CacheEvents.OFF;
    private volatile ControlPlaneSync controlPlane;
    private volatile dev.kvpool.meta.stats.StatsReporter statsReporter;
    private volatile MetaAuth auth;
    private dev.kvpool.meta.registry.RegistryMeters registryMeters;

    void start(@Observes StartupEvent ev) {
        long t0 = System.nanoTime();
        Path dataDir = Path.of(cfg.dataDir()).toAbsolutePath();
        try {
            Files.createDirectories(dataDir);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot create data directory " + dataDir, e);
        }
        // opening and recovery can take minutes (a large embedded journal, a rebuild over a large shared index): past
        // the wait, the ports open so that probes and clients get answers (not connection refused, which makes
        // Kubernetes restart the pod midway); calls are refused until the plane is ready
        nodeId = cfg.nodeId().filter(s -> !s.isBlank()).orElse(defaultNodeId());
        Gauge.builder("kvpool.meta.ready", this, r -> r.ready() ? 1 : 0)
                .description("1 once start-up has recovered and KVCM calls are served").register(meters);
        starter = Thread.ofPlatform().name("kvpool-meta-start").start(() -> openAndServe(t0, dataDir));
        boolean done;
        try {
            // lookups are answered from the loaded index while usage and slots are rebuilt: once the index is
            // loaded the ports open, after a short grace in which a small rebuild finishes and opens them ready
            long until = System.nanoTime() + cfg.portsWait().toNanos();
            indexLoaded.await(cfg.portsWait().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            long left = Math.max(0, until - System.nanoTime());
            done = recovered.await(Math.min(left, REBUILD_GRACE_NS), java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting", e);
        }
        synchronized (startLock) {
            if (startFailure != null) { // failed before the ports opened: the start fails, as it always did
                throw startFailure instanceof RuntimeException re ? re : new IllegalStateException(startFailure);
            }
            detached = true;
        }
        if (!done) {
            LOG.infof("still starting after %d ms (%s): HTTP :%d and gRPC :%d open now; /q/health/started stays DOWN "
                    + "and KVCM calls answer SERVER_NOT_LEADER until recovery ends%s",
                    (System.nanoTime() - t0) / 1_000_000, phase().label, httpPort(), grpcPort(),
                    lookupsOpen() ? ", lookups (GetCacheLocation and the other reads) from the loaded index now" : "");
        }
    }

    /** Where start-up stands; the startup and readiness checks show it. */
    public enum Phase {
        OPENING("opening"), LOADING("loading the index from its snapshot and journal"),
        WAITING_FOR_REBUILD("waiting for another replica's rebuild"),
        REBUILDING("rebuilding usage and slots from the index"), JOINING("joining running replicas"),
        READY("ready"), FAILED("failed"), STOPPING("stopping");

        public final String label;

        Phase(String label) {
            this.label = label;
        }
    }

    private volatile Phase phase = Phase.OPENING;
    /** The backend's load (the embedded store's snapshot and journal), in bytes read: shown while the phase is LOADING. */
    private final LoadProgress loadProgress = new LoadProgress();
    private final long startedAtMs = System.currentTimeMillis();
    private Thread starter;
    private final java.util.concurrent.CountDownLatch recovered = new java.util.concurrent.CountDownLatch(1);
    /** Counted down when the index is loaded (the rebuild begins, or the replica waits or joins) or start ends. */
    private final java.util.concurrent.CountDownLatch indexLoaded = new java.util.concurrent.CountDownLatch(1);
    /** How long a start waits for the rebuild after the index is loaded before it opens the ports for lookups. */
    private static final long REBUILD_GRACE_NS = 1_000_000_000L;
    private final Object startLock = new Object();
    private Throwable startFailure;
    private boolean detached;
    private volatile boolean stopping;
    private volatile String nodeId;

    /** This replica's node id (GetClusterInfo's self_node_id; the leader lease's holder). */
    public String nodeId() {
        return nodeId;
    }

    /**
     * Builds the plane: the backend kvpool.meta.store names (index store, leadership, quota ledger, slots), then
     * registry, read and write paths, auth.
     */
    private void open(Path dataDir) {
        StartupConfig startup = cfg.startupConfig().filter(s -> !s.isBlank())
                .map(s -> StartupConfig.load(Path.of(s))).orElseGet(() -> StartupConfig.defaults(dataDir));
        BackendProvider provider = BackendProvider.select(cfg.store(), backends);
        backend = provider.open(new BackendContext(dataDir, nodeId, loadProgress));
        store = backend.store();
        leadership = backend.leadership();
        ledger = backend.ledger();
        startup = configure(startup);
        MetaBackend kind = backend;
        registry = new Registry(store, startup, kind::view);
        registry.slotsFactory((id, st) -> kind.slots(id, st.number, st.keyCountPerFile));
        LOG.infof("index store: %s", provider.describe());
        WritePath.Settings ws = new WritePath.Settings(cfg.write().defaultTimeoutSeconds(), cfg.write().maxTimeoutSeconds());
        deletions = new Deletions(registry, ledger);
        write = new WritePath(registry, ledger, deletions, ws);
        recovery = new Recovery(registry, ledger, deletions);
        deletions.bindTo(meters);
        write.bindTo(meters);
        query = new QueryPath(registry);
        if (cfg.events().bootstrapServers().filter(b -> !b.isBlank()).isPresent()) {
            events = new CacheEvents(cfg.events().bootstrapServers().get(), nodeId, cfg.events().queueCapacity(),
                    KafkaClientConfig.load(cfg.kafkaClientConfigDir()));
            LOG.infof("publishing operations to Kafka topic kvpool.cache at %s", cfg.events().bootstrapServers().get());
        }
        events.bindTo(meters); // each component registers its own meters
        reclaimer = new Reclaimer(registry, ledger, deletions, recovery, leadership::isLeader, this::evicted,
                new Reclaimer.Settings(cfg.reclaim().exactLimit(), cfg.reclaim().sampleSize(),
                        // past the longest write and the backend's session lifetime a WRITING location nobody names is
                        // an orphan (embedded sessions are journaled: never)
                        backend.orphanWritingAfter() == null ? 0
                                : cfg.write().maxTimeoutSeconds() + backend.orphanWritingAfter().toSeconds(),
                        cfg.reclaim().queueLimit(), cfg.reclaim().passPage()));
        reclaimer.sweepAfterLostReplicas(leadership);
        reclaimer.dutyCycle(cfg.reclaim().dutyCycle());
        reclaimer.auditEvery(cfg.reclaim().usageAudit());
        reclaimer.bindTo(meters);
        java.time.Duration orphanAge = cfg.files().orphanAge();
        java.time.Duration floor = java.time.Duration.ofSeconds(cfg.write().maxTimeoutSeconds() + 60L);
        if (orphanAge.compareTo(floor) < 0) {
            LOG.warnf("kvpool.meta.files.orphan-age %s is shorter than the longest write timeout plus a minute; "
                    + "using %s", orphanAge, floor);
            orphanAge = floor;
        }
        fileSweep = new dev.kvpool.meta.reclaim.FileSweep(registry, leadership::isLeader,
                new dev.kvpool.meta.reclaim.FileSweep.Settings(cfg.files().sweepInterval(), orphanAge));
        fileSweep.bindTo(meters);
        setUpAuth(); // before ready: a call must never pass unchecked
        backend.bindTo(meters);
        registerGauges();
    }

    /**
     * Start-up off the Quarkus start: opens the plane, then finds this replica's place in a cold start (rebuild, or
     * wait for the replica that does), rebuilds, joins; then background work starts and calls are served.
     */
    private void openAndServe(long t0, Path dataDir) {
        try {
            open(dataDir);
            Leadership lead = leadership;
            boolean shared = store.shared();
            if (shared) {
                phase = Phase.WAITING_FOR_REBUILD;
            }
            // alone: a cold start of the whole cluster, so usage and slots are rebuilt from the index
            Leadership.Startup begun = lead.begin();
            boolean rebuild = begun.rebuild();
            if (shared) {
                LOG.info(rebuild ? "first replica: rebuilding usage and slots from the index" : "joining running replicas");
            }
            try {
                if (rebuild) { // alone with the store; a replica that joins others reads no index
                    phase = Phase.REBUILDING;
                    indexLoaded.countDown();
                    recovery.recover(cfg.recoveryThreads());
                } else {
                    phase = Phase.JOINING;
                }
                lead.start(); // listed as a member before the rebuild claim goes: later replicas join
            } finally {
                begun.close();
            }
            if (controlPlane != null) {
                controlPlane.onStorageDeleted(this::dropStorageBlocks);
                controlPlane.start(registry, ledger, leadership::isLeader, this::dropInstance);
                setUpFresh();
                statsReporter = new dev.kvpool.meta.stats.StatsReporter(stats, controlPlane.client()::post,
                        replicaInfo(), id -> registry.instance(id) != null, cfg.controlPlane().usagePeriod(),
                        cfg.controlPlane().statsCarry()).start();
            }
            registerGauges();
            phase = Phase.READY; // calls are served from here on
            serveBackgroundWork();
            LOG.infof("KVPool metadata plane ready in %d ms: data %s, %d storages, %d groups, %d instances; KVCM meta "
                    + "HTTP :%d, gRPC :%d", (System.nanoTime() - t0) / 1_000_000, dataDir, registry.storages().size(),
                    registry.groups().size(), registry.instances().size(), httpPort(), grpcPort());
        } catch (Throwable e) {
            boolean exit;
            synchronized (startLock) {
                startFailure = e;
                phase = Phase.FAILED;
                exit = detached;
            }
            if (stopping) {
                LOG.infof("start-up abandoned: stopping (%s)", e.toString());
            } else if (exit) { // ports already open: nothing else ends the process, and a restart may fare better
                LOG.error("start-up failed while recovering; exiting", e);
                io.quarkus.runtime.Quarkus.asyncExit(1);
            }
        } finally {
            indexLoaded.countDown();
            recovered.countDown();
        }
    }

    /** The reclaimer, session expiry and instance reconciliation, once calls are served. */
    private void serveBackgroundWork() {
        if (cfg.reclaim().enabled()) {
            reclaimer.start();
        }
        fileSweep.start();
        long period = cfg.write().expiryPeriod().toMillis();
        var expiryFailures = new FailureLog(LOG, "session expiry", java.time.Duration.ofSeconds(30),
                StoreException.class::isInstance);
        expiry.scheduleWithFixedDelay(() -> {
            try {
                if (expireSessions()) {
                    expiryFailures.ok();
                }
            } catch (RuntimeException e) {
                expiryFailures.failed(e);
            }
        }, period, period, java.util.concurrent.TimeUnit.MILLISECONDS);
        if (backend.reconcileEvery() != null) {
            // every replica, not only the leader: instances removed elsewhere, or lost with the store's data
            var reconcileFailures = new FailureLog(LOG, "instance reconciliation with the store",
                    java.time.Duration.ofSeconds(30), StoreException.class::isInstance);
            long every = backend.reconcileEvery().toMillis();
            expiry.scheduleWithFixedDelay(() -> {
                try {
                    registry.reconcile(null);
                    reconcileFailures.ok();
                } catch (RuntimeException e) {
                    reconcileFailures.failed(e);
                }
            }, every, every, java.util.concurrent.TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Start-up as the health checks show it: the phase, the replica waited for, and the rebuild's progress (keys
     * read of those the indexes held when it began).
     */
    public java.util.Map<String, Object> startState() {
        var m = new java.util.LinkedHashMap<String, Object>();
        Phase ph = phase();
        m.put("start_phase", ph.label);
        if (ph != Phase.READY) {
            m.put("start_elapsed_s", (System.currentTimeMillis() - startedAtMs) / 1000);
        }
        String rebuilder = leadership == null ? null : leadership.awaitingRebuildBy();
        if (ph == Phase.WAITING_FOR_REBUILD && rebuilder != null) {
            m.put("rebuilt_by", rebuilder);
        }
        if (ph == Phase.LOADING && loadProgress.total() > 0) {
            m.put("load_bytes_read", loadProgress.read());
            m.put("load_bytes_total", loadProgress.total());
            m.put("load_percent", Math.min(100, loadProgress.read() * 100 / loadProgress.total()));
        }
        var pr = recovery == null ? null : recovery.recoveryProgress();
        if (pr != null && ph == Phase.REBUILDING) {
            m.put("rebuild_keys_read", pr.keys());
            m.put("rebuild_keys_total", pr.totalKeys());
            m.put("rebuild_percent", pr.totalKeys() == 0 ? 100 : Math.min(100, pr.keys() * 100 / pr.totalKeys()));
            m.put("rebuild_instances_done", pr.instancesDone());
            m.put("rebuild_instances", pr.instances());
        }
        return m;
    }

    /** The phase; while the backend opens, LOADING once it reports a load (a store that keeps its index in memory). */
    public Phase phase() {
        Phase ph = phase;
        return ph == Phase.OPENING && loadProgress.total() > 0 ? Phase.LOADING : ph;
    }

    /** With kvpool.meta.control-plane.url: the configuration comes from the control plane (or its persisted copy). */
    private StartupConfig configure(StartupConfig fromFile) {
        var cp = cfg.controlPlane();
        if (cp.url().filter(u -> !u.isBlank()).isEmpty()) {
            return fromFile;
        }
        if (cfg.startupConfig().filter(x -> !x.isBlank()).isPresent()) {
            LOG.warnf("kvpool.meta.startup-config is ignored: the configuration comes from the control plane %s",
                    cp.url().get());
        }
        ControlPlaneClient client = new ControlPlaneClient(cp.url().get(), cp.user().orElse(null),
                cp.password().orElse(null), cp.token().orElse(null), cp.timeout());
        String kafka = cp.kafkaBootstrap().filter(b -> !b.isBlank())
                .or(() -> cfg.events().bootstrapServers().filter(b -> !b.isBlank())).orElse(null);
        controlPlane = new ControlPlaneSync(client, store,
                new ControlPlaneSync.Settings(kafka, cp.resync(), cp.usagePeriod(),
                        KafkaClientConfig.load(cfg.kafkaClientConfigDir())));
        return controlPlane.initial();
    }

    /** An instance deleted in the control plane: its blocks are freed (bytes, slots, usage), then it is forgotten. */
    /** A storage deleted in the control plane: its blocks released (one replica of a shared store suffices). */
    private void dropStorageBlocks(String name) {
        dev.kvpool.meta.storage.Storage st = registry.storage(name);
        if (st != null && (!registry.sharedStore() || leadership.isLeader())) {
            deletions.removeBlocksOn(st);
        }
    }

    private boolean dropInstance(String id) {
        Instance inst = registry.instance(id);
        if (inst == null) {
            return false;
        }
        try {
            deletions.removeEverything(inst);
            deletions.drain();
        } catch (RuntimeException e) {
            LOG.warnf("instance %s: freeing its blocks failed (%s); forgetting it anyway", id, e.toString());
        }
        return registry.remove(id) != null;
    }

    /**
     * Tokens are checked when the control plane manages this plane or a public key is configured: with the control
     * plane's JWKS (persisted in the store, so a restart without the control plane still verifies) and its
     * revocation feed.
     */
    private void setUpAuth() {
        var ac = cfg.auth();
        var configured = ac.publicKey().filter(k -> !k.isBlank());
        if (controlPlane == null && configured.isEmpty()) {
            return;
        }
        if (configured.isPresent()) {
            java.security.PublicKey pinned = dev.kvpool.api.auth.JwtTokens.publicKey(configured.get());
            auth = new MetaAuth(registry, controlPlane == null ? g -> false : controlPlane::allowAnonymous,
                    dev.kvpool.meta.auth.TokenKeys.pinned(pinned), revocationFeed(), ac.issuer());
            LOG.info("bearer tokens checked on KVCM meta calls and /api/v1 (key pinned by kvpool.meta.auth.public-key)");
            return;
        }
        ControlPlaneClient client = controlPlane.client();
        IndexStore st = store;
        dev.kvpool.meta.auth.TokenKeys.Source source = () -> {
            try {
                var r = client.get("/api/v1/auth/jwks");
                if (r.ok() && r.body().has("keys")) {
                    st.putRecord("control-plane", "jwks", r.body().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    return dev.kvpool.api.auth.JwtTokens.parseJwks(r.body());
                }
                LOG.warnf("GET %s/api/v1/auth/jwks answered HTTP %d", client.url, r.status());
            } catch (java.io.IOException | RuntimeException e) {
                LOG.warnf("cannot fetch the token signing keys from %s: %s", client.url, e.toString());
            }
            return null;
        };
        java.util.Map<String, java.security.PublicKey> saved = java.util.Map.of();
        byte[] rec = store.records("control-plane").get("jwks");
        if (rec != null) {
            try {
                saved = dev.kvpool.api.auth.JwtTokens.parseJwks(ControlPlaneClient.JSON.readTree(rec));
            } catch (java.io.IOException e) {
                LOG.warnf("the saved JWKS is unreadable: %s", e.toString());
            }
        }
        var keys = new dev.kvpool.meta.auth.TokenKeys(null, source, saved, ac.jwksMinRefetch());
        if (!keys.refresh() && !keys.known()) {
            LOG.warn("token signing keys unknown: calls with tokens are refused until the control plane answers");
        }
        keys.refreshEvery(ac.jwksRefresh());
        auth = new MetaAuth(registry, controlPlane::allowAnonymous, keys, revocationFeed(), ac.issuer());
        LOG.infof("bearer tokens checked on KVCM meta calls and /api/v1 (JWKS and revocations from %s)", client.url);
    }

    /** The control plane's revocation feed, polled in the background; null without a control plane. */
    private dev.kvpool.meta.auth.RevocationFeed revocationFeed() {
        if (controlPlane == null) {
            return null;
        }
        ControlPlaneClient client = controlPlane.client();
        var feed = new dev.kvpool.meta.auth.RevocationFeed(since -> {
            var r = client.get("/api/v1/auth/revocations?since=" + since);
            if (!r.ok()) {
                throw new java.io.IOException("GET /api/v1/auth/revocations answered HTTP " + r.status() + " " + r.detail());
            }
            return r.body();
        });
        feed.poll(); // before ready: known revocations are in force from the first call
        feed.pollEvery(cfg.auth().revocationPoll());
        return feed;
    }

    public MetaAuth auth() {
        return auth;
    }

    private volatile dev.kvpool.meta.config.FreshConfig fresh;

    /** Fresh configuration for calls that name something unknown; null without a control plane. */
    public dev.kvpool.meta.config.FreshConfig fresh() {
        return fresh;
    }

    /** After the control plane's sync has started: unknown names in KVCM calls fetch its snapshot (issue 34). */
    private void setUpFresh() {
        var cp = cfg.controlPlane();
        ControlPlaneSync sync = controlPlane;
        var f = new dev.kvpool.meta.config.FreshConfig(() -> sync.resync("a KVCM call names a group or instance not "
                + "known here"), new dev.kvpool.meta.config.FreshConfig.Settings(cp.freshWait(), cp.freshMinInterval(),
                cp.freshNegativeTtl(), Math.max(1, cp.freshNegativeMax())), System::currentTimeMillis,
                java.util.concurrent.Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("kvpool-fresh-config", 0)
                        .factory()));
        f.bindTo(meters);
        fresh = f;
    }

    public ControlPlaneSync controlPlane() {
        return controlPlane;
    }

    void stop(@Observes ShutdownEvent ev) {
        stopping = true;
        phase = Phase.STOPPING;
        Thread st = starter;
        if (st != null && st.isAlive()) { // stopped mid-recovery: its claim goes, so another replica can rebuild
            st.interrupt();
            try {
                st.join(15_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        phase = Phase.STOPPING; // again: a start that ended meanwhile may have set READY
        if (statsReporter != null) {
            statsReporter.close();
        }
        if (controlPlane != null) {
            controlPlane.close();
        }
        expiry.shutdownNow();
        if (reclaimer != null) {
            reclaimer.close();
        }
        if (fileSweep != null) {
            fileSweep.close();
        }
        events.close();
        // purges whose reader lease is running finish here rather than lapse with the process; any left are
        // reported before this replica leaves, so the leader sweeps for them
        if (deletions != null && !deletions.finishDeletions(10_000) && leadership != null && store.shared()) {
            LOG.warn("stopping with deletions whose reader lease had not run out: the leader sweeps for them");
            leadership.reportUnfinished();
        }
        if (leadership != null) {
            leadership.close();
        }
        if (deletions != null) {
            deletions.close();
        }
        if (backend != null) {
            backend.close();
        }
    }

    /** Sub-second on purpose (Quarkus' scheduler works in whole seconds): a session expires within ~250 ms. */
    private final java.util.concurrent.ScheduledExecutorService expiry =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "kvpool-session-expiry");
                t.setDaemon(true);
                return t;
            });

    /** True when this replica ran the expiry (it is the leader). */
    boolean expireSessions() {
        if (ready() && leadership.isLeader()) {
            int n = write.expire(System.currentTimeMillis());
            if (n > 0) {
                LOG.debugf("expired %d write sessions", n);
            }
            registerGauges();
            return true;
        }
        return false;
    }

    /** Reclaimer listener: the control plane's stats, and an Evict event per batch (the reclaimer counts its own). */
    private void evicted(Instance inst, ReclaimPolicy policy, Reclaimer.Reason reason, long[] keys, int blocks,
                         long bytes) {
        stats.evicted(inst, reason, blocks);
        if (events.enabled()) {
            events.offer(new CacheEvent(CacheEvent.EVICT, inst.id, CacheEvents.nowMicros(), null, keys, null, null,
                    blocks, bytes, reason.name().toLowerCase(java.util.Locale.ROOT), null));
        }
    }

    /** The runtime's own meters once (leader); the registry's for groups and instances that appeared since. */
    private synchronized void registerGauges() {
        if (registryMeters == null) {
            Gauge.builder("kvpool.meta.leader", this, r -> r.leadership.isLeader() ? 1 : 0)
                    .tag("node", leadership.selfId())
                    .description("1 on the replica that runs background work (reclaimer, expiry)").register(meters);
            registryMeters = new dev.kvpool.meta.registry.RegistryMeters(registry, ledger, meters);
        } else {
            registryMeters.refresh();
        }
    }

    /**
     * How this replica describes itself in its stats reports (GET /api/v1/services on the control plane): node id,
     * advertised URL, leader flag, store kind, version, start time, instance and key counts (read per report).
     */
    private java.util.function.Supplier<dev.kvpool.meta.stats.StatsReporter.ReplicaInfo> replicaInfo() {
        String host = advertisedHost();
        String url = "http://" + (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":"
                + httpPort();
        String version = org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.application.version", String.class).orElse(null);
        java.time.Instant started = java.time.Instant.ofEpochMilli(startedAtMs);
        return () -> {
            long keys = 0;
            var all = registry.instances();
            for (Instance i : all) {
                try {
                    keys += Math.max(0, i.index.keyCount());
                } catch (RuntimeException e) {
                    LOG.debugf("key count of %s for the stats report: %s", i.id, e.toString());
                }
            }
            return new dev.kvpool.meta.stats.StatsReporter.ReplicaInfo(nodeId, url, leadership.isLeader(),
                    store.kind(), version, started, all.size(), keys);
        };
    }

    private String defaultNodeId() {
        return advertisedHost() + ":" + httpPort() + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    }

    /**
     * The ports Quarkus binds, which GetClusterInfo advertises: kvpool.meta.http-port feeds quarkus.http.port, but an
     * operator may set the Quarkus property (or QUARKUS_HTTP_PORT) directly, and tests bind the test ports.
     */
    public int httpPort() {
        return boundPort("quarkus.http", "port", cfg.httpPort());
    }

    public int grpcPort() {
        return boundPort("quarkus.grpc.server", "port", cfg.grpcPort());
    }

    private static int boundPort(String prefix, String name, int fallback) {
        var c = org.eclipse.microprofile.config.ConfigProvider.getConfig();
        String key = prefix + "." + (io.quarkus.runtime.LaunchMode.current() == io.quarkus.runtime.LaunchMode.TEST
                ? "test-" + name : name);
        return c.getOptionalValue(key, Integer.class).orElse(fallback);
    }

    /** kvcm.service.advertised_host, else the first non-loopback IPv4 address (§B.1). */
    public String advertisedHost() {
        if (cfg.advertisedHost().isPresent() && !cfg.advertisedHost().get().isBlank()) {
            return cfg.advertisedHost().get();
        }
        try {
            for (NetworkInterface nif : java.util.Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!nif.isUp() || nif.isLoopback()) {
                    continue;
                }
                for (InetAddress a : java.util.Collections.list(nif.getInetAddresses())) {
                    if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                        return a.getHostAddress();
                    }
                }
            }
        } catch (java.net.SocketException e) {
            LOG.debug("cannot list network interfaces", e);
        }
        return "127.0.0.1";
    }

    /** The index lives outside this process: calls block on the network. */
    public boolean remoteStore() {
        return store != null && store.remote();
    }

    /**
     * Whether an event loop takes getCacheLocation's asynchronous path: over a remote store, for an instance this
     * replica already knows (an unknown id's lookup may read the store, so that call goes to a worker). Over the
     * embedded store every call is in memory and the plain path answers on the loop.
     */
    public boolean locatesAsync(String instanceId) {
        return remoteStore() && registry.instance(instanceId) != null;
    }

    public dev.kvpool.meta.reclaim.FileSweep fileSweep() {
        return fileSweep;
    }

    public Reclaimer reclaimer() {
        return reclaimer;
    }

    public Leadership leadership() {
        return leadership;
    }

    public CacheEvents events() {
        return events;
    }

    /** What this replica served and evicted per instance, for the control plane's stats reports. */
    public dev.kvpool.meta.stats.StatsCounters stats() {
        return stats;
    }

    public QueryPath query() {
        return query;
    }

    public Registry registry() {
        return registry;
    }

    public WritePath write() {
        return write;
    }

    public Deletions deletions() {
        return deletions;
    }

    public Recovery recovery() {
        return recovery;
    }

    public QuotaLedger ledger() {
        return ledger;
    }

    public IndexStore store() {
        return store;
    }

    public boolean ready() {
        return phase == Phase.READY;
    }

    /**
     * Whether KVCM lookups (GetCacheLocation and the other reads) are answered: from the moment the index is loaded
     * and this replica rebuilds usage and slots from it, as well as once ready. A lookup reads only the registry and
     * the index, both complete by then; what the rebuild restores (quota usage, free file slots, interrupted
     * deletions) only writes, removals and registrations use, and those wait for ready. A replica that joins running
     * ones reads no index and answers everything at once when it is ready.
     */
    public boolean lookupsOpen() {
        Phase ph = phase;
        return ph == Phase.READY || ph == Phase.REBUILDING;
    }
}
