package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The local copy's primitive map against a HashMap, and read by threads while its one writer changes it. */
class ServedMapTest {

    private static long[] locsOf(Block b) {
        long[] out = new long[b.size() * 2];
        for (int r = 0; r < b.size(); r++) {
            out[2 * r] = b.a(r);
            out[2 * r + 1] = b.b(r);
        }
        return out;
    }

    @Test
    void matchesAHashMapThroughPutsRemovesClearsAndGrowth() {
        Random rnd = new Random(7);
        ServedMap m = new ServedMap();
        Map<Long, long[]> truth = new HashMap<>();
        // a small key space so that removes leave tombstones that inserts reuse, and 0 and -1 are ordinary keys
        long[] space = new long[5000];
        for (int i = 0; i < space.length; i++) {
            space[i] = i < 2 ? -i : rnd.nextLong();
        }
        for (int op = 0; op < 400_000; op++) {
            long k = space[rnd.nextInt(space.length)];
            int what = rnd.nextInt(100);
            if (what < 60) {
                long[] locs = new long[2 * (1 + (rnd.nextInt(10) == 0 ? rnd.nextInt(3) : 0))];
                for (int j = 0; j < locs.length; j++) {
                    locs[j] = rnd.nextLong();
                }
                m.put(k, locs);
                truth.put(k, locs);
            } else if (what < 99 || op % 50_000 != 0) {
                m.remove(k);
                truth.remove(k);
            } else {
                m.clear();
                truth.clear();
            }
            if (op % 20_000 == 0) {
                assertEquals(truth.size(), m.size(), "size after op " + op);
                Block[] out = new Block[space.length];
                m.getAll(space, 0, space.length, out);
                for (int i = 0; i < space.length; i++) {
                    long[] want = truth.get(space[i]);
                    if (want == null) {
                        assertNull(out[i], "key #" + i + " after op " + op);
                    } else {
                        assertEquals(space[i], out[i].key());
                        assertArrayEquals(want, locsOf(out[i]), "key #" + i + " after op " + op);
                    }
                }
            }
        }
        assertEquals(truth.size(), m.size());
    }

    /** Every value the writer puts has b = ~a (and the extra pair likewise): a torn read would break that. */
    @Test
    @Timeout(60)
    void readersNeverSeeHalfAnUpdate() throws Exception {
        ServedMap m = new ServedMap();
        int n = 20_000;
        long[] keys = new long[n];
        Random rnd = new Random(3);
        for (int i = 0; i < n; i++) {
            keys[i] = rnd.nextLong();
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<String> broken = new AtomicReference<>();
        AtomicLong reads = new AtomicLong(), hits = new AtomicLong();
        List<Thread> readers = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            Thread t = Thread.ofPlatform().start(() -> {
                Block[] out = new Block[512];
                Random rr = new Random();
                while (!stop.get()) {
                    int from = rr.nextInt(n - out.length);
                    m.getAll(keys, from, out.length, out);
                    reads.incrementAndGet();
                    for (int i = 0; i < out.length; i++) {
                        Block b = out[i];
                        if (b == null) {
                            continue;
                        }
                        hits.incrementAndGet();
                        if (b.key() != keys[from + i]) {
                            broken.compareAndSet(null, "wrong key");
                        }
                        for (int j = 0; j < b.size(); j++) {
                            if (b.b(j) != ~b.a(j)) {
                                broken.compareAndSet(null, "torn: a=" + b.a(j) + " b=" + b.b(j));
                            }
                        }
                    }
                }
            });
            readers.add(t);
        }
        Random wr = new Random(11);
        long end = System.nanoTime() + 3_000_000_000L;
        long writes = 0;
        while (System.nanoTime() < end && broken.get() == null) {
            long k = keys[wr.nextInt(n)];
            int what = wr.nextInt(100);
            if (what < 70) {
                long a = wr.nextLong();
                long[] locs = wr.nextInt(8) == 0 ? new long[] {a, ~a, a + 1, ~(a + 1)} : new long[] {a, ~a};
                m.put(k, locs);
            } else if (what < 99) {
                m.remove(k);
            } else if (wr.nextInt(200) == 0) {
                m.clear();
            }
            writes++;
        }
        stop.set(true);
        for (Thread t : readers) {
            t.join();
        }
        assertNull(broken.get(), broken.get());
        assertTrue(reads.get() > 100 && hits.get() > 0 && writes > 10_000,
                "reads " + reads + ", hits " + hits + ", writes " + writes);
    }
}
