package dev.kvpool.api.events;

/** The Kafka streams of ../shared/spec/events.md; every record is keyed as the spec says. */
public final class Topics {
    /** Control-plane config changes, keyed by object name, written from the outbox. */
    public static final String CONFIG = "kvpool.config";
    /** Metadata-plane operations, keyed by instance id. */
    public static final String CACHE = "kvpool.cache";
    /** Data-agent block lifecycle batches, keyed by instance id. */
    public static final String BLOCKS = "kvpool.blocks";
    /**
     * vLLM / SGLang KV-event batches as the engines published them (raw msgpack), keyed by instance and pod; headers
     * instance, pod, seq, source. Delete-policy retention (never compaction: every batch matters).
     */
    public static final String ENGINE_EVENTS = "kvpool.engine-events";

    private Topics() {
    }
}
