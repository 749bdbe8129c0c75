package dev.kvpool.api.events;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * CloudEvents 1.0 Kafka binary-mode headers, the same names SmallRye's Kafka connector writes. Producers that use
 * a plain {@code KafkaProducer} (the hot paths) add them through {@link #of}; consumers dedupe on {@code ce_id}.
 */
public final class CloudEventHeaders {
    public static final String ID = "ce_id";
    public static final String SOURCE = "ce_source";
    public static final String TYPE = "ce_type";
    public static final String TIME = "ce_time";
    public static final String SPEC_VERSION = "ce_specversion";
    public static final String CONTENT_TYPE = "content-type";
    /**
     * Extension attribute of {@code kvpool.cache} records: how many of its operations the publishing node dropped
     * (queue full while Kafka was slow or down) or could not deliver since its previous record; absent when none.
     * Summed over a topic, it says how much of the recorded workload is missing.
     */
    public static final String MISSING_BEFORE = "ce_missingbefore";

    public static final String TYPE_BLOCKS = "dev.kvpool.blocks.batch";
    public static final String TYPE_CACHE_PREFIX = "dev.kvpool.cache.";
    public static final String TYPE_CONFIG_PREFIX = "dev.kvpool.config.";

    private CloudEventHeaders() {
    }

    /** Header name → UTF-8 value, in the order they are written. */
    public static Map<String, byte[]> of(String id, String source, String type, Instant time) {
        if (id == null || id.isEmpty() || source == null || source.isEmpty() || type == null || type.isEmpty()) {
            throw new IllegalArgumentException("a CloudEvent needs id, source and type");
        }
        var h = new LinkedHashMap<String, byte[]>();
        h.put(SPEC_VERSION, utf8("1.0"));
        h.put(ID, utf8(id));
        h.put(SOURCE, utf8(source));
        h.put(TYPE, utf8(type));
        h.put(TIME, utf8(time.toString()));
        h.put(CONTENT_TYPE, utf8("application/json"));
        return h;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
