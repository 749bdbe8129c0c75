package dev.kvpool.api.events;

/** The three Kafka streams of ../shared/spec/events.md; every record is keyed as the spec says. */
public final class Topics {
    /** Control-plane config changes, keyed by object name, written from the outbox. */
    public static final String CONFIG = "kvpool.config";
    /** Metadata-plane operations, keyed by instance id. */
    public static final String CACHE = "kvpool.cache";
    /** Data-agent block lifecycle batches, keyed by instance id. */
    public static final String BLOCKS = "kvpool.blocks";

    private Topics() {
    }
}
