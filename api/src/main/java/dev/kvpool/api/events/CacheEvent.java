package dev.kvpool.api.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * One {@code kvpool.cache} record: a metadata-plane operation, enough to replay the workload. {@code blockMask}
 * is KVCM's mask as sent: an Integer offset or a boolean[]; null when the call had none. {@code sessionId} pairs a
 * FinishWriteCache with its StartWriteCache; {@code reason} says why an Evict happened (water_level, ttl ...).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CacheEvent(
        @JsonProperty("type") String type,
        @JsonProperty("instance_id") String instanceId,
        @JsonProperty("trigger_time_us") long triggerTimeUs,
        @JsonProperty("query_type") String queryType,
        @JsonProperty("keys") long[] keys,
        @JsonProperty("block_mask") Object blockMask,
        @JsonProperty("sw_size") Integer swSize,
        @JsonProperty("hit_count") Integer hitCount,
        @JsonProperty("bytes") Long bytes,
        @JsonProperty("reason") String reason,
        @JsonProperty("session_id") String sessionId) {

    public static final String GET_CACHE_LOCATION = "GetCacheLocation", START_WRITE_CACHE = "StartWriteCache",
            FINISH_WRITE_CACHE = "FinishWriteCache", EVICT = "Evict", REMOVE = "Remove";
}
