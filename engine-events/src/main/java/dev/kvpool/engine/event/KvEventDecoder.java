package dev.kvpool.engine.event;

/**
 * Decodes one vLLM / SGLang KV-event payload (the third ZMQ frame, or a Kafka record value) — kvcm-engine-events.md
 * §12.1 rules: batch as array or map, events as arrays (tag first) or maps (tag under {@code type}), unknown keys and
 * extra trailing elements ignored, missing ones nil.
 */
public final class KvEventDecoder {

    private KvEventDecoder() {
    }

    /** @throws MalformedEventException naming what was wrong; never any other exception on bad bytes */
    public static EventBatch decode(byte[] payload) {
        throw new UnsupportedOperationException("not yet implemented (engine-core helper)");
    }

    /** Bad input: the caller skips the batch and counts it. */
    public static final class MalformedEventException extends RuntimeException {
        public MalformedEventException(String message) {
            super(message);
        }
    }
}
