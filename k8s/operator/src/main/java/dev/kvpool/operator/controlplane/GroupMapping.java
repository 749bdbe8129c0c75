package dev.kvpool.operator.controlplane;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPoolInstanceGroup;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * KVPoolInstanceGroup spec → the control plane's instance-group JSON ({@code InstanceGroupInput}). Pure.
 *
 * <p>A field the resource leaves out gets the control plane's default, written explicitly: the resource in Git is
 * the whole truth, so a water level changed in the console is put back even when Git never named it. Fields the
 * resource has no counterpart for ({@code quotaGroupName}, {@code userData}) are not written and not compared.
 */
public final class GroupMapping {
    public static final String COLLECTION = "/api/v1/instance-groups";
    /** The control plane's defaults (GroupService.resolve). */
    static final int SOFT = 80;
    static final int HARD = 95;
    static final String POLICY = "LRU";
    static final Map<String, Long> EVICTION_DEFAULTS = Map.of("triggerPeriodSeconds", 5L, "stepSize", 1000L,
            "stepPercentage", 10L, "ttlSeconds", 0L, "readerLeaseMs", 1000L);
    static final Set<String> EVICTION_PARAMS = EVICTION_DEFAULTS.keySet();

    private GroupMapping() {
    }

    public static String name(KVPoolInstanceGroup r) {
        return r.getSpec().name != null ? r.getSpec().name : r.getMetadata().getName();
    }

    public static ObjectNode desired(KVPoolInstanceGroup r) throws InvalidSpec {
        KVPoolInstanceGroup.Spec s = r.getSpec();
        if (s.quotaBytes == null || s.quotaBytes < 1) {
            throw new InvalidSpec("spec.quotaBytes must be at least 1");
        }
        if (s.storageCandidates == null || s.storageCandidates.isEmpty()) {
            throw new InvalidSpec("spec.storageCandidates must name at least one storage");
        }
        ObjectNode n = ControlPlaneApi.JSON.createObjectNode();
        n.put("name", name(r));
        n.put("quotaBytes", s.quotaBytes);
        ObjectNode tq = n.putObject("storageTypeQuotas");
        if (s.storageTypeQuotas != null) {
            new TreeMap<>(s.storageTypeQuotas).forEach((k, v) -> {
                if (v != null) {
                    tq.put(k, v);
                }
            });
        }
        ObjectNode w = n.putObject("waterLevels");
        KVPoolInstanceGroup.WaterLevels wl = s.waterLevels == null ? new KVPoolInstanceGroup.WaterLevels() : s.waterLevels;
        int soft = wl.soft != null ? wl.soft : Math.min(SOFT, wl.hard != null ? wl.hard : SOFT);
        int hard = wl.hard != null ? wl.hard : Math.max(HARD, soft);
        w.put("softPercent", soft);
        w.put("hardPercent", hard);
        ObjectNode e = n.putObject("eviction");
        e.put("policy", s.eviction != null && s.eviction.policy != null ? s.eviction.policy : POLICY);
        Map<String, Long> params = s.eviction != null && s.eviction.params != null ? s.eviction.params : Map.of();
        for (String k : params.keySet()) {
            if (!EVICTION_PARAMS.contains(k)) {
                throw new InvalidSpec("spec.eviction.params." + k + " is not a parameter; known: "
                        + new java.util.TreeSet<>(EVICTION_PARAMS));
            }
        }
        for (String k : new java.util.TreeSet<>(EVICTION_PARAMS)) {
            Long v = params.get(k);
            e.put(k, v != null ? v : EVICTION_DEFAULTS.get(k));
        }
        ArrayNode c = n.putArray("storageCandidates");
        s.storageCandidates.forEach(c::add);
        n.put("maxInstanceCount", s.maxInstanceCount == null ? 0 : s.maxInstanceCount);
        n.put("allowAnonymousMeta", Boolean.TRUE.equals(s.allowAnonymousMeta));
        return n;
    }

    public static List<String> drift(ObjectNode desired, JsonNode actual) {
        return Drift.changes(desired, actual);
    }

    /** Usage and water level from the control plane's group view, or null when it has none. */
    public static KVPoolInstanceGroup.Usage usage(JsonNode group) {
        JsonNode u = group.path("usage");
        if (!u.isObject()) {
            return null;
        }
        KVPoolInstanceGroup.Usage out = new KVPoolInstanceGroup.Usage();
        out.usedBytes = u.path("usedBytes").asLong();
        out.usedPercent = u.path("usedPercent").asDouble();
        out.level = u.path("level").asText(null);
        Map<String, Long> byType = new TreeMap<>();
        u.path("byType").fields().forEachRemaining(f -> byType.put(f.getKey(), f.getValue().asLong()));
        out.usedBytesByStorageType = byType;
        return out;
    }
}
