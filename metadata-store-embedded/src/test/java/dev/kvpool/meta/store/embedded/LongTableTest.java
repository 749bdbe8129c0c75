package dev.kvpool.meta.store.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.meta.index.Loc;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** {@link LongTable} against {@link HashMap} as the oracle, plus the probe-run invariant after every deletion. */
class LongTableTest {

    private record Entry(long[] locs, long meta) {
    }

    private static int home(LongTable t, long key) {
        return (int) (((dev.kvpool.meta.index.KeyHash.mix(key) & 0xFFFFFFFFL) * t.capacity()) >>> 32);
    }

    /**
     * What makes lookups without tombstones correct: every slot between a key's home slot and the slot it sits in
     * (cyclically) is occupied. Also: live slots are exactly {@code size}, and no key sits in two slots.
     */
    private static void assertProbeInvariant(LongTable t) {
        int cap = t.capacity();
        int live = 0;
        Set<Long> keys = new HashSet<>();
        for (int p = 0; p < cap; p++) {
            if (!t.live(p)) {
                continue;
            }
            live++;
            assertTrue(keys.add(t.key(p)), "key " + t.key(p) + " in two slots");
            for (int q = home(t, t.key(p)); q != p; q = q + 1 == cap ? 0 : q + 1) {
                if (!t.live(q)) {
                    fail("gap at slot " + q + " between home " + home(t, t.key(p)) + " and slot " + p + " of key "
                            + t.key(p));
                }
            }
        }
        assertEquals(t.size(), live, "live slots");
        assertTrue(t.size() <= cap * 0.8 + 1, "fill " + t.size() + "/" + cap);
    }

    private static void assertSame(Map<Long, Entry> model, LongTable t, SplittableRandom r) {
        assertEquals(model.size(), t.size());
        for (Map.Entry<Long, Entry> e : model.entrySet()) {
            int slot = t.find(e.getKey());
            assertTrue(slot >= 0, "missing key " + e.getKey());
            assertEquals(e.getKey(), t.key(slot));
            assertArrayEquals(e.getValue().locs(), t.locs(slot), "locs of " + e.getKey());
            assertEquals(e.getValue().meta(), t.meta(slot), "meta of " + e.getKey());
        }
        for (int i = 0; i < 100; i++) {
            long k = r.nextLong();
            if (!model.containsKey(k)) {
                assertEquals(-1, t.find(k));
            }
        }
        assertProbeInvariant(t);
    }

