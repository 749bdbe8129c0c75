package dev.kvpool.control.group;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.proto.admin.CacheConfig;
import dev.kvpool.api.proto.admin.CachePreferStrategy;
import dev.kvpool.api.proto.admin.CacheReclaimStrategy;
import dev.kvpool.api.proto.admin.InstanceGroup;
import dev.kvpool.api.proto.admin.InstanceGroupQuota;
import dev.kvpool.api.proto.admin.MetaCachePolicyConfig;
import dev.kvpool.api.proto.admin.MetaIndexerConfig;
import dev.kvpool.api.proto.admin.MetaStorageBackendConfig;
import dev.kvpool.api.proto.admin.QuotaConfig;
import dev.kvpool.api.proto.admin.ReclaimPolicy;
import dev.kvpool.api.proto.admin.TriggerStrategy;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.outbox.Outbox;
import dev.kvpool.control.storage.StorageRepository;
import dev.kvpool.control.storage.StorageTypes;
import dev.kvpool.control.usage.UsageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Instance groups for REST and the KVCM admin routes. Validation runs completely before anything is written, and the
 * whole change (row, candidates, quotas, outbox event) is one transaction, so a refusal leaves nothing behind.
 */
@ApplicationScoped
public class GroupService {
    public static final List<String> POLICIES = List.of("LRU", "LFU", "TTL", "PREFIX_LRU");

    @Inject
    GroupRepository repo;
    @Inject
    StorageRepository storages;
    @Inject
    UsageService usage;
    @Inject
    dev.kvpool.control.stats.StatsRepository stats;
    @Inject
    Outbox outbox;
    @Inject
    EntityManager em;

    /** Current usage against the quota; {@code level}: {@code ok}, {@code soft} (eviction runs) or {@code hard} (writes refused). */
    public record Usage(long usedBytes, double usedPercent, String level, Map<String, Long> byType) {
    }

    public record GroupView(String name, long quotaBytes, Map<String, Long> storageTypeQuotas,
                            GroupSpec.WaterLevels waterLevels, GroupSpec.Eviction eviction,
                            List<String> storageCandidates, List<String> eventReportStorageCandidates,
                            List<String> missingStorages, long maxInstanceCount,
                            String quotaGroupName,
                            boolean allowAnonymousMeta, String userData, long version, Instant createdAt,
                            Instant updatedAt, Usage usage, JsonNode kvcm) {
    }

    public GroupView view(GroupEntity g) {
        UsageService.Current u = usage.current(g.name);
        double pct = g.quotaBytes > 0 ? Math.round(10000.0 * u.usedBytes() / g.quotaBytes) / 100.0 : 0;
        String level = pct >= g.hardWaterPct ? "hard" : pct >= g.softWaterPct ? "soft" : "ok";
        return new GroupView(g.name, g.quotaBytes, new TreeMap<>(g.typeQuotas),
                new GroupSpec.WaterLevels(g.softWaterPct, g.hardWaterPct),
                new GroupSpec.Eviction(g.evictionPolicy, g.triggerPeriodSeconds, g.stepSize, g.stepPercentage,
                        g.ttlSeconds, g.readerLeaseMs),
                List.copyOf(g.storageCandidates), List.copyOf(g.eventReportStorageCandidates),
                storages.missing(allCandidates(g)), g.maxInstanceCount,
                g.quotaGroupName, g.allowAnonymousMeta,
                g.userData, g.version, g.createdAt, g.updatedAt,
                new Usage(u.usedBytes(), pct, level, u.byType()),
                Json.read(g.kvcmJson));
    }

    /** Both candidate lists (missingStorages covers both: a storage is missing whatever it would be used for). */
    private static List<String> allCandidates(GroupEntity g) {
        List<String> all = new ArrayList<>(g.storageCandidates);
        g.eventReportStorageCandidates.stream().filter(n -> !all.contains(n)).forEach(all::add);
        return all;
    }

    /**
     * The view without usage and missingStorages (events and snapshots: neither is configuration; the group travels
     * as given, and every reader decides from its own storages what is missing).
     */
    public static JsonNode eventObject(GroupView v) {
        var n = (com.fasterxml.jackson.databind.node.ObjectNode) Json.tree(v);
        n.remove("usage");
        n.remove("missingStorages");
        return n;
    }

