package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.api.events.Topics;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.kvcm.KvcmError;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.reclaim.ReclaimConfig;
import dev.kvpool.meta.reclaim.ReclaimPolicy;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.storage.StorageKind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jboss.logging.Logger;

/**
 * Takes the metadata plane's configuration from the control plane: the snapshot ({@code GET
 * /api/v1/config/snapshot}) at start-up, then the {@code kvpool.config} topic (a record applies only when its
 * {@code ce_position} is beyond the last applied position), and a periodic resync that re-reads the snapshot (also
 * soon after a gap in positions). The last applied configuration is kept in the index store's records, so a
 * restart while the control plane is down serves with it. Also registers instances there first, and (on the
 * leader) reports usage.
 */
public final class ControlPlaneSync implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ControlPlaneSync.class);
    public static final String TOPIC = Topics.CONFIG;
    static final String RECORDS = "control-plane", SNAPSHOT = "snapshot";

    /** {@code kafkaClient}: TLS/SASL settings of the consumer (KafkaClientConfig), none when empty. */
    public record Settings(String kafkaBootstrap, Duration resync, Duration usagePeriod,
                           Map<String, String> kafkaClient) {
    }

    private final ControlPlaneClient client;
    private final IndexStore store;
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
    private volatile Thread consumerThread;
    private volatile KafkaConsumer<String, String> consumer;
    private volatile boolean closed;
    private ScheduledFuture<?> pendingResync;
    private volatile boolean synced;

    public ControlPlaneSync(ControlPlaneClient client, IndexStore store, Settings settings) {
        this.client = client;
        this.store = store;
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
        byte[] saved = store.records(RECORDS).get(SNAPSHOT);
        if (saved != null) {
            try {
                ControlPlaneClient.JSON.readTree(saved).path("instances")
                        .forEach(i -> knownBefore.add(i.path("instanceId").asText()));
            } catch (IOException | RuntimeException e) {
                LOG.warnf("the persisted control-plane configuration is unreadable: %s", e.toString());
            }
        }
        long backoff = 500;
        for (int attempt = 1; ; attempt++) {
            try {
                JsonNode snap = fetchSnapshot();
                load(snap);
                synced = true;
                LOG.infof("configuration from the control plane %s: snapshot position %d, %d storages, %d groups, "
                        + "%d instances", client.url, position, storages.size(), groups.size(), instances.size());
                return startupConfig();
            } catch (IOException | RuntimeException e) {
                if (saved != null) {
                    try {
                        load(ControlPlaneClient.JSON.readTree(saved));
                    } catch (IOException | RuntimeException bad) {
                        throw new IllegalStateException("the persisted control-plane configuration is unreadable", bad);
                    }
                    LOG.warnf("control plane %s unreachable (%s): serving with the last configuration received "
                            + "(position %d, %d storages, %d groups); retrying in the background", client.url,
                            e.toString(), position, storages.size(), groups.size());
                    return startupConfig();
                }
                LOG.errorf("control plane %s unreachable and no configuration received yet (attempt %d: %s); the "
                        + "metadata plane waits for it, retrying in %d ms", client.url, attempt, e.toString(), backoff);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the control plane", ie);
                }
                backoff = Math.min(backoff * 2, 15_000);
            }
        }
    }

    private JsonNode fetchSnapshot() throws IOException {
        ControlPlaneClient.Reply r = client.get("/api/v1/config/snapshot");
        if (!r.ok()) {
            throw new IOException("GET /api/v1/config/snapshot answered HTTP " + r.status() + ": " + r.detail());
        }
        if (!r.body().has("position")) {
            throw new IOException("GET /api/v1/config/snapshot: no position in " + r.body());
        }
        return r.body();
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
        List<StartupConfig.StorageDef> defs = new ArrayList<>();
        List<EventReportStorage> reports = new ArrayList<>();
        Set<String> disabled = new LinkedHashSet<>();
        synchronized (this) {
            for (JsonNode s : storages.values()) {
                try {
                    if (isEventReport(s)) {
                        // a disabled one is not offered to reporters (ReportEvent finds no storage)
                        if (s.path("enabled").asBoolean(true)) {
                            reports.add(eventReportStorage(s));
                        }
                        continue;
                    }
                    defs.add(storageDef(s));
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
                    gs.add(groupConfig(g));
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
                registerRemotely(req, info);
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
            Thread t = new Thread(this::consume, "kvpool-config-consumer");
            t.setDaemon(true);
            consumerThread = t;
            t.start();
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
        long usageMs = Math.max(100, settings.usagePeriod().toMillis());
        timer.scheduleWithFixedDelay(() -> {
            if (leader.getAsBoolean()) {
                reportUsage(ledger);
            }
        }, Math.min(usageMs, 1000), usageMs, TimeUnit.MILLISECONDS); // the first soon: the console's gauges start filled
    }

    private synchronized void scheduleResync(long delayMs) {
        if (closed || (pendingResync != null && !pendingResync.isDone())) {
            return;
        }
        pendingResync = timer.schedule(() -> {
            if (!resync(synced ? "gap in positions" : "control plane was unreachable") && !synced) {
                synchronized (this) {
                    pendingResync = null;
                }
                scheduleResync(Math.min(30_000, delayMs * 2));
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
            snap = fetchSnapshot();
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

    // ---- the topic -------------------------------------------------------------------------------------------

    /** The config consumer's settings, plus the client security settings (disjoint keys: see KafkaClientConfig). */
    static Properties consumerProperties(Settings settings) {
        Properties p = new Properties();
        p.putAll(settings.kafkaClient() == null ? Map.of() : settings.kafkaClient());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.kafkaBootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kvpool-meta-config");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        return p;
    }

    private void consume() {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProperties(settings))) {
            consumer = c;
            List<TopicPartition> parts = List.of();
            boolean warned = false;
            while (!closed && parts.isEmpty()) {
                try {
                    List<PartitionInfo> infos = c.partitionsFor(TOPIC, Duration.ofSeconds(5));
                    if (infos != null) {
                        parts = infos.stream().map(i -> new TopicPartition(i.topic(), i.partition())).toList();
                    }
                } catch (WakeupException e) {
                    return;
                } catch (RuntimeException e) {
                    if (!warned) {
                        LOG.warnf("Kafka %s: topic %s not reachable yet (%s); retrying", settings.kafkaBootstrap(),
                                TOPIC, e.toString());
                        warned = true;
                    }
                }
                if (parts.isEmpty() && !closed) {
                    Thread.sleep(1000);
                }
            }
            if (closed) {
                return;
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            LOG.infof("following Kafka topic %s at %s (%d partitions) from configuration position %d", TOPIC,
                    settings.kafkaBootstrap(), parts.size(), position());
            while (!closed) {
                try {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        onRecord(r);
                    }
                } catch (WakeupException e) {
                    return;
                } catch (RuntimeException e) {
                    LOG.warnf("Kafka %s: %s", settings.kafkaBootstrap(), e.toString());
                    Thread.sleep(1000);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.error("the kvpool.config consumer stopped; configuration changes now arrive only with the resync", e);
            }
        }
    }

    void onRecord(ConsumerRecord<String, String> r) {
        Header h = r.headers().lastHeader("ce_position");
        if (h == null) {
            LOG.warnf("kvpool.config record at offset %d has no ce_position header; ignored", r.offset());
            return;
        }
        long pos;
        try {
            pos = Long.parseLong(new String(h.value(), StandardCharsets.UTF_8).trim());
        } catch (NumberFormatException e) {
            LOG.warnf("kvpool.config record at offset %d: bad ce_position; ignored", r.offset());
            return;
        }
        boolean gap;
        synchronized (this) {
            if (pos <= position) {
                return; // already in the snapshot or applied (at-least-once delivery)
            }
            gap = pos > position + 1;
            try {
                applyEvent(ControlPlaneClient.JSON.readTree(r.value()));
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
                if (deleted) {
                    groups.remove(name);
                    reg.removeGroup(name);
                } else {
                    groups.put(name, obj);
                    applyGroup(obj);
                }
                refreshAnonymous();
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
            if (isEventReport(s)) {
                String name = s.path("name").asText();
                if (registry.storage(name) != null) {
                    registry.disableStorage(name); // was a data storage of that name: nothing is written there now
                }
                if (s.path("enabled").asBoolean(true)) {
                    registry.putEventReportStorage(eventReportStorage(s));
                } else {
                    registry.removeEventReportStorage(name);
                }
                return;
            }
            registry.removeEventReportStorage(s.path("name").asText());
            registry.putStorage(storageDef(s), s.path("enabled").asBoolean(true));
        } catch (RuntimeException e) {
            LOG.errorf("storage %s from the control plane is not usable here: %s", s.path("name").asText(), e.getMessage());
        }
    }

    private void applyGroup(JsonNode g) {
        try {
            registry.putGroup(groupConfig(g));
        } catch (RuntimeException e) {
            LOG.errorf("instance group %s from the control plane is not usable here: %s", g.path("name").asText(),
                    e.getMessage());
        }
    }

    private void adopt(JsonNode i) {
        try {
            registry.adopt(instanceInfo(i));
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
        try {
            store.putRecord(RECORDS, SNAPSHOT, doc.toString().getBytes(StandardCharsets.UTF_8));
        } catch (RuntimeException e) {
            LOG.warnf("could not persist the control-plane configuration: %s", e.toString());
        }
    }

    // ---- conversions -----------------------------------------------------------------------------------------

    static boolean isEventReport(JsonNode s) {
        return StartupConfig.isEventReport(s.path("type").asText(""));
    }

    /** An event-report storage REST view ({name, type, spec with the five durations}). */
    static EventReportStorage eventReportStorage(JsonNode s) {
        ObjectNode n = ControlPlaneClient.JSON.createObjectNode();
        n.put("global_unique_name", s.path("name").asText());
        n.put("type", s.path("type").asText());
        n.set("storage_spec", s.path("spec").isObject() ? s.get("spec") : ControlPlaneClient.JSON.createObjectNode());
        return StartupConfig.eventReportStorage(n);
    }

    /** A storage REST view ({name, type, enabled, spec}) as a KVCM-shaped storage definition. */
    static StartupConfig.StorageDef storageDef(JsonNode s) {
        ObjectNode n = ControlPlaneClient.JSON.createObjectNode();
        n.put("global_unique_name", s.path("name").asText());
        n.put("type", s.path("type").asText());
        n.set("storage_spec", s.path("spec").isObject() ? s.get("spec") : ControlPlaneClient.JSON.createObjectNode());
        return StartupConfig.storage(n);
    }

    /**
     * A group REST view: the KVCM form ({@code kvcm}) for what only KVCM has (prefer strategy, indexer settings),
     * KVPool's columns for the rest: hard water level → enforced capacity = quota × hard / 100, soft water level →
     * used_percentage, eviction policy and parameters.
     */
    static GroupConfig groupConfig(JsonNode v) {
        String name = v.path("name").asText();
        ObjectNode kvcm = v.path("kvcm").isObject() ? ((ObjectNode) v.get("kvcm")).deepCopy()
                : ControlPlaneClient.JSON.createObjectNode();
        kvcm.put("name", name);
        // candidates and quotas come from the columns below; keep the KVCM parse from failing on them
        ArrayNode cands = kvcm.putArray("storage_candidates");
        v.path("storageCandidates").forEach(c -> cands.add(c.asText()));
        ObjectNode quota = kvcm.putObject("quota");
        quota.put("capacity", Math.max(1, v.path("quotaBytes").asLong(1)));
        GroupConfig base = StartupConfig.group(kvcm);
        long quotaBytes = v.path("quotaBytes").asLong();
        int hard = v.path("waterLevels").path("hardPercent").asInt(100);
        int soft = v.path("waterLevels").path("softPercent").asInt(0);
        long capacity = Math.max(1, hard > 0 ? quotaBytes / 100 * hard + quotaBytes % 100 * hard / 100 : quotaBytes);
        Map<StorageKind, Long> types = new EnumMap<>(StorageKind.class);
        v.path("storageTypeQuotas").fields().forEachRemaining(e ->
                types.merge(StorageKind.parse(e.getKey()).usageKind(), e.getValue().asLong(), Long::sum));
        JsonNode ev = v.path("eviction");
        ReclaimConfig k = base.reclaim();
        ReclaimConfig r = new ReclaimConfig(
                ev.hasNonNull("policy") ? ReclaimPolicy.parse(ev.get("policy").asText()) : k.policy(),
                soft / 100.0, k.usedSize(),
                ev.has("triggerPeriodSeconds") ? ev.path("triggerPeriodSeconds").asLong() * 1000 : k.triggerPeriodMs(),
                ev.has("stepSize") ? ev.path("stepSize").asLong() : k.stepSize(),
                ev.has("stepPercentage") ? ev.path("stepPercentage").asInt() : k.stepPercentage(),
                ev.has("readerLeaseMs") ? ev.path("readerLeaseMs").asLong() : k.delayBeforeDeleteMs(),
                ev.has("ttlSeconds") ? ev.path("ttlSeconds").asLong() : k.ttlSeconds(), k.lfuDecaySeconds());
        List<String> candidates = new ArrayList<>();
        v.path("storageCandidates").forEach(c -> candidates.add(c.asText()));
        List<String> reportCandidates = new ArrayList<>();
        v.path("eventReportStorageCandidates").forEach(c -> reportCandidates.add(c.asText()));
        String quotaGroup = v.path("quotaGroupName").asText("");
        return new GroupConfig(name, candidates, quotaGroup.isEmpty() ? base.quotaGroupName() : quotaGroup,
                v.path("maxInstanceCount").asLong(base.maxInstanceCount()), capacity, types, base.prefer(),
                base.maxKeyCount(), base.mutexShardNum(), base.searchCacheCapacity(), base.extraInfo(),
                v.path("userData").asText(base.userData()), v.path("version").asLong(base.version()), r,
                reportCandidates.isEmpty() ? base.eventReportStorageCandidates() : reportCandidates);
    }

    /** An instance REST view as the KVCM InstanceInfo the registry keeps. */
    static InstanceInfo instanceInfo(JsonNode v) {
        ObjectNode n = ControlPlaneClient.JSON.createObjectNode();
        n.put("quota_group_name", v.path("quotaGroupName").asText(""));
        n.put("instance_group_name", v.path("group").asText());
        n.put("instance_id", v.path("instanceId").asText());
        n.put("block_size", v.path("blockSize").asInt());
        if (v.path("locationSpecInfos").isArray()) {
            n.set("location_spec_infos", v.get("locationSpecInfos"));
        }
        if (v.path("modelDeployment").isObject()) {
            n.set("model_deployment", v.get("modelDeployment"));
        }
        if (v.path("locationSpecGroups").isArray()) {
            n.set("location_spec_groups", v.get("locationSpecGroups"));
        }
        InstanceInfo info = ProtoJson.merge(n.toString(), InstanceInfo.newBuilder()).build();
        return info.toBuilder().clearLocationSpecGroups()
                .addAllLocationSpecGroups(Registry.normalisedGroups(info.getLocationSpecGroupsList())).build();
    }

    // ---- registration and usage ------------------------------------------------------------------------------

    /**
     * Registers the instance in the control plane before it exists here (idempotent there). Its refusals become
     * the KVCM codes of §3.1.1; nothing is created locally then.
     */
    void registerRemotely(RegisterInstanceRequest req, InstanceInfo info) {
        ObjectNode body = ControlPlaneClient.JSON.createObjectNode();
        body.put("instanceId", req.getInstanceId());
        body.put("group", req.getInstanceGroup());
        body.put("blockSize", req.getBlockSize());
        String scheme = Instance.hashingOf(req.getModelDeployment().getExtra())[0];
        if (!"kvcm".equals(scheme)) {
            body.put("hashScheme", scheme);
        }
        try {
            JsonNode full = ControlPlaneClient.JSON.readTree(ProtoJson.print(info));
            body.set("modelDeployment", full.path("model_deployment"));
            body.set("locationSpecInfos", full.path("location_spec_infos").isArray() ? full.get("location_spec_infos")
                    : ControlPlaneClient.JSON.createArrayNode());
            body.set("locationSpecGroups", full.path("location_spec_groups").isArray()
                    ? full.get("location_spec_groups") : ControlPlaneClient.JSON.createArrayNode());
        } catch (IOException e) {
            throw KvcmError.internal("cannot encode the instance for the control plane: " + e.getMessage());
        }
        ControlPlaneClient.Reply r;
        try {
            r = client.post("/api/v1/instances", body);
        } catch (IOException e) {
            throw new KvcmError(ErrorCode.SERVICE_NOT_READY, "instance '" + req.getInstanceId()
                    + "' not registered: the control plane " + client.url + " is unreachable ("
                    + dev.kvpool.api.client.KvcmHttpClient.describe(e) + ")");
        }
        if (r.ok()) {
            // not into the model here: this runs under the registry's lock, the model's lock is taken before it
            // elsewhere; the Instance event (or the next resync) brings it
            registeredHere.put(req.getInstanceId(), System.nanoTime());
            return;
        }
        String why = "control plane refused instance '" + req.getInstanceId() + "': " + r.detail();
        String field = r.body().path("field").asText("");
        ErrorCode code = switch (r.status()) {
            case 409 -> field.equals("group") || why.contains("maxInstanceCount") || why.contains("full")
                    ? ErrorCode.REACH_MAX_ENTITY_CAPACITY : ErrorCode.DUPLICATE_ENTITY;
            case 400, 422 -> field.equals("group") ? ErrorCode.INTERNAL_ERROR : ErrorCode.INVALID_ARGUMENT;
            case 401, 403 -> ErrorCode.INTERNAL_ERROR;
            default -> ErrorCode.INTERNAL_ERROR;
        };
        throw new KvcmError(code, why);
    }

    /** One sample per group and storage type, from the usage ledger. */
    void reportUsage(QuotaLedger ledger) {
        Registry reg = registry;
        ArrayNode samples = ControlPlaneClient.JSON.createArrayNode();
        Set<String> known;
        synchronized (this) {
            known = new LinkedHashSet<>(groups.keySet());
        }
        String now = Instant.now().toString();
        for (String name : known) {
            GroupConfig g = reg.group(name);
            if (g == null) {
                continue;
            }
            Set<StorageKind> kinds = new LinkedHashSet<>();
            g.typeQuotas().keySet().forEach(k -> kinds.add(k.usageKind()));
            for (String c : g.storageCandidates()) {
                var st = reg.storage(c);
                if (st != null) {
                    kinds.add(st.kind.usageKind());
                }
            }
            QuotaLedger.Usage u = ledger.usage(name);
            if (kinds.isEmpty()) {
                kinds.add(StorageKind.FILE);
            }
            for (StorageKind k : kinds) {
                samples.addObject().put("group", name).put("storageType", k.scheme).put("usedBytes", u.byType(k))
                        .put("timestamp", now);
            }
        }
        if (samples.isEmpty()) {
            return;
        }
        ObjectNode body = ControlPlaneClient.JSON.createObjectNode();
        body.set("samples", samples);
        try {
            ControlPlaneClient.Reply r = client.post("/api/v1/usage", body);
            if (!r.ok()) {
                LOG.warnf("usage report refused by the control plane: HTTP %d %s", r.status(), r.detail());
            }
        } catch (IOException | RuntimeException e) {
            LOG.debugf("usage report failed: %s", e.toString());
        }
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        KafkaConsumer<String, String> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        Thread t = consumerThread;
        if (t != null) {
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
