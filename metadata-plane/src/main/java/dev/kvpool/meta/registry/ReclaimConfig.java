package dev.kvpool.meta.registry;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A group's reclaim strategy: KVCM's CacheReclaimStrategy with every field honoured (KVCM ignores used_size,
 * trigger_period_seconds and both step fields) plus KVPool's TTL and LFU parameters.
 *
 * @param usedPercentage     soft water level as a fraction of the quota (KVCM's used_percentage; 0.8 = 80 %); ≤ 0
 *                           never triggers by percentage (KVCM would evict continuously)
 * @param usedSize           soft water level in bytes (≤ 0: off); either level triggers
 * @param triggerPeriodMs    how often the group is checked (KVCM: trigger_period_seconds; 0 = 100 ms)
 * @param stepSize           blocks evicted per round for the whole group (0 = unset)
 * @param stepPercentage     or this percentage of the group's blocks per round (0 = unset); the larger wins;
 *                           neither set: 100 blocks per instance, like KVCM
 * @param delayBeforeDeleteMs the reader lease: how long an evicted location stays DELETING before its bytes go
 * @param ttlSeconds         TTL policy: blocks written longer ago than this expire even below the water level
 * @param lfuDecaySeconds    LFU: idle seconds per counter step of decay
 */
public record ReclaimConfig(ReclaimPolicy policy, double usedPercentage, long usedSize, long triggerPeriodMs,
                            long stepSize, int stepPercentage, long delayBeforeDeleteMs, long ttlSeconds,
                            int lfuDecaySeconds) {

    /** No reclaim_strategy: no water level (KVCM would read 0 and evict continuously; §3.10.1 asks for never). */
    public static final ReclaimConfig DEFAULT = new ReclaimConfig(ReclaimPolicy.LRU, 0, 0, 0, 0, 0, 1000, 0, 60);

    public ReclaimConfig {
        if (policy == null) {
            throw new IllegalArgumentException("reclaim_policy is required");
        }
        if (Double.isNaN(usedPercentage) || Double.isInfinite(usedPercentage)) {
            throw new IllegalArgumentException("used_percentage must be a finite number");
        }
        if (triggerPeriodMs < 0 || stepSize < 0 || delayBeforeDeleteMs < 0 || ttlSeconds < 0 || lfuDecaySeconds < 0) {
            throw new IllegalArgumentException("trigger_period_seconds, reclaim_step_size, delay_before_delete_ms, "
                    + "ttl_seconds and lfu_decay_seconds must be >= 0");
        }
        if (stepPercentage < 0 || stepPercentage > 100) {
            throw new IllegalArgumentException("reclaim_step_percentage must be within 0..100, got " + stepPercentage);
        }
    }

    /** The check interval actually used. */
    public long periodMs() {
        return triggerPeriodMs > 0 ? triggerPeriodMs : 100;
    }

    /** Reads KVCM's {@code cache_config.reclaim_strategy} JSON (names or numbers for the policy). */
    public static ReclaimConfig fromJson(JsonNode r) {
        if (r == null || r.isMissingNode() || r.isNull()) {
            return DEFAULT;
        }
        JsonNode pol = r.path("reclaim_policy");
        ReclaimPolicy policy = pol.isMissingNode() ? DEFAULT.policy() : ReclaimPolicy.parse(pol.asText());
        JsonNode trig = r.path("trigger_strategy");
        return new ReclaimConfig(policy,
                trig.path("used_percentage").asDouble(0),
                trig.path("used_size").asLong(0),
                r.path("trigger_period_seconds").asLong(0) * 1000,
                r.path("reclaim_step_size").asLong(0),
                r.path("reclaim_step_percentage").asInt(0),
                r.path("delay_before_delete_ms").asLong(DEFAULT.delayBeforeDeleteMs()),
                r.path("ttl_seconds").asLong(0),
                r.path("lfu_decay_seconds").asInt(DEFAULT.lfuDecaySeconds()));
    }

    public ObjectNode toJson() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("reclaim_policy", "POLICY_" + policy.name());
        n.putObject("trigger_strategy").put("used_percentage", usedPercentage).put("used_size", usedSize);
        n.put("trigger_period_seconds", triggerPeriodMs / 1000);
        n.put("reclaim_step_size", stepSize);
        n.put("reclaim_step_percentage", stepPercentage);
        n.put("delay_before_delete_ms", delayBeforeDeleteMs);
        n.put("ttl_seconds", ttlSeconds);
        n.put("lfu_decay_seconds", lfuDecaySeconds);
        return n;
    }
}
