package dev.kvpool.meta.registry;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpecGroup;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.storage.StorageDef;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Storages, instance groups and registered instances. Storage numbers and instance records are kept in the
 * index store, so a restart serves the same instances with the same locations.
 */
public final class Registry {
    private static final Logger LOG = Logger.getLogger(Registry.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String STORAGE_NUMBERS = "storage-number", INSTANCES = "instance", GROUP_RECLAIM = "group-reclaim";
    /** Instances removed on purpose (id → epoch ms), so other replicas sharing the store tell that from lost data. */
    static final String REMOVED = "instance-removed";

    private final IndexStore store;
    private final Function<String, dev.kvpool.meta.index.InstanceIndex> indexFactory;
    private final Map<String, Storage> storages = new ConcurrentHashMap<>();
    /** Indexed by storage number: every location read resolves its storage, so no boxing or hashing here. */
    private volatile Storage[] byNumber = new Storage[0];
    private final Map<String, GroupConfig> groups = new ConcurrentHashMap<>();
    /** Event-report storages: configuration only, never placement candidates (kvcm-engine-events.md §6.1). */
    private final Map<String, EventReportStorage> eventReportStorages = new ConcurrentHashMap<>();
    private final Map<String, Instance> instances = new ConcurrentHashMap<>();

    /**
     * How much later than the index this replica's query path may see a change (the store's local copy, if any):
     * deleters wait it on top of the reader lease.
     */
    public long readerStalenessMs() {
        return store.readerStalenessMs();
    }

    /** What a registry starts from: the storages, event-report storages and groups of a startup configuration. */
    public interface Initial {
        /** By name, in configuration order. */
        Map<String, StorageDef> storagesByName();

        List<EventReportStorage> eventReportStorages();

        List<GroupConfig> groups();
    }

    public Registry(IndexStore store, Initial config,
                    Function<String, dev.kvpool.meta.index.InstanceIndex> indexFactory) {
        this.store = store;
        this.indexFactory = indexFactory;
        for (StorageDef def : config.storagesByName().values()) {
            install(def.toStorage(numberOf(def.name())));
        }
        config.eventReportStorages().forEach(this::putEventReportStorage);
        for (GroupConfig g : config.groups()) {
            if (groups.put(g.name(), g) != null) {
                throw new IllegalArgumentException("instance group '" + g.name() + "' is defined twice");
            }
        }
        refresh();
    }

    /** The persisted number of a storage name, assigning and persisting the next free one for a new name. */
    private synchronized int numberOf(String name) {
        Map<String, byte[]> numbers = store.records(STORAGE_NUMBERS);
        byte[] n = numbers.get(name);
        if (n != null) {
            return Integer.parseInt(new String(n, StandardCharsets.UTF_8));
        }
        // the storages known here count too: after the store lost its records they are the only trace of theirs
        int number = Math.max(byNumber.length - 1, numbers.values().stream()
                .mapToInt(v -> Integer.parseInt(new String(v, StandardCharsets.UTF_8))).max().orElse(0)) + 1;
        if (number > Loc.MAX_STORAGE) {
            throw new IllegalStateException("too many storages (max " + Loc.MAX_STORAGE + ")");
        }
        store.putRecord(STORAGE_NUMBERS, name, Integer.toString(number).getBytes(StandardCharsets.UTF_8));
        return number;
    }

    private synchronized void install(Storage st) {
        storages.put(st.name, st);
        Storage[] grown = java.util.Arrays.copyOf(byNumber, Math.max(byNumber.length, st.number + 1));
        grown[st.number] = st;
        byNumber = grown;
    }

    // ---- runtime configuration (the control plane) ---------------------------------------------------------

    /** Set when the control plane owns the configuration: local reclaim overrides are then ignored. */
    private volatile boolean managed;

    public void managed(boolean m) {
        this.managed = m;
    }

    public boolean managed() {
        return managed;
    }

    /**
     * Adds or replaces a storage; {@code enabled = false} keeps it known (existing locations still resolve) but it
     * is neither chosen for writes nor served.
     */
    public synchronized void putStorage(StorageDef def, boolean enabled) {
        Storage have = storages.get(def.name());
        if (have != null && have.kind == def.kind() && have.basePath.equals(def.basePath())
                && have.keyCountPerFile == Math.max(1, def.keyCountPerFile()) && have.spec().equals(def.spec())) {
            if (have.available() != enabled) {
                have.setAvailable(enabled);
                LOG.infof("storage %s %s", def.name(), enabled ? "enabled" : "disabled");
            }
            return;
        }
        Storage st = new Storage(def.name(), def.kind(), have != null ? have.number : numberOf(def.name()),
                def.basePath(), def.keyCountPerFile(), def.spec(), enabled);
        install(st);
        LOG.infof("storage %s %s (%s, %s)%s", st.name, have == null ? "added" : "updated", st.kind.scheme,
                st.basePath, enabled ? "" : ", disabled");
    }

    /** A storage removed from the configuration: unavailable from now on; its number stays reserved. */
    public synchronized void disableStorage(String name) {
        Storage st = storages.get(name);
        if (st != null && st.available()) {
            st.setAvailable(false);
            LOG.infof("storage %s removed from the configuration: no longer used", name);
        }
    }

    /** Adds or replaces an instance group (quota, water levels, candidates ...); the reclaimer reads it next round. */
    public synchronized void putGroup(GroupConfig g) {
        GroupConfig old = groups.put(g.name(), g);
        if (old == null) {
            LOG.infof("instance group %s added (capacity %d, candidates %s, %s)", g.name(), g.capacity(),
                    g.storageCandidates(), g.reclaim());
        } else if (!old.equals(g)) {
            LOG.infof("instance group %s updated to version %d (capacity %d, candidates %s, %s)", g.name(),
                    g.version(), g.capacity(), g.storageCandidates(), g.reclaim());
        }
    }

    public synchronized void removeGroup(String name) {
        if (groups.remove(name) != null) {
            LOG.infof("instance group %s removed", name);
        }
    }

    /** Registers an instance the control plane knows, unless it is registered already. */
    public synchronized boolean adopt(InstanceInfo info) {
        if (instances.containsKey(info.getInstanceId())) {
            return false;
        }
        Identifiers.require(Identifiers.Kind.INSTANCE, "instance_id", info.getInstanceId());
        Instance inst = new Instance(info, indexFactory.apply(info.getInstanceId()));
        inst.slotsFactory(slots);
        putInstanceRecord(info);
        instances.put(inst.id, inst);
        LOG.infof("instance %s of group %s taken from the control plane", inst.id, inst.group);
        return true;
    }

    /** Called before an instance is created locally (the control plane registers it first); throws to refuse. */
    public interface RegistrationHook {
        /** Runs under the registry's lock: must not wait for anything that waits for the registry. */
        void beforeCreate(RegisterInstanceRequest req, InstanceInfo info);

        /** The requested group is not known here (yet): a chance to re-read the configuration. */
        default void groupMissing(String group) {
        }
    }

    private volatile RegistrationHook registrationHook;

    public void registrationHook(RegistrationHook h) {
        this.registrationHook = h;
    }

    /**
     * Picks up what other replicas sharing the store wrote: instances they registered and reclaim strategies
     * changed at runtime (a newer version wins). Cheap: two small record sections.
     */
    public synchronized void refresh() {
        lastRefreshNanos = System.nanoTime();
        for (Map.Entry<String, byte[]> e : store.records(INSTANCES).entrySet()) {
            if (instances.containsKey(e.getKey())) {
                continue;
            }
            try {
                InstanceInfo info = InstanceInfo.parseFrom(e.getValue());
                String bad = Identifiers.problem(Identifiers.Kind.INSTANCE, info.getInstanceId());
                if (bad != null) { // registered before ids were checked: never served, its paths could escape
                    if (refused.add(e.getKey())) {
                        LOG.errorf("instance record '%s' is not served: its id %s (docs/security.md)",
                                Text.safe(e.getKey()), bad);
                    }
                    continue;
                }
                Instance inst = new Instance(info, indexFactory.apply(info.getInstanceId()));
                inst.slotsFactory(slots);
                instances.put(info.getInstanceId(), inst);
            } catch (InvalidProtocolBufferException | RuntimeException ex) {
                LOG.errorf(ex, "skipping unreadable instance record '%s'", e.getKey());
            }
        }
        for (Map.Entry<String, byte[]> e : managed ? Map.<String, byte[]>of().entrySet()
                : store.records(GROUP_RECLAIM).entrySet()) {
            GroupConfig g = groups.get(e.getKey());
            if (g == null) {
                continue;
            }
            try {
                var n = JSON.readTree(e.getValue());
                long v = n.path("version").asLong();
                if (v > g.version()) {
                    groups.put(g.name(), g.withReclaim(ReclaimConfig.fromJson(n.path("reclaim_strategy")), v));
                }
            } catch (java.io.IOException | RuntimeException ex) {
                LOG.errorf(ex, "skipping unreadable reclaim record of group '%s'", e.getKey());
            }
        }
    }

    /**
     * Replaces a group's reclaim strategy (water levels, policy, steps) at runtime; the reclaimer reads it on its
     * next round. {@code expectedVersion} > 0 must equal the current version (optimistic concurrency).
     */
    public synchronized GroupConfig updateReclaim(String group, ReclaimConfig r, long expectedVersion) {
        refresh();
        GroupConfig g = groups.get(group);
        if (g == null) {
            throw new java.util.NoSuchElementException("instance group '" + group + "' does not exist");
        }
        if (expectedVersion > 0 && expectedVersion != g.version()) {
            throw new IllegalStateException("instance group '" + group + "' is at version " + g.version()
                    + ", not " + expectedVersion);
        }
        GroupConfig updated = g.withReclaim(r, g.version() + 1);
        putReclaimRecord(updated);
        groups.put(group, updated);
        LOG.infof("instance group %s: reclaim strategy now %s (version %d)", group, r, updated.version());
        return updated;
    }

    private void putReclaimRecord(GroupConfig g) {
        var rec = JSON.createObjectNode().put("version", g.version());
        rec.set("reclaim_strategy", g.reclaim().toJson());
        store.putRecord(GROUP_RECLAIM, g.name(), rec.toString().getBytes(StandardCharsets.UTF_8));
    }

    private volatile Instance.SlotsFactory slots = Instance.SlotsFactory.LOCAL;

    /** Where instances allocate file slots (shared in Redis when replicas share a store). */
    public synchronized void slotsFactory(Instance.SlotsFactory f) {
        this.slots = f;
        for (Instance i : instances.values()) {
            i.slotsFactory(f);
        }
    }

    private volatile long lastRefreshNanos;

    /**
     * {@link #refresh()} unless one ran within {@code minIntervalMs}: misses on unknown instance ids and the
     * reclaimer's rounds must not turn into a stream of store reads.
     */
    public void refreshIfOlderThan(long minIntervalMs) {
        if (System.nanoTime() - lastRefreshNanos >= minIntervalMs * 1_000_000L) {
            refresh();
        }
    }

    /**
     * The instance, looking again in a shared store on a miss: another replica may have registered it since this
     * one loaded.
     */
    public Instance lookup(String id) {
        Instance inst = instances.get(id);
        if (inst == null && !id.isEmpty() && sharedStore() && Identifiers.valid(Identifiers.Kind.INSTANCE, id)) {
            // per id: the first miss always looks again (it may have been registered a moment ago elsewhere);
            // a client repeating an unknown id costs one store read per 250 ms, not one per call
            long now = System.nanoTime();
            Long last = missedAt.get(id);
            if (last == null || now - last >= 250_000_000L) {
                if (missedAt.size() > 10_000) {
                    missedAt.clear();
                }
                missedAt.put(id, now);
                refresh();
                inst = instances.get(id);
            }
        }
        return inst;
    }

    private final Map<String, Long> missedAt = new ConcurrentHashMap<>();
    /** Persisted instance records whose id breaks the rules, reported once each. */
    private final Set<String> refused = ConcurrentHashMap.newKeySet();

    /** True when other processes may write the same store (Redis): lookups that miss re-read it. */
    public boolean sharedStore() {
        return store.shared();
    }

    public Storage storage(String name) {
        return storages.get(name);
    }

    public void putEventReportStorage(EventReportStorage s) {
        eventReportStorages.put(s.name(), s);
    }

    public void removeEventReportStorage(String name) {
        eventReportStorages.remove(name);
    }

    public EventReportStorage eventReportStorage(String name) {
        return eventReportStorages.get(name);
    }

    public Collection<EventReportStorage> eventReportStorages() {
        return eventReportStorages.values();
    }

    /**
     * The first of the group's event-report candidates that exists here and is of the given kind (L2 or L1P5), or
     * null: ReportEvent answers INSTANCE_NOT_EXIST then (kvcm-engine-events.md §4.2).
     */
    public EventReportStorage eventReportStorageFor(String groupName, boolean l2) {
        GroupConfig g = groups.get(groupName);
        if (g == null) {
            return null;
        }
        for (String n : g.eventReportStorageCandidates()) {
            EventReportStorage s = eventReportStorages.get(n);
            if (s != null && s.l2() == l2) {
                return s;
            }
        }
        return null;
    }

    public Storage storageByNumber(int number) {
        Storage[] a = byNumber;
        return number < a.length ? a[number] : null;
    }

    public Collection<Storage> storages() {
        return storages.values();
    }

    public GroupConfig group(String name) {
        return groups.get(name);
    }

    public Collection<GroupConfig> groups() {
        return groups.values();
    }

    public Instance instance(String id) {
        return instances.get(id);
    }

    public Collection<Instance> instances() {
        return instances.values();
    }

    public List<Instance> instancesOf(String group) {
        return instances.values().stream().filter(i -> i.group.equals(group))
                .sorted(Comparator.comparing(i -> i.id)).toList();
    }

    /** The key counts of these instances, in order: one round trip on a shared store (see {@link IndexStore#keyCounts}). */
    public long[] keyCounts(List<Instance> insts) {
        return store.keyCounts(insts.stream().map(i -> i.id).toList());
    }

    /** Their write sessions past the deadline at {@code nowMs}, in order (see {@link IndexStore#sessionsDue}). */
    public List<List<dev.kvpool.meta.index.WriteSession>> sessionsDue(List<Instance> insts, long nowMs) {
        return store.sessionsDue(insts.stream().map(i -> i.id).toList(), nowMs);
    }

    /** storage_configs (§3.1.4): registered storages named by the group's candidates, sorted by name. */
    public String storageConfigsJson(GroupConfig g) {
        ArrayNode arr = JSON.createArrayNode();
        new TreeMap<String, Storage>(storages).forEach((name, st) -> {
            if (g != null && g.storageCandidates().contains(name)) {
                arr.add(st.toStorageConfigJson());
            }
        });
        return arr.toString();
    }

    public record Registration(Instance instance, boolean created) {
    }

    /** RegisterInstance after the validation of §3.1.1: idempotent, DUPLICATE_ENTITY on a different identity. */
    public Registration register(RegisterInstanceRequest req) {
        RegistrationHook hook = registrationHook;
        if (hook != null && !req.getInstanceGroup().isEmpty() && !groups.containsKey(req.getInstanceGroup())
                && !instances.containsKey(req.getInstanceId())) {
            hook.groupMissing(req.getInstanceGroup()); // outside the lock: it may re-read the whole configuration
        }
        return registerLocked(req);
    }

    private synchronized Registration registerLocked(RegisterInstanceRequest req) {
        validate(req);
        Instance existing = instances.get(req.getInstanceId());
        List<LocationSpecGroup> groupsSorted = normalisedGroups(req.getLocationSpecGroupsList());
        if (existing != null) {
            String diff = identityDiff(existing.info, req, groupsSorted);
            if (diff != null) {
                throw MetaException.duplicate("instance '" + req.getInstanceId()
                        + "' is already registered with a different " + diff);
            }
            return new Registration(existing, false);
        }
        GroupConfig g = groups.get(req.getInstanceGroup());
        if (g == null) {
            throw MetaException.internal("instance group '" + req.getInstanceGroup() + "' does not exist");
        }
        if (g.maxInstanceCount() > 0 && instancesOf(g.name()).size() >= g.maxInstanceCount()) {
            throw MetaException.capacity("instance group '" + g.name() + "' already has its maximum of "
                    + g.maxInstanceCount() + " instances");
        }
        InstanceInfo info = InstanceInfo.newBuilder()
                .setQuotaGroupName(g.quotaGroupName())
                .setInstanceGroupName(g.name())
                .setInstanceId(req.getInstanceId())
                .setBlockSize(req.getBlockSize())
                .addAllLocationSpecInfos(req.getLocationSpecInfosList())
                .setModelDeployment(req.getModelDeployment())
                .addAllLocationSpecGroups(groupsSorted)
                .setDefaultQueryType(req.getDefaultQueryType())
                .build();
        RegistrationHook hook = registrationHook;
        if (hook != null) {
            hook.beforeCreate(req, info);
        }
        Instance inst = new Instance(info, indexFactory.apply(info.getInstanceId()));
        inst.slotsFactory(slots);
        putInstanceRecord(info);
        instances.put(inst.id, inst);
        LOG.infof("registered instance %s in group %s (block size %d, %d specs, %s keys)", inst.id, inst.group,
                inst.blockSize, inst.specNames.length, inst.hashScheme);
        return new Registration(inst, true);
    }

    private static void validate(RegisterInstanceRequest r) {
        if (r.getInstanceGroup().isEmpty()) {
            throw MetaException.invalid("instance_group is required");
        }
        if (r.getInstanceId().isEmpty()) {
            throw MetaException.invalid("instance_id is required");
        }
        // names that reach file paths, URIs, Redis keys, Kafka keys and logs: one rule (docs/security.md)
        name(Identifiers.Kind.GROUP, "instance_group", r.getInstanceGroup());
        name(Identifiers.Kind.INSTANCE, "instance_id", r.getInstanceId());
        if (!r.hasModelDeployment()) {
            throw MetaException.invalid("model_deployment is required");
        }
        ModelDeployment md = r.getModelDeployment();
        if (md.getModelName().isEmpty() || md.getDtype().isEmpty()) {
            throw MetaException.invalid("model_deployment.model_name and model_deployment.dtype are required");
        }
        text("model_deployment.model_name", md.getModelName(), Limits.MAX_TEXT);
        text("model_deployment.dtype", md.getDtype(), Limits.MAX_TEXT);
        text("model_deployment.lora_name", md.getLoraName(), Limits.MAX_TEXT);
        blob("model_deployment.extra", md.getExtra());
        blob("model_deployment.user_data", md.getUserData());
        if (r.getBlockSize() < 0 || r.getBlockSize() > Limits.MAX_BLOCK_TOKENS) {
            // 0 stays accepted: a key-only client may register that way (spec §3.1.1)
            throw MetaException.invalid("block_size " + Limits.range(r.getBlockSize(), 0, Limits.MAX_BLOCK_TOKENS));
        }
        if (r.getLocationSpecInfosCount() == 0) {
            throw MetaException.invalid("location_spec_infos must not be empty");
        }
        if (r.getLocationSpecInfosCount() > Limits.MAX_SPECS) {
            throw MetaException.invalid("location_spec_infos: at most " + Limits.MAX_SPECS + " specs, got "
                    + r.getLocationSpecInfosCount());
        }
        Set<String> names = new HashSet<>();
        for (int i = 0; i < r.getLocationSpecInfosCount(); i++) {
            LocationSpecInfo s = r.getLocationSpecInfos(i);
            if (s.getName().isEmpty()) {
                throw MetaException.invalid("location_spec_infos[" + i + "].name is required");
            }
            name(Identifiers.Kind.SPEC, "location_spec_infos[" + i + "].name", s.getName());
            if (!names.add(s.getName())) {
                throw MetaException.invalid("location_spec_infos[" + i + "].name '" + s.getName() + "' is repeated");
            }
            if (s.getSize() < 0 || s.getSize() > Limits.MAX_SPEC_BYTES) {
                // bounded here so that sizes × specs × keys always fit the 64-bit usage sums (api Limits)
                throw MetaException.invalid("location_spec_infos[" + i + "].size "
                        + Limits.range(s.getSize(), 0, Limits.MAX_SPEC_BYTES));
            }
        }
        if (r.getLocationSpecGroupsCount() + 1 > Loc.MAX_SPEC_GROUP) {
            throw MetaException.invalid("at most " + (Loc.MAX_SPEC_GROUP - 1) + " location_spec_groups are supported");
        }
        Set<String> groupNames = new HashSet<>();
        for (int gi = 0; gi < r.getLocationSpecGroupsCount(); gi++) {
            LocationSpecGroup g = r.getLocationSpecGroups(gi);
            if (g.getName().isEmpty() || !groupNames.add(g.getName())) {
                throw MetaException.invalid("location_spec_groups: group name '" + Text.safe(g.getName())
                        + "' is empty or repeated");
            }
            name(Identifiers.Kind.SPEC_GROUP, "location_spec_groups[" + gi + "].name", g.getName());
            if (g.getSpecNamesCount() > Limits.MAX_SPECS) {
                throw MetaException.invalid("location_spec_groups '" + g.getName() + "': at most " + Limits.MAX_SPECS
                        + " spec names");
            }
            for (String s : g.getSpecNamesList()) {
                if (!names.contains(s)) {
                    throw MetaException.invalid("location_spec_groups '" + g.getName() + "' names unknown spec '"
                            + Text.safe(s) + "'");
                }
            }
        }
        try {
            Instance.hashingOf(md.getExtra());
        } catch (IllegalArgumentException e) {
            throw MetaException.invalid("model_deployment.extra: " + e.getMessage());
        }
    }

    private static void name(Identifiers.Kind kind, String field, String value) {
        String p = Identifiers.problem(kind, value);
        if (p != null) {
            throw MetaException.invalid(field + ": " + p);
        }
    }

    private static void text(String field, String value, int max) {
        String p = Text.opaqueProblem(value, max);
        if (p != null) {
            throw MetaException.invalid(field + ": " + p);
        }
    }

    private static void blob(String field, String value) {
        if (value.length() > Limits.MAX_BLOB) {
            throw MetaException.invalid(field + ": must be at most " + Limits.MAX_BLOB + " characters, got " + value.length());
        }
    }

    public static List<LocationSpecGroup> normalisedGroups(List<LocationSpecGroup> in) {
        List<LocationSpecGroup> out = new ArrayList<>();
        for (LocationSpecGroup g : in) {
            out.add(LocationSpecGroup.newBuilder().setName(g.getName())
                    .addAllSpecNames(g.getSpecNamesList().stream().sorted().toList()).build());
        }
        out.sort(Comparator.comparing(LocationSpecGroup::getName));
        return out;
    }

    /** What differs in the identity tuple of §3.1.2 (user_data excluded), or null. */
    private static String identityDiff(InstanceInfo have, RegisterInstanceRequest req, List<LocationSpecGroup> groups) {
        if (have.getBlockSize() != req.getBlockSize()) {
            return "block_size (" + have.getBlockSize() + ")";
        }
        if (!have.getLocationSpecInfosList().equals(req.getLocationSpecInfosList())) {
            return "location_spec_infos list";
        }
        ModelDeployment a = have.getModelDeployment().toBuilder().clearUserData().clearUseEaglePop().build();
        ModelDeployment b = req.getModelDeployment().toBuilder().clearUserData().clearUseEaglePop().build();
        if (!a.equals(b)) {
            return "model_deployment";
        }
        if (!have.getLocationSpecGroupsList().equals(groups)) {
            return "location_spec_groups";
        }
        return null;
    }

    /** Forgets an instance completely: later calls get INSTANCE_NOT_EXIST, re-registration starts clean. */
    public synchronized Instance remove(String id) {
        Instance inst = instances.remove(id);
        if (inst != null) {
            if (sharedStore()) { // before the record goes: a replica that finds the record gone then sees why
                long now = System.currentTimeMillis();
                store.putRecord(REMOVED, id, Long.toString(now).getBytes(StandardCharsets.UTF_8));
                // replicas check every few seconds: a week-old mark has been seen by all that are running
                store.records(REMOVED).forEach((name, at) -> {
                    if (now - Long.parseLong(new String(at, StandardCharsets.UTF_8)) > 7 * 86_400_000L) {
                        store.removeRecord(REMOVED, name);
                    }
                });
            }
            store.removeRecord(INSTANCES, id);
            store.drop(id);
        }
        return inst;
    }

    private void putInstanceRecord(InstanceInfo info) {
        store.putRecord(INSTANCES, info.getInstanceId(), info.toByteArray());
        if (sharedStore()) {
            store.removeRecord(REMOVED, info.getInstanceId());
        }
    }

    /**
     * On a shared store, brings this replica's instances in line with the store, whose data other replicas change
     * and which may lose it (a Redis restarted without persistence, a failover to an empty replica, a flush). An
     * instance whose record is gone was either removed by another replica (its removal mark says so): it is
     * forgotten here too; or lost with the store's data: its record is written again and, when its index is gone
     * as well, a new empty index is started, so engines that registered once go on writing instead of failing until
     * a restart. {@code check}: also ask the store whether this instance's index is still there (a write found it
     * dropped). Storage numbers lost with the data are written again, as locations keep using them, and so are
     * runtime reclaim changes, so that a replica started later still sees them.
     */
    public synchronized void reconcile(String check) {
        if (!sharedStore()) {
            return;
        }
        Map<String, byte[]> records = store.records(INSTANCES);
        Map<String, byte[]> removed = null;
        for (Instance inst : List.copyOf(instances.values())) {
            byte[] rec = records.get(inst.id);
            if (rec == null) {
                if (removed == null) {
                    removed = store.records(REMOVED);
                }
                if (removed.containsKey(inst.id)) {
                    instances.remove(inst.id);
                    LOG.infof("instance %s was removed by another replica: forgotten here too", inst.id);
                    continue;
                }
                putInstanceRecord(inst.info);
                if (inst.index.alive()) {
                    LOG.warnf("instance %s: its record was missing from the store, written again", inst.id);
                } else {
                    renew(inst, "the store lost its record and its index (restarted without persistence, or flushed?)");
                }
            } else if (inst.id.equals(check) && !inst.index.alive()) {
                renew(inst, "its index is gone from the store");
            }
        }
        Map<String, byte[]> numbers = store.records(STORAGE_NUMBERS);
        for (Storage st : storages.values()) {
            byte[] n = numbers.get(st.name);
            if (n == null) {
                store.putRecord(STORAGE_NUMBERS, st.name, Integer.toString(st.number).getBytes(StandardCharsets.UTF_8));
            } else if (Integer.parseInt(new String(n, StandardCharsets.UTF_8)) != st.number && misnumbered.add(st.name)) {
                LOG.errorf("storage %s is number %d here but %s in the store: locations of one replica would be "
                        + "misread by another; restart this replica", st.name, st.number, new String(n, StandardCharsets.UTF_8));
            }
        }
        if (!managed) { // runtime reclaim changes (version > the startup file's 1) lost with the data: written back
            Map<String, byte[]> reclaim = store.records(GROUP_RECLAIM);
            for (GroupConfig g : groups.values()) {
                if (g.version() > 1 && !reclaim.containsKey(g.name())) {
                    putReclaimRecord(g);
                }
            }
        }
        refresh();
    }

    /** Storages whose number differs from the store's, reported once each. */
    private final Set<String> misnumbered = new HashSet<>();

    /** A new, empty index for an instance whose index the store no longer has (the info and slots stay). */
    private void renew(Instance old, String why) {
        Instance fresh = new Instance(old.info, indexFactory.apply(old.id));
        fresh.slotsFactory(slots);
        instances.put(old.id, fresh);
        LOG.warnf("instance %s: %s; started a new empty index (blocks cached before are no longer known)", old.id, why);
    }
}
