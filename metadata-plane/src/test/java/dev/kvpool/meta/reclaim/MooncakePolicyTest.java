package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.ReclaimConfig;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.sim.TraceSimulation;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The policies on Mooncake's conversation trace with a quota far below its working set (2,000 blocks ≈ 1 M
 * tokens), checked after every request.
 */
class MooncakePolicyTest {
    private static final long T0 = 1_763_800_000_000L;
    private static List<MooncakeTrace.Request> trace;
    /** hash id → the id before it in some request (ids are prefix-chained, so the parent is unique). */
    private static final Map<Long, Long> parent = new HashMap<>();

    @BeforeAll
    static void load() {
        trace = MooncakeTrace.read(MooncakeTrace.conversation(), 3000);
        for (var r : trace) {
            long[] h = r.hashIds();
            for (int i = 1; i < h.length; i++) {
                Long before = parent.put(h[i], h[i - 1]);
                if (before != null && before != h[i - 1]) {
                    throw new IllegalStateException("hash id " + h[i] + " has two parents");
                }
            }
        }
    }

    private static TraceSimulation sim(ReclaimPolicy p) {
        return new TraceSimulation(new ReclaimConfig(p, 0.9, 0, 0, 0, 5, 0, 0, 60), 2000, MooncakeTrace.BLOCK_SIZE);
    }

    /** Cached blocks whose parent is not cached. */
    private static long orphans(Set<Long> cached) {
        return cached.stream().filter(k -> parent.containsKey(k) && !cached.contains(parent.get(k))).count();
    }

    @Test
    void prefixAwareLruNeverLeavesABlockWithoutItsPrefix() {
        try (var sim = sim(ReclaimPolicy.PREFIX_LRU)) {
            int checked = 0;
            for (var r : trace) {
                sim.request(T0 + r.timestampMs(), r.hashIds());
                Set<Long> cached = sim.cached();
                assertEquals(0, orphans(cached), "after request " + sim.requests + " some cached block lost its prefix");
                assertTrue(cached.size() <= 2000, "over the hard quota: " + cached.size());
                checked++;
            }
            assertTrue(sim.evictedBlocks > 10_000, "the quota must force eviction; evicted " + sim.evictedBlocks);
            assertTrue(sim.hitRate() > 0.02, "hit rate " + sim.hitRate());
            long scans = sim.reclaimer().scans.get(), rounds = sim.reclaimer().evictingRounds.get();
            assertTrue(scans * 5 < rounds, scans + " passes over the index for " + rounds
                    + " evicting rounds: the access queue should serve most rounds");
            assertEquals(trace.size(), checked);
        }
    }

    @Test
    void everyPolicyStaysWithinTheQuotaAndFreesItsSlots() {
        for (ReclaimPolicy p : ReclaimPolicy.values()) {
            try (var sim = sim(p)) {
                for (var r : trace.subList(0, 1500)) {
                    sim.request(T0 + r.timestampMs(), r.hashIds());
                }
                Set<Long> cached = sim.cached();
                assertTrue(cached.size() < 0.9 * 2000 + 1, p + " left " + cached.size() + " blocks above the water level");
                assertEquals(sim.usedBlocks(), sim.usedSlots(sim.instance()), p + ": a file slot per block, none leaked");
                assertTrue(sim.evictedBlocks > 0, p + " evicted nothing");
                System.out.printf("%s: hit rate %.4f, evicted %d%n", p, sim.hitRate(), sim.evictedBlocks);
            }
        }
    }
}
