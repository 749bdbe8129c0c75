package dev.kvpool.meta.engine.scores;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a prefix-aware router would gain, per instance, measured on the scores queries themselves: per query the
 * prompt's blocks, the best pod's longest prefix (a prefix-aware router's hit), the mean longest prefix over visible
 * pods (a random router's expected hit) and the KVPool pool's serving prefix. Totals plus one bucket per minute for
 * the last {@link #MINUTES} minutes. The clock is injected so tests move time instead of waiting.
 */
public final class RouterStats {
    public static final int MINUTES = 60;
    /** Instances tracked at most (queries name instances; only known ones are recorded, and never past this). */
    public static final int MAX_INSTANCES = 10_000;

    private final Clock clock;
    private final Map<String, Inst> byInstance = new HashMap<>();

    private static final class Counts {
        long queries, promptBlocks, routed, pool;
        double random;

        void add(int prompt, int routed, double random, int pool) {
            queries++;
            promptBlocks += prompt;
            this.routed += routed;
            this.random += random;
            this.pool += pool;
        }
    }

    private static final class Inst {
        final Counts total = new Counts();
        final Counts[] ring = new Counts[MINUTES];
        final long[] ringMinute = new long[MINUTES];
    }

    public record Minute(Instant minute, long queries, long promptBlocks, double routedHitRate, double randomHitRate,
                         double poolHitRate) {
    }

    public record Snapshot(long queries, long promptBlocks, long routedHitBlocks, double randomHitBlocks,
                           long poolHitBlocks, double routedHitRate, double randomHitRate, double poolHitRate,
                           List<Minute> series) {
    }

    public RouterStats(Clock clock) {
        this.clock = clock;
    }

    private long minuteNow() {
        return Math.floorDiv(clock.millis(), 60_000L);
    }

    /** Records one query; false (not recorded) when {@link #MAX_INSTANCES} others are tracked already. */
    public synchronized boolean record(String instance, int promptBlocks, int routedHitBlocks, double randomHitBlocks,
                                       int poolHitBlocks) {
        Inst in = byInstance.get(instance);
        if (in == null) {
            if (byInstance.size() >= MAX_INSTANCES) {
                return false;
            }
            in = new Inst();
            byInstance.put(instance, in);
        }
        long m = minuteNow();
        int slot = (int) Math.floorMod(m, (long) MINUTES);
        if (in.ring[slot] == null || in.ringMinute[slot] != m) {
            in.ring[slot] = new Counts();
            in.ringMinute[slot] = m;
        }
        in.ring[slot].add(promptBlocks, routedHitBlocks, randomHitBlocks, poolHitBlocks);
        in.total.add(promptBlocks, routedHitBlocks, randomHitBlocks, poolHitBlocks);
        return true;
    }

    private static double rate(double hits, long blocks) {
        return blocks == 0 ? 0 : Math.min(1, hits / blocks);
    }

    /** Totals and the last {@link #MINUTES} minutes (oldest first, the current minute last; empty minutes zero). */
    public synchronized Snapshot snapshot(String instance) {
        Inst in = byInstance.get(instance);
        long now = minuteNow();
        List<Minute> series = new ArrayList<>(MINUTES);
        for (long m = now - MINUTES + 1; m <= now; m++) {
            int slot = (int) Math.floorMod(m, (long) MINUTES);
            Counts c = in != null && in.ring[slot] != null && in.ringMinute[slot] == m ? in.ring[slot] : new Counts();
            series.add(new Minute(Instant.ofEpochMilli(m * 60_000L), c.queries, c.promptBlocks,
                    rate(c.routed, c.promptBlocks), rate(c.random, c.promptBlocks), rate(c.pool, c.promptBlocks)));
        }
        Counts t = in == null ? new Counts() : in.total;
        return new Snapshot(t.queries, t.promptBlocks, t.routed, t.random, t.pool, rate(t.routed, t.promptBlocks),
                rate(t.random, t.promptBlocks), rate(t.pool, t.promptBlocks), series);
    }

    public synchronized Set<String> instances() {
        return Set.copyOf(byInstance.keySet());
    }
}
