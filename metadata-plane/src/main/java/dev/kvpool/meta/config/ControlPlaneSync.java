package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.retry.Backoff;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Takes the metadata plane's configuration from the control plane: the snapshot ({@code GET
 * /api/v1/config/snapshot}) at start-up, then the {@code kvpool.config} topic (a record applies only when its
 * {@code ce_position} is beyond the last applied position), and a periodic resync that re-reads the snapshot (also
 * soon after a gap in positions). The last applied configuration is kept in the index store's records, so a
 * restart while the control plane is down serves with it. Also registers instances there first, and (on the
 * leader) reports usage.
 *
 * <p>This class keeps the configuration as applied and applies snapshots and events to the registry; the jobs
 * around it are their own classes: {@link SnapshotSource} (fetching and persisting snapshots), {@link ConfigStream}
 * (the topic's consumer), {@link InstanceRegistration} and {@link UsageReporter}.
 */
public final class ControlPlaneSync implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ControlPlaneSync.class);
    public static final String TOPIC = ConfigStream.TOPIC;

    /** {@code kafkaClient}: TLS/SASL settings of the consumer (KafkaClientConfig), none when empty. */
    public record Settings(String kafkaBootstrap, Duration resync, Duration usagePeriod,
                           Map<String, String> kafkaClient) {
    }

    private final ControlPlaneClient client;
    private final SnapshotSource snapshots;
    private final InstanceRegistration registration;
    private final Settings settings;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kvpool-control-plane-sync");
        t.setDaemon(true);
        return t;
    });

    // the configuration as last applied: REST views by name, and the position it corresponds to
    private final Map<String, JsonNode> storages = new LinkedHashMap<>();
    private final Map<String, JsonNode> groups = new LinkedHashMap<>();
    private final Map<String, JsonNode> instances = new LinkedHashMap<>();
    private volatile Map<String, Boolean> anonymous = Map.of();
    private long position = -1;
    private volatile Instant appliedAt = Instant.EPOCH;
    /**
     * Instances registered through this process (System.nanoTime() of the control plane's answer) that no snapshot
     * has listed yet: a snapshot asked for before that answer must not remove them, one asked for after must.
     */
    private final Map<String, Long> registeredHere = new java.util.concurrent.ConcurrentHashMap<>();
    /** Releases every block on a storage deleted in the control plane (set by the runtime). */
    private volatile java.util.function.Consumer<String> purgeStorage = name -> { };

    public void onStorageDeleted(java.util.function.Consumer<String> purge) {
        this.purgeStorage = purge;
    }

    /** A storage deleted in the control plane: no longer used (done by the caller), and its blocks released. */
    private void storageDeleted(String name) {
        timer.execute(() -> { // a scan of every index: off the consumer thread and the model's lock
            try {
                purgeStorage.accept(name);
            } catch (RuntimeException e) {
                LOG.errorf(e, "releasing the blocks of deleted storage %s failed", name);
            }
        });
    }

    private volatile Registry registry;
    /** Drops an instance deleted in the control plane, its cached blocks included; true if it existed. */
    private volatile java.util.function.Predicate<String> removeInstance;
    private final java.util.concurrent.atomic.AtomicLong lastMissingResync = new java.util.concurrent.atomic.AtomicLong();
    private volatile ConfigStream stream;
    private volatile boolean closed;
    private ScheduledFuture<?> pendingResync;
    private volatile boolean synced;

    public ControlPlaneSync(ControlPlaneClient client, IndexStore store, Settings settings) {
        this.client = client;
        this.snapshots = new SnapshotSource(client, store);
        this.registration = new InstanceRegistration(client, id -> registeredHere.put(id, System.nanoTime()));
        this.settings = settings;
    }

    public String url() {
        return client.url;
    }

    public ControlPlaneClient client() {
        return client;
    }

    /** True once a snapshot from the control plane (not only the persisted copy) has been applied. */
    public boolean synced() {
        return synced;
    }

    public synchronized long position() {
        return position;
    }

    /** Whether token-less KVCM meta calls are allowed for the group (its allowAnonymousMeta). */
    public boolean allowAnonymous(String group) {
        return anonymous.getOrDefault(group, false);
    }

    // ---- start-up --------------------------------------------------------------------------------------------

    /**
     * The configuration to open with: the control plane's snapshot, retried with backoff; when it cannot be
     * reached but a configuration was persisted before, that one (resynced in the background later).
     */
    public StartupConfig initial() {
        byte[] saved = snapshots.saved();
        if (saved != null) {
            try {
                SnapshotSource.parse(saved).path("instances").forEach(i -> knownBefore.add(i.path("instanceId").asText()));
            } catch (IOException | RuntimeException e) {
                LOG.warnf("the persisted control-plane configuration is unreadable: %s", e.toString());
            }
        }
        try {
            load(snapshots.fetchAtStart(saved != null));
            synced = true;
            LOG.infof("configuration from the control plane %s: snapshot position %d, %d storages, %d groups, "
                    + "%d instances", client.url, position, storages.size(), groups.size(), instances.size());
            return startupConfig();
        } catch (IOException | RuntimeException e) {
            if (saved == null) {
                throw e instanceof RuntimeException re ? re : new IllegalStateException(e); // fetchAtStart waits
            }
            try {
                load(SnapshotSource.parse(saved));
            } catch (IOException | RuntimeException bad) {
                throw new IllegalStateException("the persisted control-plane configuration is unreadable", bad);
            }
            LOG.warnf("control plane %s unreachable (%s): serving with the last configuration received "
                    + "(position %d, %d storages, %d groups); retrying in the background", client.url,
                    e.toString(), position, storages.size(), groups.size());
            return startupConfig();
        }
    }

    /** Replaces the model with a snapshot document (the control plane's, or the persisted one). */
    private synchronized void load(JsonNode snap) {
        storages.clear();
        groups.clear();
        instances.clear();
        // a name the rules refuse is not taken, whoever sent it: it would reach paths, keys and logs
        snap.path("storages").forEach(n -> named(n, "name", Identifiers.Kind.STORAGE, storages));
        snap.path("instanceGroups").forEach(n -> named(n, "name", Identifiers.Kind.GROUP, groups));
        snap.path("instances").forEach(n -> named(n, "instanceId", Identifiers.Kind.INSTANCE, instances));
        position = snap.path("position").asLong();
        refreshAnonymous();
    }

    private static void named(JsonNode n, String field, Identifiers.Kind kind, Map<String, JsonNode> into) {
        String name = n.path(field).asText();
        String bad = Identifiers.problem(kind, name);
        if (bad != null) {
            LOG.errorf("the control plane's configuration holds %s '%s', refused here: %s", kind.what,
                    Text.safe(name), bad);
            return;
        }
        into.put(name, n);
    }

    private StartupConfig startupConfig() {
        List<dev.kvpool.meta.storage.StorageDef> defs = new ArrayList<>();
        List<EventReportStorage> reports = new ArrayList<>();
        Set<String> disabled = new LinkedHashSet<>();
        synchronized (this) {
            for (JsonNode s : storages.values()) {
                try {
                    if (ConfigViews.isEventReport(s)) {
                        // a disabled one is not offered to reporters (ReportEvent finds no storage)
                        if (s.path("enabled").asBoolean(true)) {
                            reports.add(ConfigViews.eventReportStorage(s));
                        }
                        continue;
                    }
                    defs.add(ConfigViews.storageDef(s));
                    if (!s.path("enabled").asBoolean(true)) {
                        disabled.add(s.path("name").asText());
                    }
                } catch (RuntimeException e) {
                    LOG.errorf("storage %s from the control plane is not usable here: %s", s.path("name").asText(),
                            e.getMessage());
                }
            }
            List<GroupConfig> gs = new ArrayList<>();
            for (JsonNode g : groups.values()) {
                try {
                    gs.add(ConfigViews.groupConfig(g));
                } catch (RuntimeException e) {
                    LOG.errorf("instance group %s from the control plane is not usable here: %s",
                            g.path("name").asText(), e.getMessage());
                }
            }
            this.disabledAtStart = disabled;
            return StartupConfig.of(defs, reports, gs);
        }
    }

    private Set<String> disabledAtStart = Set.of();
    /** Instances of the configuration persisted by the previous run. */
    private final Set<String> knownBefore = new LinkedHashSet<>();

    /** After the registry exists: disabled storages, instances, then the topic, the resync and usage reports. */
    public void start(Registry reg, QuotaLedger ledger, BooleanSupplier leader,
                      java.util.function.Predicate<String> removeInstance) {
        this.registry = reg;
        this.removeInstance = removeInstance;
        reg.managed(true);
        synchronized (this) {
            for (String name : disabledAtStart) {
                if (reg.storage(name) != null) {
                    reg.storage(name).setAvailable(false);
                }
            }
            for (JsonNode i : instances.values()) {
                adopt(i);
            }
            if (synced) {
                // deleted in the control plane while this plane was down
                for (String id : knownBefore) {
                    if (!instances.containsKey(id) && removeInstance.test(id)) {
                        LOG.infof("instance %s no longer exists in the control plane: removed", id);
                    }
                }
            }
            persist();
        }
        reg.registrationHook(new Registry.RegistrationHook() {
            @Override
            public void beforeCreate(RegisterInstanceRequest req, InstanceInfo info) {
                registration.register(req, info);
            }

            @Override
            public void groupMissing(String group) {
                long now = System.currentTimeMillis(), last = lastMissingResync.get();
                if (now - last > 5000 && lastMissingResync.compareAndSet(last, now)) {
                    resync("registration names unknown group '" + group + "'");
                }
            }
        });
        if (settings.kafkaBootstrap() != null && !settings.kafkaBootstrap().isBlank()) {
            ConfigStream s = new ConfigStream(settings, this::position, this::onRecord);
            stream = s;
            s.start();
        } else {
            LOG.warnf("no Kafka bootstrap for topic %s (kvpool.meta.control-plane.kafka-bootstrap or "
                    + "kvpool.meta.events.bootstrap-servers): configuration changes arrive only with the resync every %s",
                    TOPIC, settings.resync());
        }
        long resyncMs = Math.max(1000, settings.resync().toMillis());
        if (!synced) {
            scheduleResync(2000);
        }
        timer.scheduleWithFixedDelay(() -> resync("periodic"), resyncMs, resyncMs, TimeUnit.MILLISECONDS);
        new UsageReporter(client, reg, ledger, this::groupNames).start(timer, settings.usagePeriod(), leader);
    }

    /** The resyncs while the control plane has not been reached yet: 2 s, then doubled up to 30 s. */
    private static final Backoff UNREACHABLE = new Backoff(2000, 30_000);

    private synchronized void scheduleResync(long delayMs) {
        if (closed || (pendingResync != null && !pendingResync.isDone())) {
            return;
        }
        pendingResync = timer.schedule(() -> {
            if (!resync(synced ? "gap in positions" : "control plane was unreachable") && !synced) {
                synchronized (this) {
                    pendingResync = null;
                }
                scheduleResync(UNREACHABLE.after(delayMs));
            }
        }, delayMs, TimeUnit.MILLISECONDS);
    }

    /** Re-reads the snapshot and applies what differs; false when the control plane could not be reached. */
    public boolean resync(String why) {
        if (closed) {
            return false;
        }
        JsonNode snap;
        long fetchStart = System.nanoTime();
        try {
            snap = snapshots.fetch();
        } catch (IOException | RuntimeException e) {
            LOG.warnf("resync (%s) with the control plane %s failed: %s; still serving configuration position %d",
                    why, client.url, e.toString(), position());
            return false;
        }
        applySnapshot(snap, why, fetchStart);
        return true;
    }

    synchronized void applySnapshot(JsonNode snap, String why) {
        applySnapshot(snap, why, System.nanoTime() - 60_000_000_000L);
    }

    /** @param fetchStartNanos System.nanoTime() before the snapshot was asked for */
    synchronized void applySnapshot(JsonNode snap, String why, long fetchStartNanos) {
        long p = snap.path("position").asLong();
        if (synced && p < position) {
            // a snapshot is read after every event it could be compared with was committed: a lower position
            // means the control plane's database went back (restored or replaced); it is the truth now
            LOG.warnf("resync: the control plane's position %d is behind the applied %d (database restored?); "
                    + "taking its configuration as it is", p, position);
        }
        long before = position;
        Map<String, JsonNode> oldInstances = new LinkedHashMap<>(instances);
        Set<String> oldStorages = new LinkedHashSet<>(storages.keySet());
        Set<String> oldGroups = new LinkedHashSet<>(groups.keySet());
        load(snap);
        Registry reg = registry;
        for (JsonNode s : storages.values()) {
            applyStorage(s);
        }
        for (String gone : oldStorages) {
            if (!storages.containsKey(gone)) {
                if (reg.eventReportStorage(gone) != null) {
                    reg.removeEventReportStorage(gone);
                } else {
                    reg.disableStorage(gone); // at once: nothing is written there from here on; its blocks go below
                }
            }
        }
        for (JsonNode g : groups.values()) {
            applyGroup(g);
        }
        for (String gone : oldGroups) {
            if (!groups.containsKey(gone)) {
                reg.removeGroup(gone);
            }
        }
        for (JsonNode i : instances.values()) {
            adopt(i);
        }
        // an instance missing from the snapshot was deleted, unless it was registered here after the snapshot
        // was asked for (its creation may not be in it yet): that one is looked at again by a resync soon. The
        // ones registered here are candidates as well as the model's: the model learns of a registration only
        // from the topic or a resync, and a deletion before either must not leave the instance served for good
        Set<String> candidates = new LinkedHashSet<>(oldInstances.keySet());
        candidates.addAll(registeredHere.keySet());
        boolean deferred = false;
        for (String id : candidates) {
            if (instances.containsKey(id)) {
                registeredHere.remove(id); // in the control plane's snapshot: the model knows it from here on
                continue;
            }
            Long at = registeredHere.get(id);
            if (at != null && at - fetchStartNanos >= 0) {
                deferred = true;
                continue;
            }
            registeredHere.remove(id);
            if (removeInstance.test(id)) {
                LOG.infof("instance %s no longer exists in the control plane: removed", id);
            }
        }
        if (deferred) {
            scheduleResync(2000);
        }
        for (String gone : oldStorages) {
            if (!storages.containsKey(gone) && reg.storage(gone) != null) {
                storageDeleted(gone); // a data storage: its blocks are released (event-report ones hold none)
            }
        }
        boolean first = !synced;
        synced = true;
        appliedAt = Instant.now();
        persist();
        if (first || p != before) {
            LOG.infof("resync (%s): configuration at position %d%s", why, position, first ? " (first contact)" : "");
        } else {
            LOG.debugf("resync (%s): configuration at position %d, nothing missed", why, position);
        }
    }

    // ---- the topic ----------------------------------------------------------------------------------------------

    /** A record of the topic ({@link ConfigStream}): applied when beyond the applied position; a gap resyncs. */
    void onRecord(long pos, String value) {
        boolean gap;
        synchronized (this) {
            if (pos <= position) {
                return; // already in the snapshot or applied (at-least-once delivery)
            }
            gap = pos > position + 1;
            try {
                applyEvent(ControlPlaneClient.JSON.readTree(value));
            } catch (IOException | RuntimeException e) {
                LOG.errorf(e, "kvpool.config record at position %d could not be applied; a resync will repair it", pos);
                gap = true;
            }
            if (gap) {
                LOG.infof("kvpool.config: position %d follows %d (a gap): resync scheduled", pos, position);
            }
            position = pos;
            appliedAt = Instant.now();
            persist();
        }
        if (gap) {
            scheduleResync(2000);
        }
    }

    private void applyEvent(JsonNode ev) {
        String kind = ev.path("kind").asText(), name = ev.path("name").asText(), action = ev.path("action").asText();
        boolean deleted = "deleted".equals(action);
        JsonNode obj = ev.path("object");
        Registry reg = registry;
        switch (kind) {
            case "Storage" -> {
                if (deleted) {
                    storages.remove(name);
                    if (reg.eventReportStorage(name) != null) {
                        reg.removeEventReportStorage(name); // metadata only: no bytes live there
                    } else {
                        reg.disableStorage(name);
                        storageDeleted(name);
                    }
                } else {
                    storages.put(name, obj);
                    applyStorage(obj);
                }
            }
            case "InstanceGroup" -> {
                // the token rule first: a call waiting for this group (FreshConfig) proceeds the moment the registry
                // has it, and must find its allowAnonymousMeta (CI caught a call refused in that gap)
                if (deleted) {
                    groups.remove(name);
                    refreshAnonymous();
                    reg.removeGroup(name);
                } else {
                    groups.put(name, obj);
                    refreshAnonymous();
                    applyGroup(obj);
                }
            }
            case "Instance" -> {
                if (deleted) {
                    instances.remove(name);
                    registeredHere.remove(name);
                    if (removeInstance.test(name)) {
                        LOG.infof("instance %s deleted in the control plane: removed", name);
                    }
                } else {
                    instances.put(name, obj);
                    adopt(obj);
                }
            }
            default -> {
                // accounts: nothing to apply here (tokens carry roles and groups)
            }
        }
        LOG.debugf("applied %s %s %s (version %d)", kind, name, action, ev.path("version").asLong());
    }

    private void refreshAnonymous() {
        Map<String, Boolean> m = new HashMap<>();
        groups.forEach((k, v) -> m.put(k, v.path("allowAnonymousMeta").asBoolean(false)));
        anonymous = Map.copyOf(m);
    }

    private void applyStorage(JsonNode s) {
        try {
            if (ConfigViews.isEventReport(s)) {
                String name = s.path("name").asText();
                if (registry.storage(name) != null) {
                    registry.disableStorage(name); // was a data storage of that name: nothing is written there now
                }
                if (s.path("enabled").asBoolean(true)) {
                    registry.putEventReportStorage(ConfigViews.eventReportStorage(s));
                } else {
                    registry.removeEventReportStorage(name);
                }
                return;
            }
            registry.removeEventReportStorage(s.path("name").asText());
            registry.putStorage(ConfigViews.storageDef(s), s.path("enabled").asBoolean(true));
        } catch (RuntimeException e) {
            LOG.errorf("storage %s from the control plane is not usable here: %s", s.path("name").asText(), e.getMessage());
        }
    }

    private void applyGroup(JsonNode g) {
        try {
            registry.putGroup(ConfigViews.groupConfig(g));
        } catch (RuntimeException e) {
            LOG.errorf("instance group %s from the control plane is not usable here: %s", g.path("name").asText(),
                    e.getMessage());
        }
    }

    private void adopt(JsonNode i) {
        try {
            registry.adopt(ConfigViews.instanceInfo(i));
        } catch (RuntimeException e) {
            LOG.errorf("instance %s from the control plane is not usable here: %s", i.path("instanceId").asText(),
                    e.getMessage());
        }
    }

    private void persist() {
        ObjectNode doc = ControlPlaneClient.JSON.createObjectNode();
        doc.put("format", "kvpool-config-v1").put("position", position).put("savedAt", Instant.now().toString())
                .put("source", client.url);
        ArrayNode a = doc.putArray("storages");
        storages.values().forEach(a::add);
        a = doc.putArray("instanceGroups");
        groups.values().forEach(a::add);
        a = doc.putArray("instances");
        instances.values().forEach(a::add);
        snapshots.persist(doc);
    }

    /** The groups of the configuration as applied (what usage is reported for). */
    private synchronized Set<String> groupNames() {
        return new LinkedHashSet<>(groups.keySet());
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        ConfigStream s = stream;
        if (s != null) {
            s.close();
        }
    }
}
