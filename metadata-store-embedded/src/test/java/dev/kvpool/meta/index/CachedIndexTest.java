package dev.kvpool.meta.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.InstanceIndex.StartResult;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CachedIndexTest {
    private static final int NOW = 1_700_000_000;

    private EmbeddedStore store;
    private InstanceIndex raw;
    private final AtomicLong ids = new AtomicLong(1);
    private int sessions;

    @BeforeEach
    void open() {
        store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
        raw = store.index("i");
    }

    @AfterEach
    void close() {
        store.close();
    }

    private StartResult write(InstanceIndex ix, String s, int minReplicas, long... keys) {
        long[] a = new long[keys.length], b = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = ids.getAndIncrement();
            a[i] = Loc.a(id, Loc.NEW, 1, 0);
            b[i] = id;
        }
        return ix.startWrite(keys, a, b, minReplicas, st -> true, 0, s, NOW, NOW);
    }

    private String sid() {
        return "s" + sessions++;
    }

    private void serve(InstanceIndex ix, long... keys) {
        String s = sid();
        int n = write(ix, s, 1, keys).session().size();
        boolean[] ok = new boolean[n];
        Arrays.fill(ok, true);
        ix.finishWrite(s, ok, NOW);
    }

    private static int status(Block b) {
        return Loc.status(b.a(0));
    }

    @Test
    void countsHitsAndMissesAndCachesOnlyPresentKeys() {
        CachedIndex c = new CachedIndex(raw, 100, 4);
        serve(c, 1, 2);
        assertNotNull(c.get(1));
        assertEquals(0, c.hits());
        assertEquals(1, c.misses());
        Block first = c.get(1);
        assertSame(first, c.get(1));
        assertEquals(2, c.hits());
        assertNull(c.get(3));
        assertNull(c.get(3));
        assertEquals(3, c.misses(), "absent keys are not cached");
        assertEquals(1, c.cachedCount());

        Block[] out = new Block[4];
        c.getAll(new long[] {0, 1, 2, 3, 4}, 1, 4, out); // 1 hit, 2 fills, 3 and 4 absent
        assertSame(first, out[0]);
        assertEquals(2, out[1].key());
        assertNull(out[2]);
        assertNull(out[3]);
        assertEquals(3, c.hits());
        assertEquals(6, c.misses());
        c.getAll(new long[] {1, 2}, 0, 2, out);
        assertEquals(5, c.hits());
        assertEquals(2, c.cachedCount());
    }

    @Test
    void eachShardIsAnLruOfItsShareOfTheCapacity() {
        CachedIndex one = new CachedIndex(raw, 4, 1);
        serve(one, 1, 2, 3, 4, 5);
        for (long k = 1; k <= 4; k++) {
            one.get(k);
        }
        one.get(1); // 1 is now the most recent; 2 the eldest
        one.get(5); // evicts 2
        assertEquals(4, one.cachedCount());
        long h = one.hits();
        one.get(1);
        one.get(3);
        one.get(4);
        one.get(5);
        assertEquals(h + 4, one.hits());
        one.get(2);
        assertEquals(h + 4, one.hits(), "2 was evicted");

        CachedIndex split = new CachedIndex(raw, 64, 4);
        assertEquals(64, split.capacity());
        serve(split, range(100, 1000));
        for (long k = 100; k < 1100; k++) {
            split.get(k);
        }
        assertTrue(split.cachedCount() <= 64);
        assertTrue(split.cachedCount() > 40, "every shard holds its share: " + split.cachedCount());
        // fewer slots than shards: no shard is left with a capacity of zero
        CachedIndex tiny = new CachedIndex(raw, 3, 16);
        assertEquals(3, tiny.capacity());
        tiny.get(100);
        assertEquals(1, tiny.cachedCount());
        assertThrows(IllegalArgumentException.class, () -> new CachedIndex(raw, 10, 3));
        assertThrows(IllegalArgumentException.class, () -> new CachedIndex(raw, -1, 4));
    }

    private static long[] range(long from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = from + i;
        }
        return k;
    }

    @Test
    void aDisabledCacheOnlyPassesThrough() {
        CachedIndex c = new CachedIndex(raw, 0, 8);
        serve(c, 1);
        assertNotNull(c.get(1));
        assertNotNull(c.get(1));
        Block[] out = new Block[2];
        c.getAll(new long[] {1, 2}, 0, 2, out);
        assertEquals(0, c.hits());
        assertEquals(4, c.misses());
        assertEquals(0, c.cachedCount());
        assertEquals(0, c.capacity());
        c.markDeleting(new long[] {1}, 0, 1, null);
        assertEquals(Loc.DELETING, status(c.get(1)));
    }

    /** After every mutating call through the decorator, a read through it sees the new state, never a cached one. */
    @Test
    void everyMutationInvalidatesTheKeysItChanged() {
        CachedIndex c = new CachedIndex(raw, 1000, 4);
        String s = sid();
        write(c, s, 1, 1, 2, 3);
        assertEquals(Loc.WRITING, status(c.get(1)));
        assertEquals(Loc.WRITING, status(c.get(2)));
        assertEquals(Loc.WRITING, status(c.get(3)));
        Block[] out = new Block[3];
        c.getAll(new long[] {1, 2, 3}, 0, 3, out); // cached
        // finishWrite: 1 and 3 serve, 2 is removed
        c.finishWrite(s, new boolean[] {true, false, true}, NOW + 1);
        assertEquals(Loc.SERVING, status(c.get(1)));
        assertNull(c.get(2));
        c.getAll(new long[] {1, 2, 3}, 0, 3, out);
        assertEquals(Loc.SERVING, status(out[0]));
        assertNull(out[1]);
        assertEquals(Loc.SERVING, status(out[2]));
        // startWrite adding a replica to a cached key
        assertEquals(1, c.get(1).size());
        write(c, sid(), 2, 1);
        assertEquals(2, c.get(1).size());
        // markDeleting
        LocList moved = c.markDeleting(new long[] {1, 3}, 0, 2, i -> i == 1);
        assertEquals(2, moved.size());
        assertEquals(Loc.DELETING, status(c.get(1)));
        assertEquals(Loc.SERVING, status(c.get(3)), "skipped, and still cached correctly");
        // purge
        c.purge(1, Loc.id(moved.a(0)));
        assertEquals(1, c.get(1).size());
        c.purge(1, Loc.id(moved.a(1)));
        assertNull(c.get(1));
        // clear
        assertNotNull(c.get(3));
        c.clear();
        assertNull(c.get(3));
        assertEquals(0, c.cachedCount());
        // startWrite on a key that was cached, removed and comes back
        serve(c, 3);
        assertEquals(Loc.SERVING, status(c.get(3)));
    }

    @Test
    void touchUpdatesTheCachedAccessTime() {
        CachedIndex c = new CachedIndex(raw, 100, 4);
        serve(c, 1);
        c.get(1);
        c.touch(new long[] {1, 2}, 0, 2, NOW + 77);
        long hits = c.hits();
        assertEquals(NOW + 77, c.get(1).accessSec());
        assertEquals(hits + 1, c.hits(), "a touch keeps the entry cached");
        assertEquals(NOW + 77, raw.get(1).accessSec());
    }

    @Test
    void invalidateAllCoversMutationsThatBypassedTheDecorator() {
        CachedIndex c = new CachedIndex(raw, 100, 4);
        serve(c, 1);
        assertEquals(Loc.SERVING, status(c.get(1)));
        raw.markDeleting(new long[] {1}, 0, 1, null);
        assertEquals(Loc.SERVING, status(c.get(1)), "documented: the decorator cannot see this");
        c.invalidateAll();
        assertEquals(Loc.DELETING, status(c.get(1)));
    }

    /**
     * The race the per-shard version exists for: a reader misses, reads the old block from the index, and is
     * slow to fill; meanwhile a mutation goes through and invalidates. The late fill must be dropped.
     */
    @Test
    @Timeout(20)
    void aFillThatStartedBeforeAnInvalidationIsDropped() throws Exception {
        Gate gate = new Gate(raw);
        CachedIndex c = new CachedIndex(gate, 100, 1);
        String s = sid();
        write(c, s, 1, 5);
        AtomicReference<Block> readerSaw = new AtomicReference<>();
        gate.arm();
        Thread reader = new Thread(() -> readerSaw.set(c.get(5)));
        reader.start();
        assertTrue(gate.reached.await(10, TimeUnit.SECONDS));
        // the reader holds the pre-finish block and is parked before its fill
        assertTrue(c.finishWrite(s, new boolean[] {true}, NOW) != null);
        gate.release.countDown();
        reader.join(10_000);
        assertEquals(Loc.WRITING, status(readerSaw.get()), "the racing read itself saw the old state");
        long misses = c.misses();
        assertEquals(Loc.SERVING, status(c.get(5)), "the stale fill must not have landed");
        assertEquals(misses + 1, c.misses());
        assertEquals(Loc.SERVING, status(c.get(5)));
        assertEquals(misses + 1, c.misses(), "the fresh value is cached");

        // same race through getAll
        gate.arm();
        Block[] out = new Block[1];
        Thread batch = new Thread(() -> c.getAll(new long[] {6, 5}, 1, 1, out));
        c.invalidateAll();
        batch.start();
        assertTrue(gate.reached.await(10, TimeUnit.SECONDS));
        c.markDeleting(new long[] {5}, 0, 1, null);
        gate.release.countDown();
        batch.join(10_000);
        assertEquals(Loc.SERVING, status(out[0]));
        assertEquals(Loc.DELETING, status(c.get(5)));
    }

    /** An index that can park the next read after it has read, before it returns. */
    private static final class Gate implements InstanceIndex {
        final InstanceIndex d;
        volatile boolean armed;
        CountDownLatch reached, release;

        Gate(InstanceIndex d) {
            this.d = d;
        }

        void arm() {
            reached = new CountDownLatch(1);
            release = new CountDownLatch(1);
            armed = true;
        }

        private void park() {
            if (armed) {
                armed = false;
                reached.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        public Block get(long key) {
            Block b = d.get(key);
            park();
            return b;
        }

        public void getAll(long[] keys, int off, int len, Block[] out) {
            d.getAll(keys, off, len, out);
            park();
        }

        public String instanceId() {
            return d.instanceId();
        }

        public long keyCount() {
            return d.keyCount();
        }

        public void touch(long[] keys, int off, int len, int nowSec) {
            d.touch(keys, off, len, nowSec);
        }

        public StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate usable,
                                      long maxKeys, String sessionId, long deadlineMs, int nowSec) {
            return d.startWrite(keys, a, b, minReplicas, usable, maxKeys, sessionId, deadlineMs, nowSec);
        }

        public FinishResult finishWrite(String sessionId, boolean[] success, int nowSec) {
            return d.finishWrite(sessionId, success, nowSec);
        }

        public WriteSession session(String sessionId) {
            return d.session(sessionId);
        }

        public List<WriteSession> sessions() {
            return d.sessions();
        }

        public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing) {
            return d.markDeleting(keys, off, len, skipPosition, writing);
        }

        public LocList purge(long key, long locId) {
            return d.purge(key, locId);
        }

        public void clear() {
            d.clear();
        }

        public long scan(long cursor, int max, LongConsumer sink) {
            return d.scan(cursor, max, sink);
        }

        public long[] sample(int n, RandomGenerator random) {
            return d.sample(n, random);
        }

        public void forEach(Consumer<Block> visitor) {
            d.forEach(visitor);
        }
    }

    /**
     * Readers hammer a few keys (filling the cache with whatever they read) while writers take each key through
     * WRITING → SERVING → DELETING → gone, over and over; right after each of its calls returns, a writer reads
     * through the cache and must see exactly what it just did.
     */
    @Test
    @Timeout(60)
    void aWriteThroughTheDecoratorIsNeverHiddenByAStaleRead() throws Exception {
        CachedIndex c = new CachedIndex(raw, 64, 2);
        int writers = 3, readers = 3, rounds = 1500;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> err = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int r = 0; r < readers; r++) {
            int rr = r;
            ts.add(new Thread(() -> {
                SplittableRandom rnd = new SplittableRandom(rr);
                Block[] out = new Block[4];
                long[] keys = new long[4];
                while (!stop.get()) {
                    if (rnd.nextBoolean()) {
                        c.get(rnd.nextInt(writers * 2));
                    } else {
                        for (int i = 0; i < 4; i++) {
                            keys[i] = rnd.nextInt(writers * 2);
                        }
                        c.getAll(keys, 0, 4, out);
                    }
                }
            }, "reader-" + r));
        }
        List<Thread> ws = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int ww = w;
            ws.add(new Thread(() -> {
                try {
                    long[] mine = {ww * 2L, ww * 2L + 1}; // each writer owns two keys
                    for (int round = 0; round < rounds; round++) {
                        String s = "w" + ww + "-" + round;
                        StartResult res = write(c, s, 1, mine);
                        assertTrue(res.inserted()[0] && res.inserted()[1], "round " + round);
                        for (long k : mine) {
                            assertEquals(Loc.WRITING, status(c.get(k)));
                        }
                        boolean serve = round % 3 != 0;
                        c.finishWrite(s, new boolean[] {serve, true}, NOW);
                        if (serve) {
                            assertEquals(Loc.SERVING, status(c.get(mine[0])));
                        } else {
                            assertNull(c.get(mine[0]), "a failed write must not stay visible");
                        }
                        Block[] out = new Block[2];
                        c.getAll(mine, 0, 2, out);
                        assertEquals(Loc.SERVING, status(out[1]));
                        LocList moved = c.markDeleting(mine, 0, 2, null);
                        for (long k : mine) {
                            Block b = c.get(k);
                            assertTrue(b == null || status(b) == Loc.DELETING, "after markDeleting: " + b);
                        }
                        for (int i = 0; i < moved.size(); i++) {
                            c.purge(moved.key(i), Loc.id(moved.a(i)));
                        }
                        for (long k : mine) {
                            assertNull(c.get(k), "purged key still visible");
                        }
                        c.getAll(mine, 0, 2, out);
                        assertNull(out[0]);
                        assertNull(out[1]);
                    }
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                }
            }, "writer-" + w));
        }
        ts.forEach(Thread::start);
        ws.forEach(Thread::start);
        for (Thread w : ws) {
            w.join(50_000);
        }
        stop.set(true);
        for (Thread t : ts) {
            t.join(10_000);
        }
        if (err.get() != null) {
            throw new AssertionError(err.get());
        }
        assertTrue(c.hits() > 0, "the cache was used at all");
        assertFalse(ws.stream().anyMatch(Thread::isAlive));
    }
}
