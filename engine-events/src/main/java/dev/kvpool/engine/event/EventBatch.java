package dev.kvpool.engine.event;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One published batch: {@code [ts, events, data_parallel_rank]} (§12.2); {@code dataParallelRank} may be null.
 *
 * @param skippedTags events the decoder skipped because their tag is unknown to it, tag → count (empty when none):
 *     a newer engine's event types must not make a whole batch unreadable, but the caller should count them
 */
public record EventBatch(double ts, List<EngineEvent> events, Integer dataParallelRank,
                         Map<String, Integer> skippedTags) {
    public EventBatch {
        events = List.copyOf(events);
        skippedTags = skippedTags == null ? Map.of() : Map.copyOf(new TreeMap<>(skippedTags));
    }

    public EventBatch(double ts, List<EngineEvent> events, Integer dataParallelRank) {
        this(ts, events, dataParallelRank, Map.of());
    }

    /** Number of events skipped for an unknown tag. */
    public int skippedCount() {
        int n = 0;
        for (int c : skippedTags.values()) {
            n += c;
        }
        return n;
    }
}
