package dev.kvpool.meta.stats;

import dev.kvpool.meta.reclaim.Reclaimer;
import dev.kvpool.meta.registry.Instance;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * What this replica served, per instance, since it started: prefix queries, the blocks they asked for and found, the
 * blocks FinishWriteCache committed, and the blocks the reclaimer evicted by reason. The hot path adds to
 * {@link LongAdder}s found with one map read; {@link StatsReporter} reads cumulative snapshots and posts the
 * differences to the control plane.
 */
public final class StatsCounters {
    /** Eviction reasons as reported (Reclaimer.Reason in lower case), in the order of {@link Snapshot#evicted}. */
    public static final List<String> REASONS = Arrays.stream(Reclaimer.Reason.values())
            .map(r -> r.name().toLowerCase(Locale.ROOT)).toList();

    /** One instance's counters. */
    public static final class Counts {
        volatile String group;
        /** Queried blocks are kept as hits and misses: any snapshot then has hits <= queried, in every difference too. */
        final LongAdder queries = new LongAdder(), hits = new LongAdder(), misses = new LongAdder(),
                written = new LongAdder();
        final LongAdder[] evicted = new LongAdder[REASONS.size()];

        Counts(String group) {
            this.group = group;
            for (int i = 0; i < evicted.length; i++) {
                evicted[i] = new LongAdder();
            }
        }
    }

    /** Cumulative counts of one instance at one moment. */
    public record Snapshot(String group, long queries, long queried, long hits, long written, long[] evicted) {
        public static Snapshot zero(String group) {
            return new Snapshot(group, 0, 0, 0, 0, new long[REASONS.size()]);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Snapshot s && s.group.equals(group) && s.queries == queries && s.queried == queried
                    && s.hits == hits && s.written == written && Arrays.equals(s.evicted, evicted);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(group, queries, queried, hits, written, Arrays.hashCode(evicted));
        }
    }

    private final ConcurrentHashMap<String, Counts> byInstance = new ConcurrentHashMap<>();

    private Counts of(String instance, String group) {
        Counts c = byInstance.get(instance);
        if (c == null) {
            c = byInstance.computeIfAbsent(instance, k -> new Counts(group));
        }
        if (c.group != group) { // re-registered elsewhere under the same id (a reference check: cheap)
            c.group = group;
        }
        return c;
    }

    public void prefixQuery(Instance inst, long blocks, long hits) {
        prefixQuery(inst.id, inst.group, blocks, hits);
    }

    public void written(Instance inst, long blocks) {
        written(inst.id, inst.group, blocks);
    }

    public void evicted(Instance inst, Reclaimer.Reason reason, long blocks) {
        evicted(inst.id, inst.group, reason, blocks);
    }

    /** A prefix query of {@code blocks} keys that found {@code hits} of them. */
    public void prefixQuery(String instance, String group, long blocks, long hits) {
        Counts c = of(instance, group);
        c.queries.increment();
        c.hits.add(hits);
        c.misses.add(Math.max(0, blocks - hits));
    }

    public void written(String instance, String group, long blocks) {
        if (blocks > 0) {
            of(instance, group).written.add(blocks);
        }
    }

    public void evicted(String instance, String group, Reclaimer.Reason reason, long blocks) {
        if (blocks > 0) {
            of(instance, group).evicted[reason.ordinal()].add(blocks);
        }
    }

    /**
     * Every instance's cumulative counts. Queried blocks are hits plus misses, so hits never exceed them, in a
     * snapshot or in the difference of two (a query read between its two adds shows up whole in the next one).
     */
    public Map<String, Snapshot> snapshot() {
        Map<String, Snapshot> out = new LinkedHashMap<>();
        byInstance.forEach((id, c) -> {
            long hits = c.hits.sum();
            long queried = hits + c.misses.sum();
            long queries = c.queries.sum();
            long[] ev = new long[c.evicted.length];
            for (int i = 0; i < ev.length; i++) {
                ev[i] = c.evicted[i].sum();
            }
            out.put(id, new Snapshot(c.group, queries, queried, hits, c.written.sum(), ev));
        });
        return out;
    }

    /** Drops a removed instance's counters (after what they held was reported). */
    public void forget(String instanceId) {
        byInstance.remove(instanceId);
    }
}
