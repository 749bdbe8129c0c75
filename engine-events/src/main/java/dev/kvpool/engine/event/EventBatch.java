package dev.kvpool.engine.event;

import java.util.List;

/** One published batch: {@code [ts, events, data_parallel_rank]} (§12.2); {@code dataParallelRank} may be null. */
public record EventBatch(double ts, List<EngineEvent> events, Integer dataParallelRank) {
    public EventBatch {
        events = List.copyOf(events);
    }
}
