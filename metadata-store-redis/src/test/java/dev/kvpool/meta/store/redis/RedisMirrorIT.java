package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The replica-local copy of the served locations ({@link RedisMirror}) over a real Redis: two stores over one key
 * prefix, as two replicas, each with its copy. What the query path reads ({@code servingAsync}) must always be
 * what Redis holds, filtered to SERVING locations, except for a bounded lag on the replica that did not write.
 */
class RedisMirrorIT {
    private static final String INST = "inst-m";
    private static final int NOW = 1_700_000_000;
    private static final Duration LAG = Duration.ofMillis(40);
    private static TestRedis redis;
    private static Vertx vertx;
    private String prefix;
    private RedisStore a, b;

    @BeforeAll
    static void connect() {
        redis = new TestRedis();
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void disconnect() {
        redis.close();
        vertx.close();
    }

    @BeforeEach
    void open() {
        prefix = TestRedis.uniquePrefix("mirror");
        a = mirrored(prefix, 64);
        b = mirrored(prefix, 64);
    }

    private static RedisStore mirrored(String prefix, int nativeFinishKeys) {
        return mirrored(prefix, nativeFinishKeys, RedisStore.Options.defaults().pageSize());
    }

    private static RedisStore mirrored(String prefix, int nativeFinishKeys, int pageSize) {
        return mirrored(prefix, nativeFinishKeys, pageSize, LAG);
    }

    private static RedisStore mirrored(String prefix, int nativeFinishKeys, int pageSize, Duration lag) {
        return mirrored(prefix, nativeFinishKeys, pageSize, lag, RedisMirror.IDLE_AFTER);
    }

    private static RedisStore mirrored(String prefix, int nativeFinishKeys, int pageSize, Duration lag,
            Duration idleAfter) {
        RedisStore s = RedisStore.connect(TestRedis.URI,
                TestRedis.options(prefix).withNativeFinishKeys(nativeFinishKeys).withPageSize(pageSize));
        s.startMirror(() -> Redis.createClient(vertx, new RedisOptions().setConnectionString(TestRedis.URI)), lag,
                idleAfter);
        return s;
    }

    @AfterEach
    void close() {
        a.close();
        b.close();
        redis.deleteAll(prefix);
    }

    private static final AtomicLong IDS = new AtomicLong(1);

    private static long key(int i) {
        return 0x5EED_0000_0000_0000L + i * 0x9E3779B97F4A7C15L;
    }

    /** Starts a session over the keys (one replica, so absent keys only) and finishes it with the mask. */
    static void write(InstanceIndex ix, long[] keys, boolean[] ok) {
        long[] wa = new long[keys.length], wb = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = IDS.getAndIncrement();
            wa[i] = Loc.a(id, Loc.NEW, 1, 0);
            wb[i] = id << 8;
        }
        String sid = "s" + IDS.getAndIncrement();
        assertNotNull(ix.startWrite(keys, wa, wb, 1, s -> true, 0, sid, System.currentTimeMillis() + 60_000, NOW)
                .session());
        assertNotNull(ix.finishWrite(sid, ok, NOW + 1));
    }

    /** What the query path must see: Redis' blocks, SERVING locations only, as (a, b) pairs; null for none. */
    static long[][] truth(InstanceIndex ix, long[] keys) {
        Block[] got = new Block[keys.length];
        ix.getAll(keys, 0, keys.length, got);
        return served(got);
    }

    static long[][] served(Block[] blocks) {
        long[][] out = new long[blocks.length][];
        for (int i = 0; i < blocks.length; i++) {
            Block bl = blocks[i];
            if (bl == null) {
                continue;
            }
            List<Long> s = new ArrayList<>();
            for (int r = 0; r < bl.size(); r++) {
                if (Loc.status(bl.a(r)) == Loc.SERVING) {
                    s.add(bl.a(r));
                    s.add(bl.b(r));
                }
            }
            out[i] = s.isEmpty() ? null : s.stream().mapToLong(Long::longValue).toArray();
        }
        return out;
    }

    static long[][] serving(InstanceIndex ix, long[] keys) throws Exception {
        Block[] out = new Block[keys.length];
        ix.servingAsync(keys, 0, keys.length, out).toCompletableFuture().get(10, TimeUnit.SECONDS);
        return served(out);
    }