    public List<GroupEntity> list() {
        return repo.sorted();
    }

    public GroupEntity get(String name) {
        Inputs.name(Identifiers.Kind.GROUP, "name", name);
        return repo.byName(name).orElseThrow(() -> ApiException.notFound("instance group", name));
    }

    public boolean exists(String name) {
        return Identifiers.valid(Identifiers.Kind.GROUP, name) && repo.byName(name).isPresent();
    }

    // ---------------------------------------------------------------- writes

    @Transactional
    public GroupEntity create(GroupSpec s, InstanceGroup kvcm) {
        outbox.lock();
        Resolved r = resolve(s, null);
        if (repo.byName(r.name).isPresent()) {
            throw ApiException.duplicate("name", "instance group '" + r.name + "' already exists");
        }
        GroupEntity g = new GroupEntity();
        g.createdAt = Instant.now();
        g.version = kvcm != null && kvcm.getVersion() > 0 ? kvcm.getVersion() : 1;
        apply(g, r, kvcm);
        repo.persist(g);
        outbox.record(ConfigEvent.INSTANCE_GROUP, g.name, ConfigEvent.CREATED, g.version, eventObject(view(g)));
        return g;
    }

    /**
     * Replaces a group. REST passes {@code ifMatch}; KVCM passes {@code currentVersion} (must equal the stored version)
     * and the new version in {@code kvcm.version} (must be greater).
     */
    @Transactional
    public GroupEntity update(String name, GroupSpec s, String ifMatch, InstanceGroup kvcm, Long currentVersion) {
        outbox.lock();
        GroupEntity g = get(name);
        if (kvcm == null) {
            Etags.check(ifMatch, g.version, true);
        } else {
            if (currentVersion != g.version) {
                throw ApiException.preconditionFailed("current_version " + currentVersion + " does not match the stored "
                        + "version " + g.version + " of instance group '" + name + "'");
            }
            if (kvcm.getVersion() <= g.version) {
                throw ApiException.preconditionFailed("new instance_group.version " + kvcm.getVersion()
                        + " must be greater than the stored version " + g.version);
            }
        }
        Resolved r = resolve(s, g);
        g.version = kvcm != null ? kvcm.getVersion() : g.version + 1;
        apply(g, r, kvcm);
        outbox.record(ConfigEvent.INSTANCE_GROUP, g.name, ConfigEvent.UPDATED, g.version, eventObject(view(g)));
        return g;
    }

    @Transactional
    public void delete(String name, String ifMatch) {
        Inputs.existingName(Identifiers.Kind.GROUP, "name", name);
        outbox.lock();
        GroupEntity g = repo.byName(name).orElseThrow(() -> ApiException.notFound("instance group", name));
        Etags.check(ifMatch, g.version, false);
        List<String> members = em.createQuery("select i.instanceId from InstanceEntity i where i.group = :g "
                + "order by i.instanceId", String.class).setParameter("g", g).setMaxResults(11).getResultList();
        if (!members.isEmpty()) {
            throw ApiException.conflict("name", "instance group '" + name + "' still has instances "
                    + (members.size() > 10 ? members.subList(0, 10) + " and more" : members) + "; remove them first");
        }
        // a tenant bound to this name would be bound to a later group of the same name as well: the binding is an
        // admin's decision, so it is removed by an admin first rather than silently carried over or dropped
        List<String> tenants = em.createQuery("select distinct a.name from AccountEntity a join a.groups g where g = :n "
                + "order by a.name", String.class).setParameter("n", name).setMaxResults(11).getResultList();
        if (!tenants.isEmpty()) {
            throw ApiException.conflict("name", "instance group '" + name + "' is still bound to tenant account(s) "
                    + (tenants.size() > 10 ? tenants.subList(0, 10) + " and more" : tenants)
                    + "; remove the group from their groups first (PUT /api/v1/accounts/{name})");
        }
        long version = g.version;
        // its usage and stats history go with it: a group created later under the same name starts from zero usage
        usage.forget(name);
        stats.forget(name);
        repo.delete(g);
        outbox.record(ConfigEvent.INSTANCE_GROUP, name, ConfigEvent.DELETED, version + 1, null);
    }

