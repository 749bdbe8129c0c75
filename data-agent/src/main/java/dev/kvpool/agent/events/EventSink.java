package dev.kvpool.agent.events;

import dev.kvpool.api.events.BlockBatch.BlockEvent;

/** Where block lifecycle events go: the Kafka publisher, nothing (events off), or a list in tests. */
@FunctionalInterface
public interface EventSink {
    EventSink NONE = e -> { };

    void publish(BlockEvent e);

    /**
     * For a caller about to publish very many events at once: waits, at most {@code maxMillis}, until the sink has
     * room for them without pushing out what it has yet to deliver; false if it got none in that time.
     */
    default boolean awaitRoom(long maxMillis) {
        return true;
    }
}
