package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.ReclaimConfig;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.sim.TraceSimulation;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Which blocks each policy evicts, through the real read path, write path and reclaimer on a replayed clock.
 * Quota 10 blocks, soft water level 80 %: the eighth block triggers, and one-block steps evict until below 8.
 */
class ReclaimPolicyTest {
    private static final long T0 = 1_763_800_000_000L;

    private static ReclaimConfig cfg(ReclaimPolicy p, long ttl) {
        return new ReclaimConfig(p, 0.8, 0, 0, 1, 0, 0, ttl, 60);
    }

    private static long sec(int s) {
        return T0 + s * 1000L;
    }

    private static Set<Long> keys(long... k) {
        Set<Long> s = new TreeSet<>();
        for (long x : k) {
            s.add(x);
        }
        return s;
    }

    /** A round's budget split by usage adds up to the budget exactly, the blocks left over going to the largest. */
    @Test
    void fairSharesAddUpToTheBudgetInProportionToUsage() {
        assertEquals(java.util.List.of(6L, 3L, 1L), java.util.Arrays.stream(Reclaimer.fairShares(10, new long[] {600, 300, 100}, 1000))
                .boxed().toList());
        // 3 blocks over 12 equal instances: 3 go in all (it was at least one each: 12)
        long[] s = Reclaimer.fairShares(3, new long[] {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 60);
        assertEquals(3, java.util.Arrays.stream(s).sum());
        // an instance with nothing loses nothing; 7 over 2 : 1 → 5 and 2 (4.67 and 2.33)
        assertEquals(java.util.List.of(5L, 0L, 2L), java.util.Arrays.stream(Reclaimer.fairShares(7, new long[] {2, 0, 1}, 3))
                .boxed().toList());
    }

    @Test
    void lruEvictsByLastAccessNotByWrite() {
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.LRU, 0), 10, 16)) {
            for (int k = 0; k < 7; k++) {
                sim.request(sec(k), new long[]{k}); // written at seconds 0..6: just below the water level
            }
            assertEquals(0, sim.evictedBlocks);
            // KVCM would evict key 0 first: its LRU time is refreshed only by writes. A read hit counts here.
            sim.request(sec(100), new long[]{0});
            sim.request(sec(101), new long[]{7}); // 8 blocks: at 80 %; evict down to 7
            sim.request(sec(102), new long[]{8});
            assertEquals(keys(0, 3, 4, 5, 6, 7, 8), new TreeSet<>(sim.cached()));
            assertEquals(2, sim.evictedBlocks);
            assertEquals(7, sim.usedSlots(sim.instance()), "evicted slots went back to the allocator");
        }
    }

    @Test
    void lfuEvictsTheLeastHitFirst() {
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.LFU, 0), 10, 16)) {
            for (int k = 0; k < 7; k++) {
                sim.request(sec(k), new long[]{k});
            }
            for (int hit = 0; hit < 40; hit++) {
                for (int k = 1; k < 7; k++) {
                    if (k != 3 && k != 5) {
                        sim.request(sec(10 + hit / 10), new long[]{k}); // 40 hits each, except keys 0, 3 and 5
                    }
                }
            }
            sim.request(sec(20), new long[]{3}); // one hit for key 3
            sim.request(sec(21), new long[]{7}); // new blocks, no hits yet
            sim.request(sec(22), new long[]{8});
            // lowest counters: 0 (never hit, written at second 0) and 5 (never hit, second 5); then 7, 8 and 3
            assertEquals(keys(1, 2, 3, 4, 6, 7, 8), new TreeSet<>(sim.cached()));
        }
    }

    @Test
    void ttlEvictsOldestWritesAndExpiresBelowTheWaterLevel() {
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.TTL, 0), 10, 16)) {
            for (int k = 0; k < 7; k++) {
                sim.request(sec(k), new long[]{k});
            }
            sim.request(sec(50), new long[]{0}); // a hit does not save a block from TTL
            sim.request(sec(51), new long[]{7});
            sim.request(sec(52), new long[]{8});
            assertEquals(keys(2, 3, 4, 5, 6, 7, 8), new TreeSet<>(sim.cached()));
        }
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.TTL, 100), 10, 16)) {
            for (int k = 0; k < 3; k++) {
                sim.request(sec(k), new long[]{k}); // far below the water level
            }
            sim.request(sec(80), new long[]{3});
            assertEquals(keys(0, 1, 2, 3), new TreeSet<>(sim.cached()));
            sim.request(sec(102), new long[]{4}); // keys 0 and 1 are now older than 100 s
            assertEquals(keys(2, 3, 4), new TreeSet<>(sim.cached()));
        }
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.TTL, 100), 10, 16)) {
            for (int s = 0; s < 40; s++) {
                sim.request(sec(s), new long[]{1}); // below the water level: only expiry reads the index
            }
            // an expiry pass reads the whole index: one per tenth of the TTL (here 10 s), not one per round
            assertEquals(4, sim.reclaimer().scans.get());
        }
    }

    @Test
    void prefixLruNeverSplitsAChainAtItsBoundarySecond() {
        // a 9-block chain written in one request: every block has the same access second
        long[] chain = {10, 11, 12, 13, 14, 15, 16, 17, 18};
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.PREFIX_LRU, 0), 10, 16)) {
            sim.request(sec(0), new long[]{1});
            sim.request(sec(5), chain);
            // block 1 is oldest and goes alone; 9 of 10 is still over 80 %, and the chain's tail cannot go without
            // its prefix (same second), so the whole chain goes
            Set<Long> left = sim.cached();
            assertFalse(left.contains(1L));
            assertTrue(left.isEmpty(), "chain split: " + left);
        }
        try (var sim = new TraceSimulation(cfg(ReclaimPolicy.LRU, 0), 10, 16)) {
            sim.request(sec(0), new long[]{1});
            sim.request(sec(5), chain);
            // plain LRU takes exactly the step it needs, splitting the chain anywhere
            assertEquals(7, sim.cached().size());
        }
    }

    @ParameterizedTest
    @EnumSource(value = ReclaimPolicy.class, names = {"LRU", "PREFIX_LRU"})
    void manyRoundsComeFromOnePassAndSpareWhatWasTouchedSince(ReclaimPolicy policy) {
        var c = new ReclaimConfig(policy, 0.8, 0, 0, 1, 0, 0, 0, 60);
        try (var sim = new TraceSimulation(c, 1000, 16)) {
            for (int k = 0; k < 799; k++) {
                sim.request(sec(k), new long[]{k}); // one chain per key, one second each: just below 80 %
            }
            assertEquals(0, sim.evictedBlocks);
            assertEquals(0, sim.reclaimer().scans.get());
            Set<Long> touched = new TreeSet<>();
            for (int r = 0; r < 100; r++) {
                if (r % 10 == 0) {
                    // a hit on a key the pass queued, still ahead of the evictions
                    assertEquals(1, sim.request(sec(1000 + 2 * r), new long[]{r + 20}));
                    touched.add(r + 20L);
                }
                sim.request(sec(1001 + 2 * r), new long[]{1000 + r}); // 800 blocks: one round evicts one
            }
            assertEquals(100, sim.evictedBlocks);
            Set<Long> expected = new TreeSet<>(touched);
            for (long k = 0, gone = 0; k < 799; k++) {
                if (!touched.contains(k) && gone++ >= 100) {
                    expected.add(k);
                }
            }
            for (long k = 1000; k < 1100; k++) {
                expected.add(k);
            }
            // the 100 oldest untouched keys went, in 100 rounds, all taken from the one pass's queue
            assertEquals(expected, new TreeSet<>(sim.cached()));
            assertEquals(1, sim.reclaimer().scans.get(), "one pass over the index for 100 rounds");
        }
    }

    @Test
    void theQueueGrowsWithTheIndexSoEvictionOutpacesThePass() {
        int limit = 1 << 23;
        // small index: 256 rounds' worth (at least 4,096 keys)
        assertEquals(256_000, VictimSelector.queueCapacity(limit, 1000, 400_000));
        assertEquals(4096, VictimSelector.queueCapacity(limit, 10, 50_000));
        // never a heap larger than the index (it is allocated whole)
        assertEquals(200_000 + 25_000 + 1024, VictimSelector.queueCapacity(limit, 1000, 200_000));
        // huge index: a sixteenth of it, so a pass costing in proportion to the index still yields in proportion
        assertEquals(6_250_000, VictimSelector.queueCapacity(limit, 1000, 100_000_000));
        assertEquals(limit, VictimSelector.queueCapacity(limit, 1000, 1_000_000_000)); // within the limit
        assertEquals(2_000_000, VictimSelector.queueCapacity(1000, 1_000_000, 100_000_000)); // never under two rounds
        assertEquals(0, VictimSelector.queueCapacity(0, 1000, 100_000_000)); // off
    }

    @Test
    void budgetsAreProportionalToUsage() {
        var c = new ReclaimConfig(ReclaimPolicy.LRU, 0.5, 0, 0, 10, 0, 0, 0, 60);
        try (var sim = new TraceSimulation(c, 100, 16)) {
            Instance big = sim.instance();
            Instance small = sim.addInstance("small");
            // the group sits below 50 % while filling: 10 small blocks, then big blocks one request at a time
            for (int k = 0; k < 10; k++) {
                sim.request(small, sec(k), new long[]{1000 + k});
            }
            for (int k = 0; k < 40; k++) {
                sim.request(big, sec(20 + k), new long[]{k});
            }
            // 49 + 1 = 50 blocks: 50 % reached; each round takes 10, shared 9:1 by usage
            sim.request(big, sec(100), new long[]{40});
            int smallLeft = sim.cached(small).size(), bigLeft = sim.cached(big).size();
            assertTrue(smallLeft + bigLeft < 50);
            assertTrue(smallLeft >= 8, "the small instance kept " + smallLeft + " of 10 (KVCM takes 100 from each)");
            assertTrue(bigLeft <= 39, "the big instance kept " + bigLeft + " of 41");
        }
    }
}
