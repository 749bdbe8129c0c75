package dev.kvpool.api.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One {@code kvpool.cache} record: a metadata-plane operation, enough to replay the workload. {@code blockMask}
 * is KVCM's mask as sent: an Integer offset or a boolean[]; null when the call had none. {@code sessionId} pairs a
 * FinishWriteCache with its StartWriteCache; {@code reason} says why an Evict happened (water_level, ttl ...).
 *
 * <p>An operation over more keys than one record should carry (a million-token prompt is 60,000 blocks of 16, and
 * Kafka refuses records over 1 MiB) is sent as {@code parts} consecutive records, {@code part} 0 to parts − 1, in
 * one partition (same key): their {@code keys} and a boolean[] {@code blockMask} are cut at the same places, every
 * other field is the whole operation's, repeated. A consumer concatenates the parts. Both fields are absent on an
 * operation sent whole.
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
        @JsonProperty("session_id") String sessionId,
        @JsonProperty("part") Integer part,
        @JsonProperty("parts") Integer parts) {

    public static final String GET_CACHE_LOCATION = "GetCacheLocation", START_WRITE_CACHE = "StartWriteCache",
            FINISH_WRITE_CACHE = "FinishWriteCache", EVICT = "Evict", REMOVE = "Remove";
    /** Keys per record: ~21 bytes of JSON each, plus ~6 for a boolean mask, stays well under Kafka's 1 MiB. */
    public static final int MAX_KEYS_PER_RECORD = 16_384;

    /** An operation sent whole. */
    public CacheEvent(String type, String instanceId, long triggerTimeUs, String queryType, long[] keys,
                      Object blockMask, Integer swSize, Integer hitCount, Long bytes, String reason, String sessionId) {
        this(type, instanceId, triggerTimeUs, queryType, keys, blockMask, swSize, hitCount, bytes, reason, sessionId,
                null, null);
    }

    /** This operation as the records to send: itself, or its parts of at most {@code maxKeys} keys (or mask bits). */
    public List<CacheEvent> split(int maxKeys) {
        boolean[] mask = blockMask instanceof boolean[] b ? b : null;
        int n = Math.max(keys == null ? 0 : keys.length, mask == null ? 0 : mask.length);
        if (n <= maxKeys) {
            return List.of(this);
        }
        int count = (n + maxKeys - 1) / maxKeys;
        List<CacheEvent> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int from = i * maxKeys, to = Math.min(n, from + maxKeys);
            out.add(new CacheEvent(type, instanceId, triggerTimeUs, queryType, cut(keys, from, to),
                    mask == null ? blockMask : cut(mask, from, to), swSize, hitCount, bytes, reason, sessionId, i,
                    count));
        }
        return out;
    }

    private static long[] cut(long[] a, int from, int to) {
        return a == null ? null : Arrays.copyOfRange(a, Math.min(from, a.length), Math.min(to, a.length));
    }

    private static boolean[] cut(boolean[] a, int from, int to) {
        return Arrays.copyOfRange(a, Math.min(from, a.length), Math.min(to, a.length));
    }
}