    private static void assertSame(long[][] expected, long[][] actual, String what) {
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            assertTrue(Arrays.equals(expected[i], actual[i]), what + ": key #" + i + " expected "
                    + Arrays.toString(expected[i]) + " got " + Arrays.toString(actual[i]));
        }
    }

    private static void await(BooleanSupplier cond, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting: " + what);
            }
            Thread.sleep(5);
        }
    }

    private long counter() {
        return counter(INST);
    }

    private long counter(String inst) {
        Response r = redis.call(Request.cmd(Command.GET).arg(a.instanceBase(inst) + "mq"));
        return r == null ? 0 : r.toLong();
    }

    /** The copy of {@code s} has applied every change Redis has numbered so far, and may answer. */
    private void caughtUp(RedisStore s) throws InterruptedException {
        caughtUp(s, INST);
    }

    private void caughtUp(RedisStore s, String inst) throws InterruptedException {
        await(() -> {
            long c = counter(inst);
            return s.mirror().applied(inst) == c && s.mirrorInSync(s.index(inst));
        }, "copy of " + inst + " caught up with change " + counter(inst));
    }

    static boolean[] allOk(int n) {
        boolean[] ok = new boolean[n];
        Arrays.fill(ok, true);
        return ok;
    }

    static long[] keys(int from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = key(from + i);
        }
        return k;
    }

    /**
     * One random change through {@code ix}: a write of up to {@code maxWrite} keys of {@code all} not yet present
     * (small ones blind, from 64 keys native; about one in eight failed), a mark-deleting of up to {@code maxMark}
     * keys, half the time purged, or a clear.
     */
    static void randomChange(InstanceIndex ix, long[] all, Random rnd, int maxWrite, int maxMark) {
        int op = rnd.nextInt(10);
        if (op < 6) {
            int n = 1 + rnd.nextInt(rnd.nextBoolean() ? 20 : maxWrite);
            int from = rnd.nextInt(all.length - n);
            long[] fresh = Arrays.stream(Arrays.copyOfRange(all, from, from + n)).filter(k -> ix.get(k) == null)
                    .toArray();
            boolean[] ok = new boolean[fresh.length];
            for (int i = 0; i < ok.length; i++) {
                ok[i] = rnd.nextInt(8) != 0;
            }
            if (fresh.length > 0) {
                write(ix, fresh, ok);
            }
        } else if (op < 9) {
            int n = 1 + rnd.nextInt(maxMark);
            int from = rnd.nextInt(all.length - n);
            LocList moved = ix.markDeleting(all, from, n, null);
            if (rnd.nextBoolean()) {
                ix.purgeAll(moved);
            }
        } else {
            ix.clear();
        }
    }

    @Test
    @Timeout(120)
    void bothCopiesMatchRedisAfterRandomWritesDeletesAndClears() throws Exception {
        // two instances, so each poll reads both counters in one MGET and both streams in one XREAD
        String[] insts = {INST, INST + "-2"};
        Random rnd = new Random(42);
        long[] all = keys(0, 2000);
        for (String inst : insts) {
            b.index(inst); // opened: followed
            a.index(inst).clear(); // a counter that exists
            caughtUp(a, inst);
            caughtUp(b, inst);
        }
        long resyncsA = a.mirrorResyncs(), resyncsB = b.mirrorResyncs();
        for (int round = 0; round < 60; round++) {
            boolean onA = rnd.nextBoolean();
            String inst = insts[rnd.nextInt(2)];
            InstanceIndex mine = (onA ? a : b).index(inst), other = (onA ? b : a).index(inst);
            randomChange(mine, all, rnd, 300, 200);
            // the replica that wrote reads its write at once; the other one once its copy caught up
            assertSame(truth(mine, all), serving(mine, all), "round " + round + ", the writing replica");
            caughtUp(onA ? b : a, inst);
            assertSame(truth(other, all), serving(other, all), "round " + round + ", the other replica");
        }
        long answeredBefore = b.mirrorAnswered();
        for (String inst : insts) {
            caughtUp(a, inst);
            caughtUp(b, inst);
            assertSame(truth(a.index(inst), all), serving(a.index(inst), all), "a, caught up, " + inst);
            assertSame(truth(b.index(inst), all), serving(b.index(inst), all), "b, caught up, " + inst);
        }
        assertTrue(b.mirrorAnswered() > answeredBefore, "the caught-up copy answered");
        assertTrue(a.mirror().entries() > 0 && b.mirror().entries() > 0, "both followed the stream");
        // every change came through the stream: no copy had to be read in full again
        assertEquals(resyncsA, a.mirrorResyncs(), "full reads on a after the first");
        assertEquals(resyncsB, b.mirrorResyncs(), "full reads on b after the first");
    }

    @Test
    @Timeout(60)
    void aReplicaReadsItsOwnWriteAtOnceAndTheOtherWithinItsLag() throws Exception {
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        write(ia, keys(0, 10), new boolean[0]); // all failed: nothing served
        caughtUp(a);
        caughtUp(b);
        long[] ks = keys(100, 32);
        boolean[] ok = new boolean[32];
        Arrays.fill(ok, true);
        b.mirror().pauseForTest(true);
        a.mirror().pauseForTest(true);
        write(ia, ks, ok);
        long[][] now = truth(ia, ks);
        // a's copy has not seen the write (paused): a must not answer from it
        assertSame(now, serving(ia, ks), "the writer's own read");
        // b's copy is stale and past its lag: its reads go to Redis
        Thread.sleep(LAG.toMillis() * 3);
        long declined = b.mirrorDeclined();
        assertSame(now, serving(ib, ks), "the other replica past its lag bound");
        assertTrue(b.mirrorDeclined() > declined, "b declined to answer from a stale copy");
        assertFalse(b.mirrorInSync(ib));
        a.mirror().pauseForTest(false);
        b.mirror().pauseForTest(false);
        caughtUp(b);
        long answered = b.mirrorAnswered();
        assertSame(now, serving(ib, ks), "b caught up");
        assertEquals(answered + 1, b.mirrorAnswered(), "answered from the copy");
    }

    /**
     * A copy nobody reads and with nothing to apply slows its polls to one per doze (here 2 s), still applies what
     * another replica writes meanwhile, and the next read wakes it: that read goes to Redis (correct, not from a
     * copy older than its lag), the follower polls at once, and reads answer from the copy again, well before the
     * doze would have ended. With an idle time of zero it never dozes, and its idle polls read no stream.
     */
    @Test
    @Timeout(60)
    void anIdleCopyDozesAndTheNextReadWakesIt() throws Exception {
        RedisStore c = mirrored(prefix, 64, RedisStore.Options.defaults().pageSize(), LAG, Duration.ofMillis(300));
        RedisStore d = mirrored(prefix, 64, RedisStore.Options.defaults().pageSize(), LAG, Duration.ZERO);
        try {
            c.mirror().dozeForTest(Duration.ofSeconds(2));
            InstanceIndex ia = a.index(INST), ic = c.index(INST), id = d.index(INST);
            write(ia, keys(0, 16), allOk(16));
            caughtUp(c);
            caughtUp(d);
            await(() -> c.mirror().dozing(), "c dozes once nobody reads it");
            long cPolls = c.mirror().polls(), dPolls = d.mirror().polls(), dStreams = d.mirror().streamsRead();
            Thread.sleep(1000);
            long cIdle = c.mirror().polls() - cPolls, dIdle = d.mirror().polls() - dPolls;
            assertTrue(cIdle <= 1, "a dozing copy polled " + cIdle + " times in 1 s");
            assertTrue(dIdle >= 20, "a copy that never dozes polled " + dIdle + " times in 1 s (every "
                    + LAG.toMillis() / 4 + " ms)");
            assertFalse(d.mirror().dozing());
            // and its polls read the counter only: a stream whose counter stood still is not read
            assertEquals(dStreams, d.mirror().streamsRead(), "streams read by idle polls");
            assertEquals(0, c.mirrorWakes(), "nothing read c yet");

            // another replica writes while c dozes: c applies it without being read
            long[] ks = keys(100, 24);
            write(ia, ks, allOk(24));
            long want = counter();
            await(() -> c.mirror().applied(INST) == want, "the dozing copy applies another replica's write");
            await(() -> c.mirror().dozing(), "c dozes again");

            // the first read after a doze: woken, and answered by Redis (the copy is older than its lag)
            Thread.sleep(LAG.toMillis() * 2);
            long answered = c.mirrorAnswered(), stale = c.mirrorDeclined("stale");
            assertSame(truth(ic, ks), serving(ic, ks), "the read that wakes the copy");
            assertEquals(1, c.mirrorWakes(), "that read woke the copy");
            assertEquals(stale + 1, c.mirrorDeclined("stale"), "and went to Redis");
            assertEquals(answered, c.mirrorAnswered());
            long woken = System.nanoTime();
            caughtUp(c);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - woken);
            assertTrue(ms < 1000, "awake and recent " + ms + " ms after the read, before the doze's end");
            assertSame(truth(ic, ks), serving(ic, ks), "awake");
            assertEquals(answered + 1, c.mirrorAnswered(), "answered from the copy once awake");
            assertSame(truth(id, ks), serving(id, ks), "the copy that never dozes");
            assertEquals(0, d.mirrorWakes());

            // nobody reads c, but another replica writes fast: more than a stream keeps in one doze. A copy that
            // applies changes does not doze, so it never falls off the stream's end into a full read
            long resyncs = c.mirrorResyncs();
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
            int writes = 0;
            for (int i = 0; System.nanoTime() < end || i < 1500; i++, writes++) {
                write(ia, new long[] {key(1000 + i)}, allOk(1));
            }
            long last = counter();
            await(() -> c.mirror().applied(INST) == last, "c applied all " + writes + " writes");
            assertEquals(resyncs, c.mirrorResyncs(), "full reads of the busy, unread copy");
            assertEquals(1, c.mirrorWakes());
        } finally {
            c.close();
            d.close();
        }
    }

    /**
     * A poll does not read a stream whose counter stood still; when such a counter moves, that poll must not prove
     * the copy current (it did not read the change): the stream is read in a poll sent at once, and only that one
     * proves it. With a 5 s max lag (polls 1.25 s apart), a copy proven as of a time after another replica's write
     * must already hold that write.
     */
    @Test
    @Timeout(60)
    void aCounterThatMovedIsReadBeforeTheCopyIsProvenCurrent() throws Exception {
        RedisStore c = mirrored(prefix, 64, RedisStore.Options.defaults().pageSize(), Duration.ofSeconds(5),
                Duration.ZERO);
        try {
            InstanceIndex ia = a.index(INST), ic = c.index(INST);
            write(ia, keys(0, 8), allOk(8));
            caughtUp(c);
            for (int round = 0; round < 3; round++) {
                long before = c.mirror().streamsRead();
                Thread.sleep(1500); // polls with nothing new: the stream goes quiet and is not read
                assertEquals(before, c.mirror().streamsRead(), "a quiet stream was read");
                long[] ks = keys(100 + 10 * round, 4);
                write(ia, ks, allOk(4));
                long written = System.nanoTime(), want = counter();
                await(() -> c.mirror().provenAt(INST) - written > 0, "a poll after the write proves the copy");
                assertTrue(c.mirror().applied(INST) >= want, "proven current after change " + want + " but applied "
                        + c.mirror().applied(INST));
                assertSame(truth(ic, ks), serving(ic, ks), "round " + round);
            }
        } finally {
            c.close();
        }
    }

    /**
     * Right after its own finishes, before its copy has applied them, a replica answers from the copy patched with
     * the entries those finishes appended (it knows them: it computed the values). A change whose entry a script
     * computed (a mark-deleting) sends its reads to Redis until the copy has it. Here the follower is paused under
     * a 5 s max lag, so the copy stays recent but applies nothing.
     */
    @Test
    @Timeout(60)
    void ownWritesAreReadFromTheCopyBeforeItAppliesThem() throws Exception {
        RedisStore c = mirrored(prefix, 64, RedisStore.Options.defaults().pageSize(), Duration.ofSeconds(5));
        try {
            InstanceIndex ic = c.index(INST);
            write(ic, keys(0, 10), allOk(10));
            caughtUp(c);
            c.mirror().pauseForTest(true);
            long[] all = keys(0, 400);
            long own = c.mirror().answeredOwn();
            boolean[] small = allOk(20), large = allOk(200);
            small[3] = false;
            large[150] = false;
            write(ic, keys(100, 20), small); // FINISH_FAST (under 64 keys)
            write(ic, keys(200, 200), large); // native, MULTI/EXEC
            assertEquals(2, ((RedisIndex) ic).ownPendingCount());
            assertSame(truth(ic, all), serving(ic, all), "own writes, not yet applied to the copy");
            assertEquals(own + 1, c.mirror().answeredOwn(), "answered from the copy and the own entries");

            long declinedOwn = c.mirror().declinedOwn();
            LocList marked = ic.markDeleting(all, 200, 5, null);
            assertEquals(5, marked.size());
            assertSame(truth(ic, all), serving(ic, all), "after a change whose entry a script computed");
            assertEquals(declinedOwn + 1, c.mirror().declinedOwn(), "that read went to Redis");

            c.mirror().pauseForTest(false);
            caughtUp(c);
            assertEquals(0, ((RedisIndex) ic).ownPendingCount(), "entries the copy applied are dropped");
            long answered = c.mirrorAnswered();
            own = c.mirror().answeredOwn();
            assertSame(truth(ic, all), serving(ic, all), "caught up");
            assertEquals(answered + 1, c.mirrorAnswered());
            assertEquals(own, c.mirror().answeredOwn(), "from the copy alone");
        } finally {
            c.close();
        }
    }

    /**
     * Large finishes of one instance at once, as an engine's writers send them: each stays a native transaction
     * (the entry is numbered inside it, nothing about the counter is watched, so one finish does not abort
     * another), every change reaches the stream in order, and the other replica's copy matches Redis.
     */
    @Test
    @Timeout(60)
    void concurrentNativeFinishesAllStayNativeAndReachTheCopy() throws Exception {
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        caughtUp(b);
        int writers = 4, rounds = 10, per = 100;
        long nativeBefore = a.nativeFinishes(), counterBefore = counter();
        List<Thread> ts = new ArrayList<>();
        List<Throwable> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int w = 0; w < writers; w++) {
            int from = w * rounds * per;
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        boolean[] ok = allOk(per);
                        ok[r] = false;
                        write(ia, keys(from + r * per, per), ok);
                    }
                } catch (Throwable e) {
                    failed.add(e);
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        assertTrue(failed.isEmpty(), "writers failed: " + failed);
        assertEquals(writers * rounds, a.nativeFinishes() - nativeBefore, "every finish ran natively");
        assertEquals(counterBefore + writers * rounds, counter(), "one numbered entry per finish");
        caughtUp(b);
        long[] all = keys(0, writers * rounds * per);
        assertSame(truth(ia, all), serving(ib, all), "b after concurrent native finishes");
        assertEquals(writers * rounds * (per - 1), b.mirror().size(INST));
    }

    /**
     * A long full read of one instance (here made slow: ~100 pages of 10 blocks, 10 ms each) is taken a slice at a
     * time: the other instances' copies keep being polled, stay recent and answer meanwhile.
     */
    @Test
    @Timeout(60)
    void aLongFullReadDoesNotStallTheOtherCopies() throws Exception {
        InstanceIndex ia = a.index(INST);
        write(ia, keys(0, 16), allOk(16));
        RedisStore big = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix).withPageSize(10));
        try {
            InstanceIndex other = big.index("inst-big");
            // above any hash-max-listpack-entries (512 here), so HSCAN pages it
            for (int i = 0; i < 10; i++) {
                write(other, keys(1000 + i * 100, 100), allOk(100));
            }
            Runnable slowPage = () -> {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            RedisStore slow = mirrored(prefix, 64, 10);
            try {
                InstanceIndex mine = slow.index(INST);
                await(() -> slow.mirrorInSync(mine), "the small instance's copy");
                slow.mirror().pageHook = slowPage;
                InstanceIndex bigHere = slow.index("inst-big"); // its full read starts: 40 slow pages
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(600);
                int answeredWhileReading = 0;
                while (System.nanoTime() < end) {
                    assertFalse(slow.mirrorInSync(bigHere), "the big copy is not ready before its read ends");
                    long before = slow.mirrorAnswered();
                    assertSame(truth(ia, keys(0, 16)), serving(mine, keys(0, 16)), "the small copy meanwhile");
                    answeredWhileReading += slow.mirrorAnswered() > before ? 1 : 0;
                    Thread.sleep(20);
                }
                assertTrue(answeredWhileReading > 10, "the small copy answered " + answeredWhileReading
                        + " times during the big one's full read");
                await(() -> slow.mirrorInSync(bigHere) && slow.mirror().size("inst-big") == 1000,
                        "the big copy, once read");
                assertSame(truth(other, keys(1000, 1000)), serving(bigHere, keys(1000, 1000)), "the big copy");
            } finally {
                slow.close();
            }
        } finally {
            big.close();
        }
    }

    @Test
    @Timeout(60)
    void aTrimmedStreamForcesAFullReadAgain() throws Exception {
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        boolean[] ok = allOk(16);
        write(ia, keys(0, 16), ok);
        caughtUp(b);
        long resyncs = b.mirrorResyncs();
        b.mirror().pauseForTest(true);
        write(ia, keys(100, 16), ok);
        write(ia, keys(200, 16), ok);
        // the entries b has not read are trimmed away, as MAXLEN does to a follower that fell far behind
        redis.call(Request.cmd(Command.XTRIM).arg(a.instanceBase(INST) + "m").arg("MAXLEN").arg(0));
        ia.markDeleting(keys(0, 16), 0, 8, null);
        b.mirror().pauseForTest(false);
        await(() -> b.mirrorResyncs() > resyncs, "a resync after the gap");
        caughtUp(b);
        long[] all = keys(0, 300);
        assertSame(truth(ia, all), serving(ib, all), "after the resync");
    }

    @Test
    @Timeout(60)
    void aLostCounterForcesAFullReadAgain() throws Exception {
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        boolean[] ok = allOk(16);
        write(ia, keys(0, 16), ok);
        caughtUp(b);
        long resyncs = b.mirrorResyncs();
        // Redis lost the counter (a restart from an older snapshot): nothing is appended until a follower notices
        redis.call(Request.cmd(Command.DEL).arg(a.instanceBase(INST) + "mq"));
        ia.markDeleting(keys(0, 16), 0, 16, null);
        write(ia, keys(100, 16), ok);
        await(() -> b.mirrorResyncs() > resyncs, "a resync after the counter went missing");
        caughtUp(b);
        long[] all = keys(0, 200);
        assertSame(truth(ia, all), serving(ib, all), "after the resync");
        assertEquals(null, serving(ib, keys(0, 1))[0], "a marked block is not served");
    }

    @Test
    @Timeout(60)
    void aDroppedInstanceIsNoLongerServedFromTheCopy() throws Exception {
        InstanceIndex ib = b.index(INST);
        boolean[] ok = new boolean[16];
        Arrays.fill(ok, true);
        write(a.index(INST), keys(0, 16), ok);
        caughtUp(b);
        assertEquals(16, b.mirror().size(INST));
        a.drop(INST);
        await(() -> b.mirror().size(INST) == -1, "the drop marker reached b");
        long[][] got = serving(ib, keys(0, 16));
        for (long[] g : got) {
            assertEquals(null, g, "nothing served after the drop");
        }
    }

    @Test
    @Timeout(60)
    void aReplicaWithoutACopyStillFeedsTheStream() throws Exception {
        InstanceIndex ib = b.index(INST);
        caughtUp(b); // b has turned the stream on
        RedisStore plain = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix).withNativeFinishKeys(64));
        try {
            InstanceIndex ip = plain.index(INST);
            boolean[] ok = new boolean[200];
            Arrays.fill(ok, true);
            ok[3] = false;
            write(ip, keys(0, 16), Arrays.copyOf(ok, 16)); // the blind script encodes the entry itself
            write(ip, keys(100, 200), ok); // native commands
            ip.markDeleting(keys(100, 10), 0, 10, null); // the compare-and-set script
            caughtUp(b);
            long[] all = keys(0, 300);
            assertSame(truth(ip, all), serving(ib, all), "b after writes of a replica without a copy");
            assertEquals(16 - 1 + 200 - 1 - 9, b.mirror().size(INST)); // key 103 failed: 9 marked
        } finally {
            plain.close();
        }
    }

    @Test
    @Timeout(30)
    void aReplicaWithoutACopyWaitsOutTheLargestLag() throws Exception {
        RedisStore plain = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
        try {
            assertEquals(LAG.toMillis(), a.readerStalenessMs());
            // read from Redis in the background: the first call starts it
            await(() -> plain.readerStalenessMs() == LAG.toMillis(), "the published lag");
        } finally {
            plain.close();
        }
    }
}
