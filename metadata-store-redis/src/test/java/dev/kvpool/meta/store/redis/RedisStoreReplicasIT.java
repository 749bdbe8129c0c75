package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.InstanceIndex.FinishResult;
import dev.kvpool.meta.index.InstanceIndex.StartResult;
import dev.kvpool.meta.index.IndexStoreContractTest;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.index.WriteSession;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two RedisStore objects with their own Vert.x and connection pools over the same keys: two metadata-plane
 * replicas. Plus what the contract suite cannot see: round trips per batch, expiry in Redis, error reporting.
 */
class RedisStoreReplicasIT {
    private static final String INST = "inst-r";
    private static final int NOW = 1_700_000_000;
    private static TestRedis redis;
    private String prefix;
    private RedisStore a, b;

    @BeforeAll
    static void connect() {
        redis = new TestRedis();
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    @BeforeEach
    void open() {
        prefix = TestRedis.uniquePrefix("replicas");
        a = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
        b = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
    }

    /**
     * Both replicas again with finishes on the starting replica written natively under WATCH from this many keys
     * ({@code 1}: always), or always by the FINISH_FAST script ({@code 0}).
     */
    private void reopen(int nativeFinishKeys) {
        a.close();
        b.close();
        a = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix).withNativeFinishKeys(nativeFinishKeys));
        b = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix).withNativeFinishKeys(nativeFinishKeys));
    }

    /** The blind finishes since {@link #reopen} (fresh stores count from 0) took the path it asked for. */
    private void assertFinishPath(int nativeFinishKeys) {
        assertEquals(nativeFinishKeys == 1 ? a.fastFinishes() : 0, a.nativeFinishes(), "finishes written natively");
    }

    @AfterEach
    void close() {
        try {
            a.close();
            b.close();
        } finally {
            redis.deleteAll(prefix);
        }
    }

    private static long key(int i) {
        return Long.reverse(i) ^ 0x5DEECE66DL;
    }

    private static long[] keys(int from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = key(from + i);
        }
        return k;
    }

    private static final AtomicLong IDS = new AtomicLong(1);

    private static StartResult write(InstanceIndex ix, String sid, int minReplicas, int storage, long... keys) {
        long[] wa = new long[keys.length], wb = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = IDS.getAndIncrement();
            wa[i] = Loc.a(id, Loc.NEW, storage, 0);
            wb[i] = id << 8;
        }
        return ix.startWrite(keys, wa, wb, minReplicas, s -> true, 0, sid, System.currentTimeMillis() + 60_000, NOW);
    }

    private static void race(int threads, IndexStoreContractTest.IntConsumerEx body) throws Exception {
        IndexStoreContractTest.race(threads, body); // the contract suite's racing harness
    }

    @Test
    @Timeout(90)
    void twoReplicasRacingStartWriteHandOutOneWritingLocationPerKey() throws Exception {
        int n = 1024, batch = 64, threads = 16;
        ConcurrentHashMap<Long, Integer> slot = new ConcurrentHashMap<>();
        for (int i = 0; i < n; i++) {
            slot.put(key(i), i);
        }
        AtomicIntegerArray handedOut = new AtomicIntegerArray(n);
        List<String> open = Collections.synchronizedList(new ArrayList<>());
        race(threads, t -> {
            RedisStore mine = t % 2 == 0 ? a : b, other = t % 2 == 0 ? b : a;
            InstanceIndex ix = mine.index(INST);
            Random r = new Random(t);
            for (int round = 0; round < 48; round++) {
                int start = r.nextInt(n);
                long[] ks = new long[batch];
                for (int j = 0; j < batch; j++) {
                    ks[j] = key((start + j) % n);
                }
                String sid = "t" + t + "-" + round;
                StartResult res = write(ix, sid, 1, 1 + t, ks);
                for (int j = 0; j < batch; j++) {
                    if (res.inserted()[j]) {
                        handedOut.incrementAndGet(slot.get(ks[j]));
                    }
                }
                if (round % 3 == 0) {
                    // finished by the other replica
                    boolean[] ok = new boolean[res.session().size()];
                    Arrays.fill(ok, true);
                    assertEquals(ok.length, other.index(INST).finishWrite(sid, ok, NOW).served());
                } else {
                    open.add(sid);
                }
            }
        });
        // every key was covered by some window with overwhelming probability; none got two locations
        int covered = 0;
        for (int i = 0; i < n; i++) {
            assertTrue(handedOut.get(i) <= 1, "key #" + i + " got " + handedOut.get(i) + " WRITING locations");
            covered += handedOut.get(i);
        }
        assertEquals(covered, a.index(INST).keyCount());
        assertEquals(covered, b.index(INST).keyCount());
        long writing = 0;
        int[] seen = {0};
        long[] w = {0};
        a.index(INST).forEach(bl -> {
            seen[0]++;
            assertEquals(1, bl.size(), "replicas of " + bl);
            if (Loc.status(bl.a(0)) == Loc.WRITING) {
                w[0]++;
            }
        });
        writing = w[0];
        assertEquals(covered, seen[0]);
        long inSessions = b.index(INST).sessions().stream().mapToLong(WriteSession::size).sum();
        assertEquals(writing, inSessions, "every WRITING location belongs to exactly one open session");
        assertEquals(open.size(), a.index(INST).sessions().size());
    }

    /** The compare-and-set path (minReplicas > 1): racing replica additions never overshoot or lose one. */
    @Test
    @Timeout(90)
    void racingExtraReplicasReachMinReplicasExactly() throws Exception {
        int n = 128, threads = 12, minReplicas = 3;
        long[] all = keys(0, n);
        String s0 = "seed";
        StartResult seed = write(a.index(INST), s0, 1, 1, all);
        boolean[] ok = new boolean[n];
        Arrays.fill(ok, true);
        assertEquals(n, a.index(INST).finishWrite(s0, ok, NOW).served());
        AtomicInteger inserted = new AtomicInteger();
        race(threads, t -> {
            InstanceIndex ix = (t % 2 == 0 ? a : b).index(INST);
            Random r = new Random(t);
            for (int round = 0; round < 30; round++) {
                int start = r.nextInt(n), len = 1 + r.nextInt(24);
                long[] ks = new long[len];
                for (int j = 0; j < len; j++) {
                    ks[j] = all[(start + j) % n];
                }
                StartResult res = write(ix, "x" + t + "-" + round, minReplicas, 2 + t, ks);
                for (boolean x : res.inserted()) {
                    if (x) {
                        inserted.incrementAndGet();
                    }
                }
                for (boolean c : res.created()) {
                    assertFalse(c, "no key is new here");
                }
            }
        });
        int[] sizes = new int[minReplicas + 2];
        a.index(INST).forEach(bl -> sizes[Math.min(bl.size(), minReplicas + 1)]++);
        int full = sizes[minReplicas];
        assertEquals(0, sizes[minReplicas + 1], "a key got more than " + minReplicas + " replicas");
        // a key reached by at least two tries has exactly minReplicas; the totals must add up either way
        long total = 0;
        Block[] out = new Block[n];
        a.index(INST).getAll(all, 0, n, out);
        for (Block bl : out) {
            total += bl.size();
            assertEquals(Loc.SERVING, Loc.status(bl.a(0)));
        }
        assertEquals(n + inserted.get(), total, "every inserted replica is in the index, no more");
        assertTrue(full > n / 2, "most keys should have reached " + minReplicas + " replicas: " + full);
        assertEquals(n, b.index(INST).keyCount());
        assertNotNull(seed.session());
        System.out.printf("extra-replica race: %d inserted, %d compare-and-set conflicts retried%n", inserted.get(),
                a.conflicts() + b.conflicts());
    }

    /**
     * Every operation at once from two replicas on a few hot keys. Each location handed out must end up exactly
     * once either in the index or handed back for release (failed by a finish, or marked and purged by a
     * deleter): a lost update in any compare-and-set would leak or duplicate one.
     */
    @Test
    @Timeout(120)
    void mixedOperationsFromTwoReplicasNeitherLeakNorDuplicateALocation() throws Exception {
        int hot = 48, threads = 8, rounds = 150;
        ConcurrentHashMap<Long, Boolean> handedOut = new ConcurrentHashMap<>();
        ConcurrentHashMap<Long, String> released = new ConcurrentHashMap<>();
        AtomicReference<String> twice = new AtomicReference<>();
        race(threads, t -> {
            RedisStore mine = t % 2 == 0 ? a : b, other = t % 2 == 0 ? b : a;
            Random r = new Random(100 + t);
            List<String> open = new ArrayList<>();
            for (int round = 0; round < rounds; round++) {
                int op = r.nextInt(10);
                InstanceIndex ix = (r.nextBoolean() ? mine : other).index(INST);
                if (op < 4) {
                    int len = 1 + r.nextInt(6);
                    long[] ks = new long[len];
                    for (int j = 0; j < len; j++) {
                        ks[j] = key(r.nextInt(hot));
                    }
                    String sid = "m" + t + "-" + round;
                    StartResult res = write(ix, sid, 1 + r.nextInt(2), 1 + r.nextInt(3), ks);
                    for (long id : res.session().locIds()) {
                        assertNull(handedOut.put(id, Boolean.TRUE), "location id handed out twice");
                    }
                    open.add(sid);
                } else if (op < 7 && !open.isEmpty()) {
                    String sid = open.remove(r.nextInt(open.size()));
                    boolean[] mask = new boolean[8];
                    for (int j = 0; j < mask.length; j++) {
                        mask[j] = r.nextBoolean();
                    }
                    FinishResult f = ix.finishWrite(sid, mask, NOW + round);
                    assertNotNull(f, "own open session " + sid);
                    for (int j = 0; j < f.failed().size(); j++) {
                        release(released, twice, Loc.id(f.failed().a(j)), "failed " + sid);
                    }
                } else if (op < 9) {
                    long[] ks = {key(r.nextInt(hot)), key(r.nextInt(hot))};
                    var moved = ix.markDeleting(ks, 0, 2, null);
                    for (int j = 0; j < moved.size(); j++) {
                        // the deleter owns what it moved: its purge must find it still there
                        var p = (r.nextBoolean() ? a : b).index(INST).purge(moved.key(j), Loc.id(moved.a(j)));
                        assertEquals(1, p.size(), "purge of a location this thread moved to DELETING");
                        release(released, twice, Loc.id(p.a(0)), "purged");
                    }
                } else {
                    long[] ks = {key(r.nextInt(hot)), key(r.nextInt(hot)), key(r.nextInt(hot))};
                    ix.touch(ks, 0, ks.length, NOW + round);
                }
            }
            for (String sid : open) {
                FinishResult f = mine.index(INST).finishWrite(sid, new boolean[0], NOW);
                for (int j = 0; j < f.failed().size(); j++) {
                    release(released, twice, Loc.id(f.failed().a(j)), "failed at the end " + sid);
                }
            }
        });
        assertNull(twice.get(), twice.get());
        java.util.Set<Long> inIndex = new java.util.HashSet<>();
        a.index(INST).forEach(bl -> {
            for (int i = 0; i < bl.size(); i++) {
                assertEquals(Loc.SERVING, Loc.status(bl.a(i)), "left over: " + bl);
                assertTrue(inIndex.add(Loc.id(bl.a(i))), "a location twice in the index");
            }
        });
        for (long id : handedOut.keySet()) {
            boolean kept = inIndex.contains(id), gone = released.containsKey(id);
            assertTrue(kept ^ gone, "location " + id + (kept ? " is both kept and released" : " leaked"));
        }
        assertEquals(handedOut.size(), inIndex.size() + released.size());
        assertTrue(a.index(INST).sessions().isEmpty());
        System.out.printf("mixed race: %d locations handed out, %d kept, %d released, %d conflicts retried%n",
                handedOut.size(), inIndex.size(), released.size(), a.conflicts() + b.conflicts());
    }

    private static void release(ConcurrentHashMap<Long, String> released, AtomicReference<String> twice, long id,
                                String how) {
        String before = released.putIfAbsent(id, how);
        if (before != null) {
            twice.compareAndSet(null, "location " + id + " released twice: " + before + ", then " + how);
        }
    }

    @Test
    void aSessionStartedOnOneReplicaIsFinishedOnTheOther() {
        InstanceIndex ia = a.index(INST);
        StartResult r = write(ia, "cross", 1, 1, keys(0, 3));
        assertEquals(INST, b.sessionOwner("cross"));
        InstanceIndex ib = b.index(INST);
        WriteSession s = ib.session("cross");
        assertArrayEquals(r.session().keys(), s.keys());
        assertArrayEquals(r.session().locIds(), s.locIds());
        assertThrows(IllegalArgumentException.class, () -> write(ib, "cross", 1, 1, key(9)),
                "the id is open store-wide, whichever replica asks");
        FinishResult f = ib.finishWrite("cross", new boolean[] {true, false, true}, NOW + 5);
        assertEquals(2, f.served());
        assertEquals(1, f.failed().size());
        assertNull(a.sessionOwner("cross"));
        assertNull(ia.finishWrite("cross", new boolean[] {true, true, true}, NOW), "finished already");
        assertEquals(Loc.SERVING, Loc.status(ia.get(key(0)).a(0)));
        assertEquals(NOW + 5, ia.get(key(0)).writeSec());
        assertNull(ia.get(key(1)));
        assertEquals(2, ia.keyCount());
    }

    @Test
    void aDropOnOneReplicaIsSeenByTheOther() {
        InstanceIndex ia = a.index(INST);
        write(ia, "d1", 1, 1, keys(0, 4));
        InstanceIndex ib = b.index(INST);
        assertTrue(b.instanceIds().contains(INST));
        a.drop(INST);
        assertNull(b.existing(INST));
        assertFalse(b.instanceIds().contains(INST));
        assertNull(b.sessionOwner("d1"));
        assertThrows(IllegalStateException.class, () -> write(ib, "d2", 1, 1, key(1)),
                "the other replica's index object of the dropped instance refuses writes");
        // created again by A: B's store hands out a working index again
        a.index(INST);
        assertTrue(write(b.index(INST), "d3", 1, 1, key(1)).inserted()[0]);
        assertEquals(1, a.existing(INST).keyCount());
    }

    @Test
    void aServerThatLostItsScriptsStillStartsAndFinishesWrites() {
        // a restarted or failed-over Redis answers NOSCRIPT: every script call, also the ones sent together
        // (claim + start, finish + release), must fall back to sending its body
        InstanceIndex ix = a.index(INST);
        write(ix, "before", 1, 1, keys(0, 4));
        assertEquals(4, ix.finishWrite("before", new boolean[] {true, true, true, true}, true, NOW).served());
        redis.call(Request.cmd(Command.SCRIPT).arg("FLUSH"));
        StartResult r = write(ix, "after", 1, 1, keys(2, 4));
        assertArrayEquals(new boolean[] {false, false, true, true}, r.inserted());
        assertEquals(INST, a.sessionOwner("after"));
        redis.call(Request.cmd(Command.SCRIPT).arg("FLUSH"));
        FinishResult f = ix.finishWrite("after", new boolean[] {true, false}, true, NOW);
        assertTrue(f.maskFits());
        assertEquals(1, f.served());
        assertEquals(1, f.failed().size());
        assertNull(a.sessionOwner("after"));
        assertEquals(5, ix.keyCount());
        assertEquals(Loc.SERVING, Loc.status(ix.get(key(4)).a(0)));
    }

    @Test
    void checksOfManyInstancesGoInWavesOfARoundTripEach() {
        // 600 instances, 3 of them with keys and an open session, one in each wave of 256
        List<String> ids = new java.util.ArrayList<>();
        for (int i = 0; i < 600; i++) {
            ids.add("inst-" + i);
        }
        // write() gives each session a deadline of its own clock + 60 s: bracket the three
        long before = System.currentTimeMillis();
        for (int i : new int[] {3, 300, 599}) {
            write(a.index(ids.get(i)), "s-" + i, 1, 1, keys(0, 1 + i % 7));
        }
        long after = System.currentTimeMillis();
        a.sessionsDue(List.of(ids.getFirst()), 0); // loads the script off the count (another test may flush scripts)
        long t0 = a.roundTrips();
        long[] counts = a.keyCounts(ids);
        long t1 = a.roundTrips();
        List<List<dev.kvpool.meta.index.WriteSession>> due = b.sessionsDue(ids, after + 60_000);
        List<List<dev.kvpool.meta.index.WriteSession>> early = b.sessionsDue(ids, before + 59_000);
        assertEquals(3, t1 - t0, "600 key counts: waves of 256");
        for (int i = 0; i < 600; i++) {
            boolean used = i == 3 || i == 300 || i == 599;
            assertEquals(used ? 1 + i % 7 : 0, counts[i], "keys of " + ids.get(i));
            assertEquals(used ? List.of("s-" + i) : List.of(),
                    due.get(i).stream().map(dev.kvpool.meta.index.WriteSession::id).toList(), "due at the deadline");
            assertEquals(List.of(), early.get(i), "none due a second before");
        }
    }

    @Test
    void batchesAreSingleRoundTrips() {
        // the server may not know the scripts yet (another test flushed them): load each once, off the count and
        // on another instance
        InstanceIndex w = a.index("inst-warm");
        long[] warm = keys(0, 2);
        write(w, "warm", 1, 1, warm);
        w.finishWrite("warm", new boolean[] {true, true}, true, NOW);
        w.touch(warm, 0, 2, NOW);
        w.markDeleting(warm, 0, 2, null);
        InstanceIndex ix = a.index(INST);
        long[] ks = keys(0, 1024);
        long t0 = a.roundTrips();
        StartResult r = write(ix, "rt", 1, 1, ks);
        long afterStart = a.roundTrips();
        assertEquals(1024, r.session().size());
        boolean[] ok = new boolean[1024];
        Arrays.fill(ok, true);
        assertEquals(1024, ix.finishWrite("rt", ok, NOW).served());
        long afterFinish = a.roundTrips();
        InstanceIndex small = a.index("inst-small");
        write(small, "small", 1, 1, keys(5_000, 8));
        long beforeSmallFinish = a.roundTrips();
        assertEquals(8, small.finishWrite("small", new boolean[] {true, true, true, true, true, true, true, true}, NOW)
                .served());
        long afterSmallFinish = a.roundTrips();
        Block[] out = new Block[1024];
        ix.getAll(ks, 0, 1024, out);
        long afterGet = a.roundTrips();
        ix.touch(ks, 0, 1024, NOW + 9);
        long afterTouch = a.roundTrips();
        assertEquals(NOW + 9, ix.get(ks[5]).accessSec());
        long afterCheck = a.roundTrips();
        long[] big = keys(0, 10_000);
        Block[] bigOut = new Block[big.length];
        ix.getAll(big, 0, big.length, bigOut);
        long afterBig = a.roundTrips();
        assertEquals(16, ix.sampleBlocks(16, new java.util.Random(7)).length);
        long afterSample = a.roundTrips();
        LocList deleting = ix.markDeleting(ks, 0, 1024, null);
        assertEquals(1024, deleting.size());
        long afterMark = a.roundTrips();
        assertEquals(1024, ix.purgeAll(deleting).size());
        long afterPurge = a.roundTrips();

        assertEquals(1, afterStart - t0, "startWrite: the session id claim and the script, sent together");
        assertEquals(2, afterFinish - afterStart, "finishWrite of 1,024 keys on the starting replica: the WATCHed "
                + "check, then MULTI/EXEC and the id release, sent together");
        assertEquals(1, afterSmallFinish - beforeSmallFinish, "finishWrite of 8 keys: one script and the id "
                + "release, sent together");
        assertEquals(1, afterGet - afterSmallFinish, "getAll of 1,024 keys");
        assertEquals(1, afterTouch - afterGet, "touch of 1,024 keys");
        assertEquals(1, afterBig - afterCheck, "getAll of 10,000 keys: 3 HMGETs in one pipeline");
        assertEquals(1, afterSample - afterBig, "sampleBlocks: keys and values in one HRANDFIELD");
        assertEquals(2, afterMark - afterSample, "markDeleting: one read, one script");
        assertEquals(2, afterPurge - afterMark, "purgeAll of 1,024 locations: one read, one script");
        assertEquals(0, ix.keyCount());
        for (Block bl : out) {
            assertEquals(Loc.SERVING, Loc.status(bl.a(0)));
        }
        assertEquals(1024, Arrays.stream(bigOut).filter(x -> x != null).count());
    }

    @Test
    void sessionsExpireInRedisAtDeadlinePlusGrace() throws Exception {
        try (RedisStore s = RedisStore.connect(TestRedis.URI,
                TestRedis.options(prefix).withSessionGrace(Duration.ofMillis(300)))) {
            InstanceIndex ix = s.index(INST);
            long deadline = System.currentTimeMillis() + 200;
            ix.startWrite(new long[] {1, 2}, new long[] {Loc.a(1, Loc.NEW, 1, 0), Loc.a(2, Loc.NEW, 1, 0)},
                    new long[] {1, 2}, 1, x -> true, 0, "short", deadline, NOW);
            String sessionKey = prefix + ":{" + INST + "}:s:short";
            long pttl = redis.call(Request.cmd(Command.PTTL).arg(sessionKey)).toLong();
            assertTrue(pttl > 0 && pttl <= 500, "session key expires at deadline + grace: pttl " + pttl);
            long ownerTtl = redis.call(Request.cmd(Command.PTTL).arg(prefix + ":o:{short}")).toLong();
            assertTrue(ownerTtl > 0 && ownerTtl <= 500, "so does the id's owner key: pttl " + ownerTtl);
            assertEquals(INST, s.sessionOwner("short"));
            Thread.sleep(800);
            assertNull(ix.session("short"));
            assertNull(s.sessionOwner("short"));
            assertTrue(ix.sessions().isEmpty());
            assertEquals(0, redis.call(Request.cmd(Command.SCARD).arg(prefix + ":{" + INST + "}:ss")).toLong(),
                    "listing sessions drops ids whose session expired");
            assertNull(ix.finishWrite("short", new boolean[] {true, true}, NOW));
            // the id is free again; the locations stay WRITING for the plane's expiry sweep to have closed earlier
            assertEquals(Loc.WRITING, Loc.status(ix.get(1).a(0)));
            // ... and the id is listed as expired unclosed, on every replica, until its orphans are swept
            assertEquals(List.of("short"), ix.expiredUnclosed());
            try (RedisStore other = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix))) {
                assertEquals(List.of("short"), other.index(INST).expiredUnclosed());
                other.index(INST).forgetExpiredUnclosed(List.of("short"));
            }
            assertEquals(List.of(), ix.expiredUnclosed());
            // a closed session is never listed; a dropped instance takes its list along
            ix.startWrite(new long[] {3}, new long[] {Loc.a(3, Loc.NEW, 1, 0)}, new long[] {3}, 1, x -> true, 0,
                    "closed", System.currentTimeMillis() + 100, NOW);
            ix.finishWrite("closed", new boolean[] {true}, NOW);
            ix.startWrite(new long[] {4}, new long[] {Loc.a(4, Loc.NEW, 1, 0)}, new long[] {4}, 1, x -> true, 0,
                    "left", System.currentTimeMillis() + 100, NOW);
            Thread.sleep(700);
            ix.sessions();
            assertEquals(List.of("left"), ix.expiredUnclosed());
            s.drop(INST);
            assertEquals(0, redis.call(Request.cmd(Command.EXISTS).arg(prefix + ":{" + INST + "}:sx")).toLong());
        }
    }

    @Test
    void blockingOnAnEventLoopIsRefused() throws Exception {
        CompletableFuture<Throwable> got = new CompletableFuture<>();
        redis.vertx.runOnContext(v -> {
            try {
                a.index(INST).get(1);
                got.complete(null);
            } catch (Throwable e) {
                got.complete(e);
            }
        });
        Throwable e = got.get(10, TimeUnit.SECONDS);
        assertInstanceOf(IllegalStateException.class, e);
        assertTrue(e.getMessage().contains("event loop"), e.getMessage());
    }

    @Test
    void redisErrorsBecomeExceptionsThatNameTheCall() {
        InstanceIndex ix = a.index(INST);
        // corrupt the block hash into a string: every command on it now fails with WRONGTYPE
        redis.call(Request.cmd(Command.SET).arg(prefix + ":{" + INST + "}:b").arg("not a hash"));
        RedisStoreException e = assertThrows(RedisStoreException.class, () -> ix.get(5));
        assertTrue(e.getMessage().contains("get " + INST) && e.getMessage().contains("WRONGTYPE"), e.getMessage());
        RedisStoreException s = assertThrows(RedisStoreException.class, () -> write(ix, "w", 1, 1, 5L));
        assertTrue(s.getMessage().contains("startWrite " + INST), s.getMessage());
        assertNull(a.sessionOwner("w"));
    }

    @Test
    void anUnreachableServerFailsClearly() {
        RedisStore.Options o = TestRedis.options(prefix);
        o = new RedisStore.Options(o.prefix(), Duration.ofSeconds(2), o.batchSize(), o.pageSize(), o.sessionGrace(),
                o.maxRetries(), o.nativeFinishKeys());
        RedisStore.Options fo = o;
        RedisStoreException e = assertThrows(RedisStoreException.class,
                () -> RedisStore.connect("redis://127.0.0.1:1/0", fo));
        assertTrue(e.getMessage().contains("PING"), e.getMessage());
    }

    @Test
    void closingAStoreOverAClientItDoesNotOwnLeavesTheClientOpen() {
        RedisStore over = new RedisStore(redis.redis, TestRedis.options(prefix));
        InstanceIndex ix = over.index(INST);
        assertTrue(write(ix, "own", 1, 1, key(3)).inserted()[0]);
        over.close();
        assertThrows(IllegalStateException.class, () -> over.index(INST));
        assertThrows(IllegalStateException.class, () -> ix.get(key(3)), "index objects of a closed store refuse");
        assertEquals(INST, a.sessionOwner("own"));
        assertEquals("PONG", redis.call(Request.cmd(Command.PING)).toString());
    }

    // ---- finish on the starting replica (Lua.FINISH_FAST) ------------------------------------------------------

    /** Start words for n keys, the same for every call with the same base (so two instances can hold equal bytes). */
    private static long[][] words(int n, int storage, long base) {
        long[] wa = new long[n], wb = new long[n];
        for (int i = 0; i < n; i++) {
            wa[i] = Loc.a(base + i, Loc.NEW, storage, 0);
            wb[i] = (base + i) << 8 | 7;
        }
        return new long[][] {wa, wb};
    }

    /** startWrite of keys with these words (from {@link #words}), a minute to finish. */
    private static StartResult begin(InstanceIndex ix, String sid, int minReplicas, long[] keys, long[][] w) {
        return ix.startWrite(keys, w[0], w[1], minReplicas, x -> true, 0, sid, System.currentTimeMillis() + 60_000, NOW);
    }

    private java.util.Map<String, String> rawBlocks(String instance) {
        String h = a.instanceBase(instance) + "b";
        java.util.Map<String, String> out = new java.util.TreeMap<>();
        java.util.HexFormat hex = java.util.HexFormat.of();
        for (var f : a.calls().send(Request.cmd(Command.HKEYS).arg(h), "fields of " + instance)) {
            byte[] v = a.calls().send(Request.cmd(Command.HGET).arg(h).arg(f.toBytes()), "value").toBytes();
            out.put(hex.formatHex(f.toBytes()), hex.formatHex(v));
        }
        return out;
    }

    private static String describe(FinishResult f) {
        if (f == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder("served=" + f.served() + " fits=" + f.maskFits() + " session="
                + Arrays.toString(f.session().keys()) + Arrays.toString(f.session().locIds()) + " failed=");
        for (int i = 0; i < f.failed().size(); i++) {
            sb.append('[').append(f.failed().key(i)).append(',').append(f.failed().a(i)).append(',')
                    .append(f.failed().b(i)).append(',').append(f.failed().keyGone(i)).append(']');
        }
        return sb.toString();
    }

    @ParameterizedTest(name = "native from {0} keys")
    @ValueSource(ints = {0, 1})
    void finishOnTheStartingReplicaWritesExactlyWhatTheReadingFinishWrites(int nativeFinishKeys) {
        reopen(nativeFinishKeys);
        // one instance finished where it started (no block read), a twin finished on the other replica (the
        // reading script): same keys, same words, same masks, so both must hold the same bytes and answers
        boolean[][] masks = {
                {true, true, true, true, true, true},
                {true, false, true, false, false, true},
                {false, false, false, false, false, false},
                {true, true, true}, // shorter than the session
                {true, true, true, true, true, true, true, true}, // longer
        };
        String[] fits = {"exact", "atMost", "any"};
        long base = 1_000;
        long before = a.fastFinishes();
        int cases = 0;
        for (boolean[] mask : masks) {
            for (String fit : fits) {
                String fast = "fast-" + cases, slow = "slow-" + cases;
                long[] k = keys(100 * cases, 6);
                long[][] w = words(6, 1, base);
                base += 10;
                // a key present before the start is not in the session: the session is the other five
                long[] pre = {k[2]};
                long[][] pw = words(1, 1, base++);
                for (String inst : List.of(fast, slow)) {
                    InstanceIndex ix = a.index(inst);
                    assertTrue(begin(ix, "pre-" + inst, 1, pre, pw)
                            .inserted()[0]);
                    assertEquals(1, ix.finishWrite("pre-" + inst, new boolean[] {true}, NOW).served());
                    StartResult sr = begin(ix, "s-" + inst, 1, k, w);
                    assertEquals(5, sr.session().size());
                }
                FinishResult f1 = finish(a.index(fast), "s-" + fast, mask, fit, NOW + 30);
                FinishResult f2 = finish(b.index(slow), "s-" + slow, mask, fit, NOW + 30);
                assertEquals(describe(f2).replace("s-" + slow, ""), describe(f1).replace("s-" + fast, ""),
                        "answer for mask " + Arrays.toString(mask) + " " + fit);
                assertEquals(rawBlocks(slow), rawBlocks(fast), "bytes for mask " + Arrays.toString(mask) + " " + fit);
                assertEquals(0, a.index(fast).sessionCount());
                assertNull(a.index(fast).finishWrite("s-" + fast, mask, NOW), "a finished session is gone");
                cases++;
            }
        }
        // per case: the fast session and both instances' pre-written key, all started and finished on a
        assertEquals(3L * cases, a.fastFinishes() - before, "every finish on the starting replica took the fast path");
        assertEquals(0, a.fastFinishMisses());
        assertFinishPath(nativeFinishKeys);
    }

    private static FinishResult finish(InstanceIndex ix, String sid, boolean[] mask, String fit, int now) {
        return switch (fit) {
            case "exact" -> ix.finishWrite(sid, mask, true, now);
            case "atMost" -> ix.finishWrite(sid, mask, false, now);
            default -> ix.finishWrite(sid, mask, now);
        };
    }

    @ParameterizedTest(name = "native from {0} keys")
    @ValueSource(ints = {0, 1})
    void aWritingBlockDeletedByAnotherReplicaSendsTheFinishToTheReadingScript(int nativeFinishKeys) {
        reopen(nativeFinishKeys);
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        long[] k = keys(0, 4);
        long[][] w = words(4, 1, 50_000);
        assertEquals(4, begin(ia, "s1", 1, k, w)
                .session().size());
        // another replica deletes a block in flight: its location is the deleter's now
        assertEquals(1, ib.markDeleting(new long[] {k[1]}, 0, 1, null, true).size());
        long misses = a.fastFinishMisses();
        FinishResult f = ia.finishWrite("s1", new boolean[] {true, true, true, true}, true, NOW + 5);
        assertEquals(misses + 1, a.fastFinishMisses(), "the taint counter moved: the finish must read");
        assertEquals(3, f.served());
        assertEquals(Loc.DELETING, Loc.status(ib.get(k[1]).a(0)), "the deleter's location stays DELETING");
        assertEquals(Loc.SERVING, Loc.status(ib.get(k[0]).a(0)));
        // its purge changes nothing of a session in flight: the next start-and-finish here is blind again
        LocList deleting = new LocList();
        deleting.add(k[1], ib.get(k[1]).a(0), ib.get(k[1]).b(0), false);
        assertEquals(1, ib.purgeAll(deleting).size());
        long fast = a.fastFinishes();
        long[][] w3 = words(1, 1, 55_000);
        begin(ia, "s3", 1, new long[] {k[1]}, w3);
        assertEquals(1, ia.finishWrite("s3", new boolean[] {true}, true, NOW).served());
        assertEquals(fast + 1, a.fastFinishes());
        assertFinishPath(nativeFinishKeys);
    }

    @ParameterizedTest(name = "native from {0} keys")
    @ValueSource(ints = {0, 1})
    void aReplicaAddedToAWritingBlockSendsTheFinishToTheReadingScript(int nativeFinishKeys) {
        reopen(nativeFinishKeys);
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        long[] k = keys(0, 2);
        long[][] w = words(2, 1, 40_000);
        begin(ia, "s1", 1, k, w);
        // a replica-counting start adds a second location to a block in flight
        long[][] w2 = words(1, 2, 60_000);
        assertTrue(begin(ib, "s2", 2, new long[] {k[1]}, w2).inserted()[0]);
        long misses = a.fastFinishMisses();
        assertEquals(2, ia.finishWrite("s1", new boolean[] {true, true}, true, NOW + 5).served());
        assertEquals(misses + 1, a.fastFinishMisses(), "the taint counter moved: the finish must read");
        Block two = ib.get(k[1]);
        assertEquals(2, two.size(), "the added replica survives the finish");
        assertEquals(Loc.SERVING, Loc.status(two.a(0)));
        assertEquals(Loc.WRITING, Loc.status(two.a(1)));
        assertFinishPath(nativeFinishKeys);
    }

    @ParameterizedTest(name = "native from {0} keys")
    @ValueSource(ints = {0, 1})
    void aSessionFinishedOnTheOtherReplicaIsNotFinishedTwice(int nativeFinishKeys) {
        reopen(nativeFinishKeys);
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        long[] k = keys(0, 3);
        long[][] w = words(3, 1, 70_000);
        begin(ia, "s1", 1, k, w);
        FinishResult onB = ib.finishWrite("s1", new boolean[] {false, true, false}, true, NOW);
        assertEquals(1, onB.served());
        // the same id starts again elsewhere before the first replica's late finish arrives
        long[][] w2 = words(3, 1, 80_000);
        StartResult again = begin(ib, "s1", 1, k, w2);
        assertEquals(2, again.session().size());
        long misses = a.fastFinishMisses();
        FinishResult late = ia.finishWrite("s1", new boolean[] {true, true, true}, NOW);
        assertEquals(misses + 1, a.fastFinishMisses(), "another start's session is not the one remembered");
        // the late finish is then the reading one: it finishes whatever session holds the id now, as before
        assertNotNull(late);
        assertEquals(2, late.served());
        assertEquals(80_000L, Loc.id(ib.get(k[0]).a(0)));
        assertFinishPath(nativeFinishKeys);
    }

    @Test
    void aWritingBlockDeletedBetweenTheNativeCheckAndItsWritesAbortsThem() {
        reopen(1);
        InstanceIndex ia = a.index(INST), ib = b.index(INST);
        long[] k = keys(0, 4);
        begin(ia, "s1", 1, k, words(4, 1, 90_000));
        // the check passes; then, before EXEC, another replica takes a block in flight for deletion
        a.calls().beforeExec = () -> assertEquals(1, ib.markDeleting(new long[] {k[2]}, 0, 1, null, true).size());
        long misses = a.fastFinishMisses(), natives = a.nativeFinishes();
        FinishResult f = ia.finishWrite("s1", new boolean[] {true, true, true, true}, true, NOW + 5);
        a.calls().beforeExec = null;
        assertEquals(misses + 1, a.fastFinishMisses(), "EXEC found the taint counter changed: the finish read");
        assertEquals(natives, a.nativeFinishes());
        assertEquals(3, f.served());
        assertEquals(Loc.DELETING, Loc.status(ib.get(k[2]).a(0)), "the deleter's location is not overwritten");
        for (int i : new int[] {0, 1, 3}) {
            assertEquals(Loc.SERVING, Loc.status(ib.get(k[i]).a(0)));
        }
        assertEquals(0, ia.sessionCount());
    }

    @Test
    void aSessionExpiringBetweenTheNativeCheckAndItsWritesIsNotFinished() {
        reopen(1);
        InstanceIndex ia = a.index(INST);
        long[] k = keys(0, 3);
        begin(ia, "s1", 1, k, words(3, 1, 95_000));
        String sessionKey = a.instanceBase(INST) + "s:s1";
        a.calls().beforeExec = () -> {
            // Redis' own expiry of the session key, as at deadline plus grace
            a.calls().send(Request.cmd(Command.PEXPIRE).arg(sessionKey).arg(1), "expire the session");
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        FinishResult f = ia.finishWrite("s1", new boolean[] {true, true, true}, true, NOW + 5);
        a.calls().beforeExec = null;
        assertNull(f, "an expired session finishes nothing");
        for (long key : k) {
            assertEquals(Loc.WRITING, Loc.status(ia.get(key).a(0)), "left for the expiry to clean, not served");
        }
        assertEquals(0, a.nativeFinishes());
    }
}