    // ---------------------------------------------------------------- validation

    record Resolved(String name, long quota, Map<String, Long> typeQuotas, int soft, int hard, String policy,
                    int period, int step, int stepPct, long ttl, long lease, List<String> candidates,
                    List<String> reportCandidates, long maxInstances, String quotaGroup, boolean anonymous,
                    String userData) {
    }

    /** Fills defaults (from {@code old} on update), validates everything, and throws on the first problem. */
    Resolved resolve(GroupSpec s, GroupEntity old) {
        if (s == null) {
            throw ApiException.invalid(null, "request body is required");
        }
        String name = old != null ? old.name : s.name();
        if (old != null && s.name() != null && !s.name().equals(old.name)) {
            throw ApiException.invalid("name", "name in the body ('" + s.name() + "') differs from '" + old.name
                    + "'; instance groups cannot be renamed");
        }
        if (old == null) {
            Inputs.name(Identifiers.Kind.GROUP, "name", name);
        }
        Long quota = s.quotaBytes() != null ? s.quotaBytes() : old != null ? Long.valueOf(old.quotaBytes) : null;
        if (quota == null) {
            throw ApiException.invalid("quotaBytes", "quotaBytes is required");
        }
        Inputs.range("quotaBytes", quota, 1, Limits.MAX_QUOTA_BYTES);
        Map<String, Long> tq = new TreeMap<>();
        Map<String, Long> inTq = s.storageTypeQuotas() != null ? s.storageTypeQuotas()
                : old != null ? old.typeQuotas : Map.of();
        for (var e : inTq.entrySet()) {
            String f = "storageTypeQuotas." + e.getKey();
            String t = StorageTypes.canonical(e.getKey(), f);
            if (e.getValue() == null) {
                throw ApiException.invalid(f, f + " must be a number of bytes, got null");
            }
            if (StorageTypes.eventReport(t)) {
                throw ApiException.invalid(f, f + ": " + t + " storages hold no bytes and take no quota; quota types "
                        + "are " + StorageTypes.DATA_NAMES);
            }
            Inputs.range(f, e.getValue(), 0, Limits.MAX_QUOTA_BYTES);
            if (tq.put(t, e.getValue()) != null) {
                throw ApiException.invalid(f, "storage type '" + t + "' appears twice in storageTypeQuotas");
            }
        }
        GroupSpec.WaterLevels w = s.waterLevels() != null ? s.waterLevels() : new GroupSpec.WaterLevels(null, null);
        int soft = w.softPercent() != null ? w.softPercent() : old != null ? old.softWaterPct : 80;
        int hard = w.hardPercent() != null ? w.hardPercent() : old != null ? old.hardWaterPct : 95;
        pct("waterLevels.softPercent", soft);
        pct("waterLevels.hardPercent", hard);
        if (soft > hard) {
            throw ApiException.invalid("waterLevels.softPercent", "waterLevels.softPercent (" + soft
                    + ") must not exceed waterLevels.hardPercent (" + hard + ")");
        }
        GroupSpec.Eviction ev = s.eviction() != null ? s.eviction()
                : new GroupSpec.Eviction(null, null, null, null, null, null);
        String policy = ev.policy() != null ? ev.policy().trim().toUpperCase() : old != null ? old.evictionPolicy : "LRU";
        if (!POLICIES.contains(policy)) {
            throw ApiException.invalid("eviction.policy", "eviction.policy must be one of " + POLICIES + ", got '"
                    + ev.policy() + "'");
        }
        int period = ev.triggerPeriodSeconds() != null ? ev.triggerPeriodSeconds() : old != null ? old.triggerPeriodSeconds : 5;
        Inputs.range("eviction.triggerPeriodSeconds", period, 0, Inputs.MAX_TRIGGER_PERIOD_SECONDS);
        int step = ev.stepSize() != null ? ev.stepSize() : old != null ? old.stepSize : 1000;
        Inputs.range("eviction.stepSize", step, 0, Limits.MAX_KEYS_PER_CALL);
        int stepPct = ev.stepPercentage() != null ? ev.stepPercentage() : old != null ? old.stepPercentage : 10;
        pct("eviction.stepPercentage", stepPct);
        long ttl = ev.ttlSeconds() != null ? ev.ttlSeconds() : old != null ? old.ttlSeconds : 0;
        Inputs.range("eviction.ttlSeconds", ttl, 0, Inputs.MAX_TTL_SECONDS);
        if (policy.equals("TTL") && ttl <= 0) {
            throw ApiException.invalid("eviction.ttlSeconds", "eviction.ttlSeconds must be > 0 with policy TTL");
        }
        long lease = ev.readerLeaseMs() != null ? ev.readerLeaseMs() : old != null ? old.readerLeaseMs : 1000;
        Inputs.range("eviction.readerLeaseMs", lease, 0, Inputs.MAX_READER_LEASE_MS);
        List<String> cands = s.storageCandidates() != null ? s.storageCandidates()
                : old != null ? List.copyOf(old.storageCandidates) : List.of();
        if (cands.isEmpty()) {
            throw ApiException.invalid("storageCandidates", "storageCandidates must name at least one storage");
        }
        Inputs.count("storageCandidates", cands, Inputs.MAX_CANDIDATES);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < cands.size(); i++) {
            String c = cands.get(i), f = "storageCandidates[" + i + "]";
            Inputs.name(Identifiers.Kind.STORAGE, f, c);
            if (!seen.add(c)) {
                throw ApiException.invalid("storageCandidates[" + i + "]", "storage candidate '" + c
                        + "' is listed twice");
            }
            // a candidate need not exist yet (KVCM §3.11 CreateInstanceGroup: "stored as given"): it shows as missing
            // in the view, and the metadata plane skips it until the storage is added. One that exists must hold bytes
            storages.byName(c).filter(st -> StorageTypes.eventReport(st.type)).ifPresent(st -> {
                throw ApiException.invalid(f, "storage '" + c + "' is an " + st.type + " storage: it holds no "
                        + "bytes and cannot be a placement candidate; list it in eventReportStorageCandidates");
            });
        }
        List<String> reportCands = s.eventReportStorageCandidates() != null ? s.eventReportStorageCandidates()
                : old != null ? List.copyOf(old.eventReportStorageCandidates) : List.of();
        Inputs.count("eventReportStorageCandidates", reportCands, Inputs.MAX_CANDIDATES);
        Set<String> seenReport = new HashSet<>();
        for (int i = 0; i < reportCands.size(); i++) {
            String c = reportCands.get(i), f = "eventReportStorageCandidates[" + i + "]";
            Inputs.name(Identifiers.Kind.STORAGE, f, c);
            if (!seenReport.add(c)) {
                throw ApiException.invalid(f, "event-report storage candidate '" + c + "' is listed twice");
            }
            // same pending rule as storageCandidates; one that exists must be an event-report storage
            storages.byName(c).filter(st -> !StorageTypes.eventReport(st.type)).ifPresent(st -> {
                throw ApiException.invalid(f, "storage '" + c + "' is a " + st.type + " storage, not an event-report "
                        + "storage (" + StorageTypes.EVENT_REPORT_L1P5 + " or " + StorageTypes.EVENT_REPORT_L2 + ")");
            });
        }
        long maxInst = s.maxInstanceCount() != null ? s.maxInstanceCount() : old != null ? old.maxInstanceCount : 0;
        Inputs.range("maxInstanceCount", maxInst, 0, Limits.MAX_INSTANCES_PER_GROUP);
        String qg = s.quotaGroupName() != null && !s.quotaGroupName().isEmpty() ? s.quotaGroupName()
                : old != null ? old.quotaGroupName : name;
        if (s.quotaGroupName() != null && !s.quotaGroupName().isEmpty()) {
            Inputs.name(Identifiers.Kind.QUOTA_GROUP, "quotaGroupName", qg);
        }
        boolean anon = s.allowAnonymousMeta() != null ? s.allowAnonymousMeta() : old != null && old.allowAnonymousMeta;
        String userData = s.userData() != null ? Inputs.blob("userData", s.userData()) : old != null ? old.userData : "";
        // quotas below what the group already uses are refused
        UsageService.Current u = usage.current(name);
        if (u.usedBytes() > quota) {
            throw ApiException.conflict("quotaBytes", "quotaBytes " + quota + " is below the group's current usage of "
                    + u.usedBytes() + " bytes; evict or remove instances first, or choose a quota >= " + u.usedBytes());
        }
        for (var e : tq.entrySet()) {
            long used = u.byType().getOrDefault(e.getKey(), 0L);
            if (used > e.getValue()) {
                throw ApiException.conflict("storageTypeQuotas." + e.getKey(), "storageTypeQuotas." + e.getKey() + " "
                        + e.getValue() + " is below the group's current " + e.getKey() + " usage of " + used + " bytes");
            }
        }
        return new Resolved(name, quota, tq, soft, hard, policy, period, step, stepPct, ttl, lease, List.copyOf(cands),
                List.copyOf(reportCands), maxInst, qg, anon, userData);
    }

    private static void pct(String f, long v) {
        if (v < 0 || v > 100) {
            throw ApiException.invalid(f, f + " must be a percentage between 0 and 100, got " + v);
        }
    }

    private void apply(GroupEntity g, Resolved r, InstanceGroup kvcm) {
        g.name = r.name;
        g.quotaBytes = r.quota;
        g.typeQuotas.clear();
        g.typeQuotas.putAll(r.typeQuotas);
        g.softWaterPct = r.soft;
        g.hardWaterPct = r.hard;
        g.evictionPolicy = r.policy;
        g.triggerPeriodSeconds = r.period;
        g.stepSize = r.step;
        g.stepPercentage = r.stepPct;
        g.ttlSeconds = r.ttl;
        g.readerLeaseMs = r.lease;
        g.storageCandidates.clear();
        g.storageCandidates.addAll(r.candidates);
        g.eventReportStorageCandidates.clear();
        g.eventReportStorageCandidates.addAll(r.reportCandidates);
        g.maxInstanceCount = r.maxInstances;
        g.quotaGroupName = r.quotaGroup;
        g.allowAnonymousMeta = r.anonymous;
        g.userData = r.userData;
        g.updatedAt = Instant.now();
        InstanceGroup base = kvcm != null ? kvcm
                : g.kvcmJson != null ? ProtoJson.merge(g.kvcmJson, InstanceGroup.newBuilder()).build() : defaults();
        g.kvcmJson = Json.proto(toKvcm(g, base));
    }

    /** The KVCM form: the stored KVCM details overlaid with KVPool's columns. */
    public static InstanceGroup toKvcm(GroupEntity g, InstanceGroup base) {
        InstanceGroup.Builder b = base.toBuilder();
        b.setName(g.name).clearStorageCandidates().addAllStorageCandidates(g.storageCandidates)
                .clearEventReportStorageCandidates().addAllEventReportStorageCandidates(g.eventReportStorageCandidates)
                .setGlobalQuotaGroupName(g.quotaGroupName).setMaxInstanceCount(g.maxInstanceCount)
                .setUserData(g.userData).setVersion(g.version);
        InstanceGroupQuota.Builder q = InstanceGroupQuota.newBuilder().setCapacity(g.quotaBytes);
        g.typeQuotas.forEach((t, c) -> q.addQuotaConfig(QuotaConfig.newBuilder().setStorageType(StorageTypes.wire(t))
                .setCapacity(c)));
        b.setQuota(q);
        CacheConfig.Builder cc = b.getCacheConfig().toBuilder();
        CacheReclaimStrategy.Builder rs = cc.getReclaimStrategy().toBuilder();
        // PREFIX_LRU is KVPool's value 4 of KVCM's open enum (the metadata plane reads it back as such)
        rs.setReclaimPolicyValue(switch (g.evictionPolicy) {
            case "LFU" -> ReclaimPolicy.POLICY_LFU_VALUE;
            case "TTL" -> ReclaimPolicy.POLICY_TTL_VALUE;
            case "PREFIX_LRU" -> 4;
            default -> ReclaimPolicy.POLICY_LRU_VALUE;
        });
        double p = rs.getTriggerStrategy().getUsedPercentage();
        // keep KVCM's fraction when it maps to the same percentage (values above 1 mean "never by percentage")
        if (!(p > 1 && g.softWaterPct == 100) && Math.round(p * 100) != g.softWaterPct) {
            p = g.softWaterPct / 100.0;
        }
        rs.setTriggerStrategy(TriggerStrategy.newBuilder(rs.getTriggerStrategy()).setUsedPercentage(p));
        rs.setTriggerPeriodSeconds(g.triggerPeriodSeconds).setReclaimStepSize(g.stepSize)
                .setReclaimStepPercentage(g.stepPercentage).setDelayBeforeDeleteMs((int) Math.min(Integer.MAX_VALUE, g.readerLeaseMs));
        if (rs.getStorageUniqueName().isEmpty() && !g.storageCandidates.isEmpty()) {
            rs.setStorageUniqueName(g.storageCandidates.get(0));
        }
        cc.setReclaimStrategy(rs);
        b.setCacheConfig(cc);
        return b.build();
    }

    /** KVCM's built-in default cache_config (§3.17), used for groups created through REST. */
    public static InstanceGroup defaults() {
        return InstanceGroup.newBuilder().setCacheConfig(CacheConfig.newBuilder()
                .setDataStorageStrategy(CachePreferStrategy.CPS_PREFER_3FS)
                .setReclaimStrategy(CacheReclaimStrategy.newBuilder().setReclaimPolicy(ReclaimPolicy.POLICY_LRU)
                        .setTriggerStrategy(TriggerStrategy.newBuilder().setUsedPercentage(0.8)).setDelayBeforeDeleteMs(1000))
                .setMetaIndexerConfig(MetaIndexerConfig.newBuilder().setMaxKeyCount(1_000_000).setMutexShardNum(16)
                        .setBatchKeySize(16)
                        .setMetaStorageBackendConfig(MetaStorageBackendConfig.newBuilder().setStorageType("local"))
                        .setMetaCachePolicyConfig(MetaCachePolicyConfig.newBuilder().setType("LRU").setCapacity(10000))))
                .build();
    }

    /** Fields of a KVCM InstanceGroup that are blobs (may hold newlines), not text. */
    private static final Set<String> KVCM_BLOBS = Set.of("user_data", "extra_info");

    /**
     * Validates a KVCM InstanceGroup as KVCM does (§3.11, plus KVPool's SHOULDs and its bounds: every name against the
     * identifier rule, every string bounded, every number in range) and maps it to a spec. Fields are named by their
     * proto path under {@code instance_group}.
     */
    public static GroupSpec fromKvcm(InstanceGroup g, GroupEntity old) {
        Inputs.strings(g, "instance_group", KVCM_BLOBS, Set.of());
        if (g.getName().isEmpty()) {
            throw ApiException.invalid("instance_group.name", "instance_group.name must not be empty");
        }
        Inputs.name(Identifiers.Kind.GROUP, "instance_group.name", g.getName());
        if (g.getStorageCandidatesCount() == 0) {
            throw ApiException.invalid("instance_group.storage_candidates", "storage_candidates must not be empty");
        }
        Inputs.count("instance_group.storage_candidates", g.getStorageCandidatesList(), Inputs.MAX_CANDIDATES);
        for (int i = 0; i < g.getStorageCandidatesCount(); i++) {
            Inputs.name(Identifiers.Kind.STORAGE, "instance_group.storage_candidates[" + i + "]", g.getStorageCandidates(i));
        }
        Inputs.count("instance_group.event_report_storage_candidates", g.getEventReportStorageCandidatesList(),
                Inputs.MAX_CANDIDATES);
        for (int i = 0; i < g.getEventReportStorageCandidatesCount(); i++) {
            Inputs.name(Identifiers.Kind.STORAGE, "instance_group.event_report_storage_candidates[" + i + "]",
                    g.getEventReportStorageCandidates(i));
        }
        if (g.getGlobalQuotaGroupName().isEmpty()) {
            throw ApiException.invalid("instance_group.global_quota_group_name", "global_quota_group_name must not be empty");
        }
        Inputs.name(Identifiers.Kind.QUOTA_GROUP, "instance_group.global_quota_group_name", g.getGlobalQuotaGroupName());
        Inputs.range("instance_group.max_instance_count", g.getMaxInstanceCount(), 0, Limits.MAX_INSTANCES_PER_GROUP);
        Inputs.range("instance_group.version", g.getVersion(), 0, Inputs.MAX_VERSION);
        CacheConfig cc = g.getCacheConfig();
        if (cc.getDataStorageStrategy() == CachePreferStrategy.CPS_UNSPECIFIED) {
            throw ApiException.invalid("cache_config.data_storage_strategy", "data_storage_strategy must be set");
        }
        CacheReclaimStrategy rs = cc.getReclaimStrategy();
        String rsPath = "instance_group.cache_config.reclaim_strategy";
        if (rs.getStorageUniqueName().isEmpty()) {
            throw ApiException.invalid("cache_config.reclaim_strategy.storage_unique_name",
                    "reclaim_strategy.storage_unique_name must not be empty");
        }
        Inputs.name(Identifiers.Kind.STORAGE, rsPath + ".storage_unique_name", rs.getStorageUniqueName());
        Inputs.range(rsPath + ".trigger_strategy.used_size", rs.getTriggerStrategy().getUsedSize(), 0,
                Limits.MAX_QUOTA_BYTES);
        // a fraction of the quota; values above 1 mean "never by percentage" (KVCM), NaN and infinities mean nothing
        double p = Inputs.range(rsPath + ".trigger_strategy.used_percentage",
                rs.getTriggerStrategy().getUsedPercentage(), 0, 100);
        Inputs.range(rsPath + ".trigger_period_seconds", rs.getTriggerPeriodSeconds(), 0,
                Inputs.MAX_TRIGGER_PERIOD_SECONDS);
        Inputs.range(rsPath + ".reclaim_step_size", rs.getReclaimStepSize(), 0, Limits.MAX_KEYS_PER_CALL);
        Inputs.range(rsPath + ".reclaim_step_percentage", rs.getReclaimStepPercentage(), 0, 100);
        Inputs.range(rsPath + ".delay_before_delete_ms", rs.getDelayBeforeDeleteMs(), 0, Inputs.MAX_READER_LEASE_MS);
        MetaIndexerConfig mi = cc.getMetaIndexerConfig();
        String miPath = "instance_group.cache_config.meta_indexer_config";
        if (mi.getMetaStorageBackendConfig().getStorageType().isBlank()) {
            throw ApiException.invalid("cache_config.meta_indexer_config.meta_storage_backend_config.storage_type",
                    "meta_storage_backend_config.storage_type must not be empty");
        }
        if (mi.getMetaCachePolicyConfig().getType().isBlank()) {
            throw ApiException.invalid("cache_config.meta_indexer_config.meta_cache_policy_config.type",
                    "meta_cache_policy_config.type must not be empty");
        }
        if (mi.getMaxKeyCount() <= 0) {
            throw ApiException.invalid("cache_config.meta_indexer_config.max_key_count", "max_key_count must be > 0");
        }
        Inputs.range(miPath + ".max_key_count", mi.getMaxKeyCount(), 1, Limits.MAX_KEY_COUNT);
        long shards = mi.getMutexShardNum();
        if (shards <= 0 || Long.bitCount(shards) != 1 || shards > mi.getMaxKeyCount()) {
            throw ApiException.invalid("cache_config.meta_indexer_config.mutex_shard_num",
                    "mutex_shard_num must be a power of two and <= max_key_count, got " + shards);
        }
        Inputs.range(miPath + ".mutex_shard_num", shards, 1, Inputs.MAX_MUTEX_SHARDS);
        Inputs.range(miPath + ".batch_key_size", mi.getBatchKeySize(), 0, Limits.MAX_KEYS_PER_CALL);
        MetaCachePolicyConfig cp = mi.getMetaCachePolicyConfig();
        Inputs.range(miPath + ".meta_cache_policy_config.capacity", cp.getCapacity(), 0, Limits.MAX_KEY_COUNT);
        Inputs.range(miPath + ".meta_cache_policy_config.cache_shard_bits", cp.getCacheShardBits(), 0, 20);
        Inputs.range(miPath + ".meta_cache_policy_config.high_pri_pool_ratio", cp.getHighPriPoolRatio(), 0, 1);
        if (mi.hasPersistMetadataIntervalTimeMs()) {
            Inputs.range(miPath + ".persist_metadata_interval_time_ms", mi.getPersistMetadataIntervalTimeMs().getValue(),
                    0, 86_400_000);
        }
        if (g.getQuota().getCapacity() <= 0) {
            throw ApiException.invalid("instance_group.quota.capacity", "quota.capacity must be > 0");
        }
        Inputs.range("instance_group.quota.capacity", g.getQuota().getCapacity(), 1, Limits.MAX_QUOTA_BYTES);
        Map<String, Long> tq = new TreeMap<>();
        for (int i = 0; i < g.getQuota().getQuotaConfigCount(); i++) {
            QuotaConfig q = g.getQuota().getQuotaConfig(i);
            String f = "instance_group.quota.quota_config[" + i + "]";
            if (q.getStorageType() == dev.kvpool.api.proto.admin.StorageType.ST_UNSPECIFIED
                    || q.getStorageType() == dev.kvpool.api.proto.admin.StorageType.UNRECOGNIZED) {
                throw ApiException.invalid(f + ".storage_type", f + ".storage_type must be one of "
                        + StorageTypes.DATA_NAMES + ", got " + q.getStorageTypeValue());
            }
            if (q.getStorageType() == dev.kvpool.api.proto.admin.StorageType.ST_EVENT_REPORT_L1P5
                    || q.getStorageType() == dev.kvpool.api.proto.admin.StorageType.ST_EVENT_REPORT_L2) {
                throw ApiException.invalid(f + ".storage_type", f + ".storage_type " + q.getStorageType()
                        + ": event-report storages hold no bytes and take no quota");
            }
            Inputs.range(f + ".capacity", q.getCapacity(), 0, Limits.MAX_QUOTA_BYTES);
            // one entry per type: two would have to be summed, and a sum is where overflow hides
            if (tq.put(StorageTypes.fromWire(q.getStorageType()), q.getCapacity()) != null) {
                throw ApiException.invalid(f + ".storage_type", f + ".storage_type: storage type "
                        + q.getStorageType() + " appears twice in quota.quota_config");
            }
        }
        int soft = p <= 0 ? 100 : (int) Math.min(100, Math.round(p * 100));
        int hard = Math.max(soft, old != null ? old.hardWaterPct : 95);
        String policy = rs.getReclaimPolicyValue() == 4 ? "PREFIX_LRU" : switch (rs.getReclaimPolicy()) {
            case POLICY_LFU -> "LFU";
            case POLICY_TTL -> "TTL";
            default -> old != null && old.evictionPolicy.equals("PREFIX_LRU") ? "PREFIX_LRU" : "LRU";
        };
        Long ttl = policy.equals("TTL") && (old == null || old.ttlSeconds <= 0) ? Long.valueOf(3600) : null;
        return new GroupSpec(g.getName(), g.getQuota().getCapacity(), tq, new GroupSpec.WaterLevels(soft, hard),
                new GroupSpec.Eviction(policy, rs.getTriggerPeriodSeconds(), rs.getReclaimStepSize(),
                        rs.getReclaimStepPercentage(), ttl, (long) rs.getDelayBeforeDeleteMs()),
                new ArrayList<>(g.getStorageCandidatesList()), g.getMaxInstanceCount(), g.getGlobalQuotaGroupName(),
                // created by KVCM tooling for KVCM connectors, which send no token; an update keeps the flag
                old == null ? Boolean.TRUE : null, g.getUserData(),
                new ArrayList<>(g.getEventReportStorageCandidatesList()));
    }
}
