package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.index.StorageKind;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** The control plane's REST views (storages, instance groups, instances) as the registry's types. */
final class ConfigViews {
    private ConfigViews() {
    }

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
    static dev.kvpool.meta.storage.StorageDef storageDef(JsonNode s) {
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
}