    private static long[] randomLocs(SplittableRandom r) {
        int n = r.nextInt(10) < 8 ? 1 : 2 + r.nextInt(3); // mostly one replica, sometimes 2-4
        long[] locs = new long[n * 2];
        for (int i = 0; i < n; i++) {
            locs[2 * i] = Loc.a(Loc.randomId(r), 1 + r.nextInt(4), r.nextInt(Loc.MAX_STORAGE + 1),
                    r.nextInt(Loc.MAX_SPEC_GROUP + 1));
            locs[2 * i + 1] = r.nextInt(5) == 0 ? 0 : r.nextLong(); // word B may be anything, 0 included
        }
        return locs;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4})
    void matchesAHashMapUnderRandomOperations(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        // a pool that forces updates and removals of present keys; edge keys included
        long[] pool = new long[3000];
        pool[0] = 0;
        pool[1] = -1;
        pool[2] = Long.MIN_VALUE;
        pool[3] = Long.MAX_VALUE;
        pool[4] = 1;
        for (int i = 5; i < pool.length; i++) {
            pool[i] = switch (i % 3) {
                case 0 -> r.nextLong();
                case 1 -> -r.nextInt(1_000_000);   // small negative keys
                default -> r.nextInt(1_000_000);    // small positive keys
            };
        }
        LongTable t = new LongTable();
        Map<Long, Entry> model = new HashMap<>();
        int ops = 120_000;
        for (int op = 0; op < ops; op++) {
            // phases: grow (mostly puts), shrink (mostly removes), mixed
            int phase = (op / 20_000) % 3;
            int putPct = phase == 0 ? 80 : phase == 1 ? 20 : 50;
            long k = pool[r.nextInt(pool.length)];
            int dice = r.nextInt(100);
            if (dice < putPct) {
                long[] locs = randomLocs(r);
                long meta = r.nextLong();
                int delta = t.put(k, locs, meta);
                Entry old = model.put(k, new Entry(locs, meta));
                assertEquals(old == null ? 1 : 0, delta, "put delta");
            } else if (dice < putPct + 5) {
                // an empty replica list removes
                int delta = t.put(k, new long[0], 0);
                assertEquals(model.remove(k) == null ? 0 : -1, delta, "put-empty delta");
            } else if (dice < putPct + 10) {
                int slot = t.find(k);
                assertEquals(model.containsKey(k), slot >= 0);
                if (slot >= 0) {
                    long meta = r.nextLong();
                    t.setMeta(slot, meta);
                    model.put(k, new Entry(model.get(k).locs(), meta));
                }
            } else {
                assertEquals(model.remove(k) != null, t.remove(k), "remove " + k);
            }
            if (op % 4000 == 0) {
                assertSame(model, t, r);
            }
        }
        assertSame(model, t, r);
        // empty it completely through removals, checking the probe runs as it shrinks
        List<Long> left = new ArrayList<>(model.keySet());
        for (int i = 0; i < left.size(); i++) {
            assertTrue(t.remove(left.get(i)));
            model.remove(left.get(i));
            if (i % 97 == 0) {
                assertSame(model, t, r);
            }
        }
        assertEquals(0, t.size());
        assertSame(model, t, r);
    }

    @Test
    void growsKeepingEveryKeyAndStaysWithinTheFillBound() {
        LongTable t = new LongTable();
        assertEquals(16, t.capacity());
        SplittableRandom r = new SplittableRandom(11);
        Map<Long, Entry> model = new HashMap<>();
        int lastCap = t.capacity();
        int grows = 0;
        for (int i = 0; i < 200_000; i++) {
            long k = i * 0x9E3779B97F4A7C15L; // distinct
            long[] locs = {Loc.a(i, Loc.SERVING, 1, 0), i};
            t.put(k, locs, i);
            model.put(k, new Entry(locs, i));
            if (t.capacity() != lastCap) {
                assertTrue(t.capacity() > lastCap);
                assertTrue(t.capacity() <= lastCap * 3L / 2 + 1, "grows by 1.5×");
                lastCap = t.capacity();
                grows++;
            }
            assertTrue(t.size() <= t.capacity() * 0.8 + 1);
        }
        assertTrue(grows > 15);
        assertSame(model, t, r);
        assertEquals(32L * t.capacity(), t.heapBytes());
        double fill = t.size() / (double) t.capacity();
        assertTrue(fill > 0.5 && fill <= 0.8, "fill " + fill);
        t.clear();
        assertEquals(0, t.size());
        assertEquals(16, t.capacity());
        assertEquals(-1, t.find(0));
        assertEquals(-1, t.find(7 * 0x9E3779B97F4A7C15L));
    }

    @Test
    void keyZeroAndReplicaListsRoundTrip() {
        LongTable t = new LongTable();
        assertEquals(-1, t.find(0));
        long a1 = Loc.a(1, Loc.SERVING, 1, 0), a2 = Loc.a(2, Loc.WRITING, 2, 1), a3 = Loc.a(3, Loc.DELETING, 3, 2);
        assertEquals(1, t.put(0, new long[] {a1, 0}, 5));
        int s = t.find(0);
        assertTrue(s >= 0);
        assertArrayEquals(new long[] {a1, 0}, t.locs(s));
        // grow to three replicas, shrink to one: no replica of the old list may survive
        assertEquals(0, t.put(0, new long[] {a1, 10, a2, 20, a3, 30}, 6));
        assertArrayEquals(new long[] {a1, 10, a2, 20, a3, 30}, t.locs(t.find(0)));
        assertEquals(0, t.put(0, new long[] {a3, 30}, 7));
        assertArrayEquals(new long[] {a3, 30}, t.locs(t.find(0)));
        assertEquals(7, t.meta(t.find(0)));
        // removing a multi-replica key and adding it back starts from its new list only
        t.put(-9, new long[] {a1, 1, a2, 2}, 0);
        assertTrue(t.remove(-9));
        assertFalse(t.remove(-9));
        t.put(-9, new long[] {a3, 3}, 0);
        assertArrayEquals(new long[] {a3, 3}, t.locs(t.find(-9)));
        assertEquals(-1, t.put(0, new long[0], 0));
        assertEquals(0, t.put(0, new long[0], 0));
        assertEquals(-1, t.find(0));
        assertEquals(1, t.size());
    }

    @Test
    void refusesReplicaListsItCannotStore() {
        LongTable t = new LongTable();
        assertThrows(IllegalArgumentException.class, () -> t.put(1, new long[] {0, 5}, 0));
        long a = Loc.a(1, Loc.SERVING, 1, 0);
        assertThrows(IllegalArgumentException.class, () -> t.put(1, new long[] {a, 5, 0, 6}, 0));
        assertThrows(IllegalArgumentException.class, () -> t.put(1, new long[] {a}, 0));
        assertEquals(0, t.size());
        assertEquals(-1, t.find(1));
    }

    /** Keys whose home slot in a fresh (capacity 16) table is {@code h}. */
    private static long[] keysWithHome(int h, int n, long[] counter) {
        LongTable probe = new LongTable();
        long[] out = new long[n];
        int got = 0;
        while (got < n) {
            long k = counter[0]++;
            if (home(probe, k) == h) {
                out[got++] = k;
            }
        }
        return out;
    }

    /**
     * Backward-shift deletion on runs that wrap around the end of the table: every single removal and every
     * ordered pair of removals out of a crafted cluster, checked against the oracle and the probe invariant.
     */
    @Test
    void backwardShiftDeletionKeepsWrappingProbeRunsIntact() {
        long[] counter = {-5000};
        // homes 13,13,14,15,15,15,0,0,1,3: one run from slot 13 that wraps to slot 4, then a separate key at 3
        // joins it; 10 keys stay below the growth threshold (12) of capacity 16
        int[] homes = {13, 13, 14, 15, 15, 15, 0, 0, 1, 3};
        Map<Integer, Integer> need = new HashMap<>();
        for (int h : homes) {
            need.merge(h, 1, Integer::sum);
        }
        List<Long> cluster = new ArrayList<>();
        for (Map.Entry<Integer, Integer> e : need.entrySet()) {
            for (long k : keysWithHome(e.getKey(), e.getValue(), counter)) {
                cluster.add(k);
            }
        }
        SplittableRandom r = new SplittableRandom(5);
        int cases = 0;
        for (int order = 0; order < 3; order++) {
            // insertion order changes which key lands where in the run
            List<Long> ins = new ArrayList<>(cluster);
            java.util.Collections.shuffle(ins, new java.util.Random(order));
            for (int i = 0; i < ins.size(); i++) {
                for (int j = -1; j < ins.size(); j++) {
                    if (j == i) {
                        continue;
                    }
                    LongTable t = new LongTable();
                    Map<Long, Entry> model = new HashMap<>();
                    for (long k : ins) {
                        long[] locs = {Loc.a(Math.floorMod(k, 1000) + 1, Loc.SERVING, 1, 0), k};
                        t.put(k, locs, k);
                        model.put(k, new Entry(locs, k));
                    }
                    assertEquals(16, t.capacity(), "the cluster must not trigger growth");
                    assertProbeInvariant(t);
                    assertTrue(t.remove(ins.get(i)));
                    model.remove(ins.get(i));
                    assertSame(model, t, r);
                    if (j >= 0) {
                        assertTrue(t.remove(ins.get(j)));
                        model.remove(ins.get(j));
                        assertSame(model, t, r);
                    }
                    // the freed slots are reusable and the run stays consistent
                    long[] extra = keysWithHome(14, 2, new long[] {1_000_000});
                    for (long k : extra) {
                        long[] locs = {Loc.a(7, Loc.WRITING, 2, 0), 7};
                        t.put(k, locs, 1);
                        model.put(k, new Entry(locs, 1));
                    }
                    assertSame(model, t, r);
                    cases++;
                }
            }
        }
        assertEquals(3 * 10 * 10, cases);
    }

    @Test
    void removingEveryKeyOfAFullRunInEachOrderLeavesAnEmptyTable() {
        long[] counter = {0};
        long[] same = keysWithHome(15, 6, counter); // all want slot 15: the run wraps to slot 4
        SplittableRandom r = new SplittableRandom(9);
        for (int round = 0; round < 50; round++) {
            LongTable t = new LongTable();
            Map<Long, Entry> model = new HashMap<>();
            for (long k : same) {
                long[] locs = {Loc.a(1, Loc.SERVING, 1, 0), k};
                t.put(k, locs, 0);
                model.put(k, new Entry(locs, 0));
            }
            long[] order = same.clone();
            for (int i = order.length - 1; i > 0; i--) {
                int x = r.nextInt(i + 1);
                long tmp = order[i];
                order[i] = order[x];
                order[x] = tmp;
            }
            for (long k : order) {
                assertTrue(t.remove(k));
                model.remove(k);
                assertSame(model, t, r);
            }
            for (int p = 0; p < t.capacity(); p++) {
                assertFalse(t.live(p), "slot " + p + " still live");
            }
        }
        assertEquals(6, Arrays.stream(same).distinct().count());
    }
}
