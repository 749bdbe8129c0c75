package dev.kvpool.agent.events;

import dev.kvpool.api.events.BlockBatch.BlockEvent;

/** Where block lifecycle events go: the Kafka publisher, nothing (events off), or a list in tests. */
@FunctionalInterface
public interface EventSink {
    EventSink NONE = e -> { };

    void publish(BlockEvent e);
}
