package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.ReclaimConfig;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.sim.TraceSimulation;
import dev.kvpool.meta.slots.Slots;
import dev.kvpool.meta.support.RedisGroup;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PREFIX_LRU on a real Redis: the rounds after the first are served from the access queue (no further HSCAN), a
 * chain touched after the pass survives, whole seconds go, and no cached block is left without its prefix; a
 * large index is read a page per round, and what changes meanwhile is ranked right. TTL expiry of a large index
 * goes a page per round too, evicting as it finds.
 */
class RedisReclaimIT {
    private static final long T0 = 1_763_800_000_000L;

    @TempDir
    Path dir;

    @Test
    void roundsAfterTheFirstPassComeFromTheQueueAndSpareTouchedChains() throws Exception {
        try (Chains ch = new Chains(dir, 100, 30, PREFIX_LRU)) {
            RedisGroup rg = ch.rg;
            Deletions deletions = ch.deletions;
            Instance inst = rg.inst;
            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, deletions, ch.recovery, () -> true,
                    (i, p, re, k, b, y) -> { },
                    Reclaimer.Settings.DEFAULT);
            GroupConfig g = rg.registry.group("g");
            long now = T0 + 100_000;
            assertEquals(4, r.runGroup(g, now), "first round: seconds 0 and 1 (4 blocks; a third would make 6)");
            assertEquals(1, r.scans.get());
            // a prefix hit on chain 3 after the pass: the read path touches the whole prefix
            inst.index.touch(new long[]{1003, 2003}, 0, 2, (int) (now / 1000) + 1);
            int rounds = 0;
            while (r.runGroup(g, now + 2000) > 0) {
                rounds++;
                deletions.drain();
            }
            deletions.drain();
            assertEquals(1, r.scans.get(), "every later round was served by the access queue");
            // a step takes no more than brings the group under its level (50 blocks) by 1 % of it, and PREFIX_LRU a
            // whole second (one chain, 2 blocks) at least: at 52, 3 must go (a second chain would make 4); at 50, 1
            assertEquals(3, rounds, "60 → 56 → 52 → 50 → 48 blocks");
            for (int c = 0; c < 30; c++) {
                boolean gone = c <= 6 && c != 3; // chains 0-2 and 4-6, oldest first; 3 was touched since
                for (long k : new long[]{1000 + c, 2000 + c}) {
                    if (gone) {
                        assertNull(inst.index.get(k), "key " + k + " should be evicted");
                    } else {
                        assertNotNull(inst.index.get(k), "key " + k + " should be cached");
                    }
                }
            }
            assertEquals(48, inst.index.keyCount());
            assertEquals(48, inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum(),
                    "evicted slots went back to the allocator");
        }
    }

    @Test
    void aLargeIndexIsPassedOverAPageARoundWhileItChanges() throws Exception {
        // 300 chains = 600 blocks: more than the 512 entries Redis 7 keeps in one listpack (which HSCAN returns whole,
        // whatever COUNT says)
        try (Chains ch = new Chains(dir, 1200, 300, PREFIX_LRU)) {
            RedisGroup rg = ch.rg;
            Deletions deletions = ch.deletions;
            Instance inst = rg.inst;
            // pages of about 8 keys: the pass takes many rounds, during which nothing of this index is evicted
            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, deletions, ch.recovery, () -> true,
                    (i, p, re, k, b, y) -> { },
                    new Reclaimer.Settings(262_144, 4096, 0, 1 << 20, 8));
            GroupConfig g = rg.registry.group("g");
            long now = T0 + 400_000;
            ch.save(300, now - 10_000); // 602 blocks: over the level
            int idle = 0;
            int evicted = 0;
            for (int call = 0; evicted == 0; call++) {
                if (call == 3) {
                    // mid-pass: a prefix hit on the oldest chain, and a new chain written now
                    inst.index.touch(new long[]{1000, 2000}, 0, 2, (int) (now / 1000) + 1);
                    ch.save(301, now + 1000);
                }
                evicted = r.runGroup(g, now + 2000L * call);
                idle += evicted == 0 ? 1 : 0;
                assertTrue(call < 1000, "the pass never finished");
            }
            assertTrue(idle >= 5, "read a page per round: " + idle + " rounds before the first eviction");
            deletions.drain();
            assertEquals(1, r.scans.get(), "one pass");
            assertEquals(4, evicted, "chains 1 and 2: 604 → 600, still at 50 %");
            // 1 block must go, and the margin (1 % of the level: 6 blocks): the step's 5, as two whole seconds
            assertEquals(4, r.runGroup(g, now + 60_000), "chains 3 and 4: from the queue");
            deletions.drain();
            assertEquals(0, r.runGroup(g, now + 61_000), "596 blocks: below the level");
            assertEquals(1, r.scans.get(), "the second round came from the queue");
            for (int c = 0; c <= 301; c++) {
                boolean gone = c >= 1 && c <= 4; // 0 was touched during the pass; 301 was written during it
                for (long k : new long[]{1000 + c, 2000 + c}) {
                    assertEquals(gone, inst.index.get(k) == null, "key " + k + (gone ? " kept" : " evicted"));
                }
            }
            assertEquals(596, inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum());
        }
    }

    /** Soft level 50 %, 5 blocks per round (PREFIX_LRU takes whole seconds). */
    private static final ReclaimConfig PREFIX_LRU = new ReclaimConfig(ReclaimPolicy.PREFIX_LRU, 0.5, 0, 0, 5, 0, 0, 0, 60);

    @Test
    void ttlExpiryOfALargeIndexGoesAPageARoundAndEvictsAsItFinds() throws Exception {
        // no water level; blocks written more than 100 s ago expire
        var ttl = new ReclaimConfig(ReclaimPolicy.TTL, 0, 0, 0, 0, 0, 0, 100, 60);
        try (Chains ch = new Chains(dir, 1200, 300, ttl)) {
            Instance inst = ch.rg.inst;
            Reclaimer r = new Reclaimer(ch.rg.registry, ch.rg.ledger, ch.deletions, ch.recovery, () -> true,
                    (i, p, re, k, b, y) -> { },
                    new Reclaimer.Settings(262_144, 4096, 0, 1 << 20, 8));
            GroupConfig g = ch.rg.registry.group("g");
            long now = T0 + 250_000; // chains 0-149 were written more than 100 s ago
            int rounds = 0, evicting = 0, evicted = 0;
            do {
                int e = r.runGroup(g, now + rounds * 10L);
                evicted += e;
                evicting += e > 0 ? 1 : 0;
                if (rounds++ == 3) {
                    ch.save(300, now); // written during the pass: fresh
                }
                ch.deletions.drain();
                assertTrue(rounds < 1000, "the expiry pass never finished");
            } while (r.scans.get() == 0);
            assertEquals(300, evicted, "every block older than the TTL, once");
            assertTrue(evicting > 5, "evicted as the pages came: " + evicting + " rounds evicted");
            for (int c = 0; c <= 300; c++) {
                boolean gone = c < 150;
                for (long k : new long[]{1000 + c, 2000 + c}) {
                    assertEquals(gone, inst.index.get(k) == null, "key " + k + (gone ? " kept" : " evicted"));
                }
            }
            assertEquals(0, r.runGroup(g, now + 5_000), "the next pass is not due yet (a tenth of the TTL)");
            assertEquals(1, r.scans.get());
            assertEquals(302, inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum());
        }
    }

    @Test
    void aGroupsChecksCostOneRoundTripWhateverTheNumberOfInstances() throws Exception {
        var lru = new ReclaimConfig(ReclaimPolicy.LRU, 0.5, 0, 0, 5, 0, 0, 0, 60);
        try (Chains ch = new Chains(dir, 1_000_000, 1, lru)) {
            RedisGroup rg = ch.rg;
            GroupConfig was = rg.registry.group("g");
            // at most 20 keys an instance: 13 instances make a key level of 0.5 × 260 = 130 keys
            rg.registry.putGroup(new GroupConfig(was.name(), was.storageCandidates(), was.quotaGroupName(),
                    was.maxInstanceCount(), was.capacity(), was.typeQuotas(), was.prefer(), 20, was.mutexShardNum(),
                    was.searchCacheCapacity(), was.extraInfo(), was.userData(), was.version() + 1, was.reclaim(),
                    was.eventReportStorageCandidates()));
            GroupConfig g = rg.registry.group("g");
            List<Instance> others = new java.util.ArrayList<>();
            for (int i = 0; i < 12; i++) {
                Instance inst = RedisGroup.register(rg.registry, "other-" + i);
                others.add(inst);
                ch.clock.set(T0 + i);
                rg.save(ch.write, inst, 0, 10, 10);
            }
            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, ch.deletions, ch.recovery, () -> true,
                    (i, p, re, k, b, y) -> { },
                    Reclaimer.Settings.DEFAULT);
            long before = rg.store.roundTrips();
            assertNull(r.trigger(g), "122 keys: under the level");
            assertEquals(0, r.runGroup(g, T0 + 100_000));
            assertEquals(2, rg.store.roundTrips() - before, "one round trip for 13 key counts, per check");

            // each instance holds a session past its deadline: one round trip finds them all, and only them
            ch.clock.set(T0 + 50_000);
            long key = 100;
            for (Instance inst : others) {
                ch.write.start(inst, new long[] {key++}, List.of(), 30, 1); // deadline T0 + 80 s
            }
            before = rg.store.roundTrips();
            assertEquals(0, ch.write.expire(T0 + 79_999), "none due yet");
            assertEquals(1, rg.store.roundTrips() - before, "one round trip for 13 instances' sessions");
            assertEquals(12, ch.write.expire(T0 + 80_000));
            for (Instance inst : others) {
                assertTrue(inst.index.sessions().isEmpty(), "closed: " + inst.id);
            }

            rg.save(ch.write, rg.inst, 10, 18, 8); // 130 keys: at the level
            Reclaimer.Trigger t = r.trigger(g);
            assertNotNull(t, "130 of 260 keys");
            assertEquals(Reclaimer.Reason.KEY_COUNT, t.reason());
            assertTrue(r.runGroup(g, T0 + 200_000) > 0);
        }
    }

    /** Group "g" on Redis with {@code reclaim}, and {@code chains} chains saved, chain c at second c. */
    private static final class Chains implements AutoCloseable {
        final TraceSimulation.TraceClock clock = new TraceSimulation.TraceClock();
        final RedisGroup rg;
        final Deletions deletions;
        final WritePath write;
        final Recovery recovery;

        Chains(Path dir, int capacityBlocks, int chains, ReclaimConfig reclaim) throws Exception {
            rg = new RedisGroup(dir, capacityBlocks * 1000L, reclaim, o -> o);
            deletions = new Deletions(rg.registry, rg.ledger, clock);
            write = new WritePath(rg.registry, rg.ledger, deletions, new WritePath.Settings(30, 3600), clock);
            recovery = new Recovery(rg.registry, rg.ledger, deletions);
            for (int c = 0; c < chains; c++) {
                save(c, T0 + c * 1000L);
            }
        }

        /** Chain c: prefix 1000 + c and its extension 2000 + c, saved in one request at {@code atMs}. */
        void save(int c, long atMs) {
            clock.set(atMs);
            var o = write.start(rg.inst, new long[]{1000 + c, 2000 + c}, List.of(), 30, 1);
            write.finish(rg.inst, o.sessionId(), Mask.prefix(2),
                    rg.store::sessionOwner);
        }

        @Override
        public void close() throws Exception {
            try {
                deletions.close();
            } finally {
                rg.close();
            }
        }
    }
}
