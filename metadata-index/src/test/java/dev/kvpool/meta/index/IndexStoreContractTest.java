package dev.kvpool.meta.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.meta.index.InstanceIndex.FinishResult;
import dev.kvpool.meta.index.InstanceIndex.StartResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntPredicate;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.Timeout;

/**
 * The behaviour every {@link IndexStore} promises (KVCM §3.5–3.7 as the index serves them). A store implementation
 * runs it by subclassing and supplying {@link #newStore()}; a persistent one also overrides {@link #restart}, and
 * the suite then checks at several points that what it wrote survives a restart.
 */
public abstract class IndexStoreContractTest {
    protected static final String INST = "inst-a";
    protected static final int NOW = 1_700_000_000;
    protected static final IntPredicate ANY_STORAGE = s -> true;

    protected IndexStore store;
    protected InstanceIndex idx;
    private long nextId = 1;
    private int nextSession = 1;

    /** A fresh, empty store. */
    protected abstract IndexStore newStore() throws Exception;

    /** The same store after a restart; a store that keeps nothing across restarts returns it unchanged. */
    protected IndexStore restart(IndexStore s) throws Exception {
        return s;
    }

    @BeforeEach
    protected void openStore() throws Exception {
        store = newStore();
        idx = store.index(INST);
    }

    @AfterEach
    protected void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    /** Restarts the store (when it persists) and checks that nothing it holds changed. */
    protected void restartAndCompare() throws Exception {
        List<String> sections = List.of("instances", "groups");
        String before = StoreDump.of(store, sections);
        store = restart(store);
        idx = store.index(INST);
        assertEquals(before, StoreDump.of(store, sections), "state after restart");
    }

    // ---- helpers -------------------------------------------------------------------------------------------

    /** Where the reclaimer reads hit counters: the index itself (a search cache overrides this). */
    protected InstanceIndex evictionView(InstanceIndex ix) {
        return ix;
    }

    protected String sid() {
        return "s" + (nextSession++);
    }

    /** Word B the helpers give a location: derived from its id so that tests can check it. */
    protected static long addr(long id) {
        return (id << 24) | 0x5A;
    }

    protected StartResult write(InstanceIndex ix, String session, int minReplicas, IntPredicate usable,
                                long maxKeys, int storage, long... keys) {
        long[] a = new long[keys.length], b = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = nextId++;
            a[i] = Loc.a(id, Loc.NEW, storage, i % 3);
            b[i] = addr(id);
        }
        return ix.startWrite(keys, a, b, minReplicas, usable, maxKeys, session, NOW + 3_600_000L, NOW);
    }

    protected StartResult write(String session, long... keys) {
        return write(idx, session, 1, ANY_STORAGE, 0, 1, keys);
    }

    /** Writes the keys and finishes them all successfully. */
    protected void serve(long... keys) {
        String s = sid();
        StartResult r = write(s, keys);
        assertFalse(r.capacityExceeded());
        boolean[] ok = new boolean[r.session().size()];
        Arrays.fill(ok, true);
        assertEquals(ok.length, idx.finishWrite(s, ok, NOW + 1).served());
    }

    protected static long[] range(long from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = from + i;
        }
        return k;
    }

    protected static int status(Block b, int i) {
        return Loc.status(b.a(i));
    }

    /** The only location of a key, checking that there is exactly one. */
    protected static long onlyA(Block b) {
        assertNotNull(b);
        assertEquals(1, b.size(), () -> "replicas of " + b);
        return b.a(0);
    }

    // ---- reads ---------------------------------------------------------------------------------------------

    @Test
    void getOfAnAbsentKeyIsNull() {
        assertNull(idx.get(42));
        assertNull(idx.get(0));
        assertNull(idx.get(-1));
        assertEquals(0, idx.keyCount());
    }

    @Test
    void getAllFillsPresentAndAbsentKeysFromAnOffset() {
        serve(10, 0, -5);
        long[] keys = {99, 10, 11, 0, -5, 10};
        Block[] out = new Block[4];
        Arrays.fill(out, new Block(1, new long[] {1, 1}, 0)); // must be overwritten, nulls included
        idx.getAll(keys, 1, 4, out);
        assertEquals(10, out[0].key());
        assertNull(out[1]);
        assertEquals(0, out[2].key());
        assertEquals(-5, out[3].key());
        for (Block b : new Block[] {out[0], out[2], out[3]}) {
            assertEquals(Loc.SERVING, Loc.status(onlyA(b)));
            assertEquals(addr(Loc.id(b.a(0))), b.b(0));
        }
        Block[] none = new Block[0];
        idx.getAll(keys, 0, 0, none);
    }

    /** Same blocks as getAll, written into the caller's array once the stage completes. */
    @Test
    void getAllAsyncAnswersAsGetAll() throws Exception {
        serve(10, 0, -5);
        serve(range(1_000, 700));
        long[] keys = new long[760];
        keys[0] = 99;
        keys[1] = 10;
        keys[2] = 11;
        keys[3] = 0;
        keys[4] = -5;
        System.arraycopy(range(1_000, 700), 0, keys, 5, 700);
        System.arraycopy(range(5_000, 55), 0, keys, 705, 55); // absent
        Block[] sync = new Block[759], async = new Block[759];
        idx.getAll(keys, 1, 759, sync);
        Arrays.fill(async, new Block(1, new long[] {1, 1}, 0)); // must be overwritten, nulls included
        assertNull(idx.getAllAsync(keys, 1, 759, async).toCompletableFuture().get(30, TimeUnit.SECONDS));
        for (int i = 0; i < sync.length; i++) {
            assertEquals(String.valueOf(sync[i]), String.valueOf(async[i]), "position " + i);
            if (sync[i] != null) {
                assertEquals(sync[i].meta(), async[i].meta(), "meta at " + i);
            }
        }
        assertNotNull(async[0]);
        assertNull(async[1]);
        assertNull(async[758]);
        idx.getAllAsync(keys, 0, 0, new Block[0]).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void touchSetsTheAccessTimeOfPresentKeysOnly() {
        serve(1, 2);
        int written = idx.get(1).writeSec();
        idx.touch(new long[] {7, 1, 2, 3}, 1, 1, NOW + 500); // only key 1
        assertEquals(NOW + 500, idx.get(1).accessSec());
        assertEquals(written, idx.get(1).writeSec());
        assertTrue(idx.get(2).accessSec() < NOW + 500);
        idx.touch(new long[] {3, 4}, 0, 2, NOW + 600); // absent: ignored
        assertNull(idx.get(3));
        assertNull(idx.get(4));
        assertEquals(2, idx.keyCount());
    }

    @Test
    void hitsGrowTheLogarithmicCounterAndARewriteKeepsIt() {
        serve(1, 2);
        assertEquals(0, idx.get(1).freq(), "a written block has no hits yet");
        for (int i = 0; i < 200; i++) {
            idx.touch(new long[] {1}, 0, 1, NOW + 10);
        }
        int f = evictionView(idx).get(1).freq();
        // about log2(201) = 7.65; the coin flips make it 5..10 with overwhelming probability
        assertTrue(f >= 4 && f <= 11, "counter after 200 hits: " + f);
        assertEquals(0, evictionView(idx).get(2).freq());
        assertEquals(NOW + 10, idx.get(1).accessSec());
    }

    @Test
    void countedHitsActAsThatManyTouches() {
        serve(1, 2, 3);
        idx.touch(new long[] {1, 2, 9}, new int[] {1, 200, 5}, 3, NOW + 20); // 9 is absent: ignored
        assertEquals(1, evictionView(idx).get(1).freq(), "a first hit always counts");
        int f = evictionView(idx).get(2).freq();
        // as 200 single touches: about log2(201) = 7.65, within 4..11 with overwhelming probability
        assertTrue(f >= 4 && f <= 11, "counter after 200 counted hits: " + f);
        assertEquals(NOW + 20, idx.get(1).accessSec());
        assertEquals(NOW + 20, idx.get(2).accessSec());
        assertEquals(0, evictionView(idx).get(3).freq());
        assertTrue(idx.get(3).accessSec() < NOW + 20);
        assertNull(idx.get(9));
        idx.touch(new long[] {3}, new int[] {0}, 1, NOW + 30); // a count below 1 is one hit
        assertEquals(1, evictionView(idx).get(3).freq());
        assertEquals(NOW + 30, idx.get(3).accessSec());
        idx.touch(new long[0], new int[0], 0, NOW + 40);
        assertEquals(3, idx.keyCount());
    }

    // ---- startWrite ----------------------------------------------------------------------------------------

    @Test
    void startWriteGivesNewKeysWritingLocationsAndStoresTheSession() throws Exception {
        String s = sid();
        long[] keys = {5, -7, 0, Long.MAX_VALUE, Long.MIN_VALUE};
        long firstId = nextId;
        StartResult r = write(idx, s, 1, ANY_STORAGE, 0, 9, keys);
        assertFalse(r.capacityExceeded());
        assertArrayEquals(new boolean[] {true, true, true, true, true}, r.inserted());
        assertEquals(5, idx.keyCount());
        WriteSession ws = r.session();
        assertEquals(s, ws.id());
        assertEquals(INST, ws.instanceId());
        assertEquals(NOW + 3_600_000L, ws.deadlineMs());
        assertArrayEquals(keys, ws.keys());
        for (int i = 0; i < keys.length; i++) {
            Block b = idx.get(keys[i]);
            long a = onlyA(b);
            assertEquals(Loc.WRITING, Loc.status(a));
            assertEquals(firstId + i, Loc.id(a));
            assertEquals(ws.locIds()[i], Loc.id(a));
            assertEquals(9, Loc.storage(a));
            assertEquals(i % 3, Loc.specGroup(a));
            assertEquals(addr(firstId + i), b.b(0));
            assertEquals(NOW, b.writeSec());
            assertEquals(NOW, b.accessSec());
        }
        assertSessionStored(ws);
        restartAndCompare();
        assertSessionStored(ws);
    }

    private void assertSessionStored(WriteSession ws) {
        WriteSession got = idx.session(ws.id());
        assertNotNull(got);
        assertArrayEquals(ws.keys(), got.keys());
        assertArrayEquals(ws.locIds(), got.locIds());
        assertEquals(ws.deadlineMs(), got.deadlineMs());
        assertTrue(idx.sessions().stream().anyMatch(x -> x.id().equals(ws.id())));
        assertEquals(idx.sessions().size(), idx.sessionCount());
        assertEquals(INST, store.sessionOwner(ws.id()));
    }

    @Test
    void keysInAnyStatusCountAsExisting() throws Exception {
        write(sid(), 1);                       // 1: WRITING (session still open)
        serve(2);                              // 2: SERVING
        serve(3);
        idx.markDeleting(new long[] {3}, 0, 1, null); // 3: DELETING
        restartAndCompare();
        String s = sid();
        StartResult r = write(s, 1, 2, 3, 4);
        assertArrayEquals(new boolean[] {false, false, false, true}, r.inserted());
        assertArrayEquals(new long[] {4}, r.session().keys());
        assertEquals(Loc.WRITING, Loc.status(onlyA(idx.get(1))));
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(2))));
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(3))));
        assertEquals(Loc.WRITING, Loc.status(onlyA(idx.get(4))));
        assertEquals(4, idx.keyCount());
    }

    @Test
    void duplicatesInsideOneBatchCountAsExisting() {
        StartResult r = write(sid(), 8, 8, 9, 8, 9, 10);
        assertArrayEquals(new boolean[] {true, false, true, false, false, true}, r.inserted());
        assertArrayEquals(new long[] {8, 9, 10}, r.session().keys());
        assertEquals(3, idx.keyCount());
        for (long k : new long[] {8, 9, 10}) {
            assertEquals(Loc.WRITING, Loc.status(onlyA(idx.get(k))));
        }
    }

    @Test
    void minReplicasCountsOnlyWritingOrServingReplicasOnUsableStorages() throws Exception {
        serve(7); // SERVING on storage 1
        IntPredicate not1 = st -> st != 1;
        // minReplicas 1: any replica counts
        assertFalse(write(idx, sid(), 1, not1, 0, 2, 7).inserted()[0]);
        // the SERVING replica sits on an unusable storage: 0 usable < 2
        StartResult r = write(idx, sid(), 2, not1, 0, 2, 7);
        assertTrue(r.inserted()[0]);
        assertFalse(r.created()[0], "an added replica does not create the key");
        Block b = idx.get(7);
        assertEquals(2, b.size());
        assertEquals(Loc.SERVING, status(b, 0));
        assertEquals(Loc.WRITING, status(b, 1));
        assertEquals(2, Loc.storage(b.a(1)));
        assertEquals(r.session().locIds()[0], Loc.id(b.a(1)));
        // one usable (the WRITING one on storage 2) < 2: a third replica
        assertTrue(write(idx, sid(), 2, not1, 0, 3, 7).inserted()[0]);
        assertEquals(3, idx.get(7).size());
        // every storage usable: 3 ≥ 2
        assertFalse(write(idx, sid(), 2, ANY_STORAGE, 0, 3, 7).inserted()[0]);
        // 3 ≥ 3 with all usable, but minReplicas 4 wants another
        assertTrue(write(idx, sid(), 4, ANY_STORAGE, 0, 3, 7).inserted()[0]);
        assertEquals(4, idx.get(7).size());
        assertEquals(1, idx.keyCount(), "added replicas are not new keys");

        // DELETING replicas do not count
        serve(8);
        idx.markDeleting(new long[] {8}, 0, 1, null);
        assertFalse(write(idx, sid(), 1, ANY_STORAGE, 0, 1, 8).inserted()[0]);
        assertTrue(write(idx, sid(), 2, ANY_STORAGE, 0, 1, 8).inserted()[0]);
        Block b8 = idx.get(8);
        assertEquals(2, b8.size());
        assertEquals(Loc.DELETING, status(b8, 0));
        assertEquals(Loc.WRITING, status(b8, 1));
        // a new key is inserted whatever minReplicas says, and reported as created
        StartResult r9 = write(idx, sid(), 3, not1, 0, 1, 9);
        assertTrue(r9.inserted()[0]);
        assertTrue(r9.created()[0]);
        assertEquals(1, idx.get(9).size());
        assertEquals(3, idx.keyCount());
        restartAndCompare();
    }

    @Test
    void maxKeysRefusesTheWholeBatchAndInsertsNothing() throws Exception {
        serve(1, 2, 3);
        String s = sid();
        StartResult r = write(idx, s, 1, ANY_STORAGE, 5, 1, 3, 4, 5, 6); // 3 new keys, room for 2
        assertTrue(r.capacityExceeded());
        assertNull(r.session());
        assertArrayEquals(new boolean[4], r.inserted());
        assertEquals(3, idx.keyCount());
        for (long k : new long[] {4, 5, 6}) {
            assertNull(idx.get(k));
        }
        assertNull(idx.session(s));
        assertNull(store.sessionOwner(s));
        assertNull(idx.finishWrite(s, new boolean[] {true, true, true}, NOW));
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(3))));

        // exactly up to the bound is fine; existing keys do not count
        StartResult ok = write(idx, sid(), 1, ANY_STORAGE, 5, 1, 1, 4, 5, 2);
        assertFalse(ok.capacityExceeded());
        assertArrayEquals(new boolean[] {false, true, true, false}, ok.inserted());
        assertEquals(5, idx.keyCount());
        StartResult full = write(idx, sid(), 1, ANY_STORAGE, 5, 1, 1, 2, 3);
        assertFalse(full.capacityExceeded(), "no new key: no capacity needed");
        assertTrue(write(idx, sid(), 1, ANY_STORAGE, 5, 1, 6).capacityExceeded());
        // duplicates count once against the bound
        assertTrue(write(idx, sid(), 1, ANY_STORAGE, 6, 1, 6, 6, 7).capacityExceeded());
        assertFalse(write(idx, sid(), 1, ANY_STORAGE, 6, 1, 6, 6).capacityExceeded());
        // extra replicas of existing keys are not new keys
        assertFalse(write(idx, sid(), 2, ANY_STORAGE, 6, 1, 1, 2).capacityExceeded());
        assertEquals(6, idx.keyCount());
        // maxKeys ≤ 0: unlimited
        assertFalse(write(idx, sid(), 1, ANY_STORAGE, 0, 1, range(100, 50)).capacityExceeded());
        assertEquals(56, idx.keyCount());
        restartAndCompare();
    }

    @Test
    void aBatchWithoutNewKeysStillOpensAnEmptySession() throws Exception {
        serve(1);
        String s = sid();
        StartResult r = write(s, 1);
        assertFalse(r.capacityExceeded());
        assertEquals(0, r.session().size());
        assertNotNull(idx.session(s));
        assertEquals(INST, store.sessionOwner(s));
        restartAndCompare();
        FinishResult f = idx.finishWrite(s, new boolean[0], NOW);
        assertNotNull(f);
        assertEquals(0, f.served());
        assertEquals(0, f.failed().size());
        assertNull(idx.finishWrite(s, new boolean[0], NOW));
        assertNull(store.sessionOwner(s));
        // an empty key list too
        String e = sid();
        assertEquals(0, write(e).session().size());
        assertNotNull(idx.finishWrite(e, null, NOW));
    }

    @Test
    void aSessionIdThatIsStillOpenIsRefused() {
        String s = sid();
        write(s, 1, 2);
        assertThrows(IllegalArgumentException.class, () -> write(s, 3));
        assertNull(idx.get(3));
        assertEquals(2, idx.keyCount());
        InstanceIndex other = store.index("inst-b");
        assertThrows(IllegalArgumentException.class, () -> write(other, s, 1, ANY_STORAGE, 0, 1, 3));
        assertEquals(0, other.keyCount());
        assertEquals(INST, store.sessionOwner(s));
        assertArrayEquals(new long[] {1, 2}, idx.session(s).keys());
        // once finished, the id may be used again
        assertNotNull(idx.finishWrite(s, new boolean[] {true, true}, NOW));
        assertFalse(write(other, s, 1, ANY_STORAGE, 0, 1, 3).capacityExceeded());
        assertEquals("inst-b", store.sessionOwner(s));
        // a refused (capacity) start leaves the id free
        String c = sid();
        assertTrue(write(idx, c, 1, ANY_STORAGE, 2, 1, 50).capacityExceeded());
        assertNull(store.sessionOwner(c));
        assertFalse(write(idx, c, 1, ANY_STORAGE, 0, 1, 50).capacityExceeded());
    }

    // ---- finishWrite ---------------------------------------------------------------------------------------

    @Test
    void finishServesSuccessesAndRemovesAndReturnsFailures() throws Exception {
        String s = sid();
        StartResult r = write(s, 1, 2, 3);
        long[] ids = r.session().locIds();
        restartAndCompare();
        FinishResult f = idx.finishWrite(s, new boolean[] {true, false, true}, NOW + 10);
        assertNotNull(f);
        assertEquals(2, f.served());
        assertEquals(s, f.session().id());
        assertEquals(1, f.failed().size());
        assertEquals(2, f.failed().key(0));
        assertEquals(ids[1], Loc.id(f.failed().a(0)));
        assertEquals(addr(ids[1]), f.failed().b(0));
        assertTrue(f.failed().keyGone(0));
        assertNull(idx.get(2));
        for (long k : new long[] {1, 3}) {
            Block b = idx.get(k);
            assertEquals(Loc.SERVING, Loc.status(onlyA(b)));
            assertEquals(NOW + 10, b.writeSec());
        }
        assertEquals(2, idx.keyCount());
        assertNull(idx.session(s));
        assertNull(store.sessionOwner(s));
        assertTrue(idx.sessions().isEmpty());
        assertEquals(0, idx.sessionCount());
        restartAndCompare();
        assertNull(idx.finishWrite(s, new boolean[] {true, true, true}, NOW), "second finish");
        assertNull(idx.finishWrite("no-such-session", new boolean[] {true}, NOW), "unknown session");
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(1))));
        // the key can be written again once its failed location is gone
        assertTrue(write(sid(), 2).inserted()[0]);
    }

    @Test
    void aFailedExtraReplicaLeavesTheKey() {
        serve(4);
        String s = sid();
        assertTrue(write(idx, s, 2, ANY_STORAGE, 0, 5, 4).inserted()[0]);
        FinishResult f = idx.finishWrite(s, new boolean[] {false}, NOW);
        assertEquals(1, f.failed().size());
        assertFalse(f.failed().keyGone(0));
        assertEquals(5, Loc.storage(f.failed().a(0)));
        Block b = idx.get(4);
        assertEquals(Loc.SERVING, Loc.status(onlyA(b)));
        assertEquals(1, idx.keyCount());
    }

    @Test
    void aShortSuccessMaskFailsTheRest() {
        String s = sid();
        write(s, 1, 2, 3);
        FinishResult f = idx.finishWrite(s, new boolean[] {true}, NOW);
        assertEquals(1, f.served());
        assertEquals(2, f.failed().size());
        assertEquals(Set.of(2L, 3L), Set.of(f.failed().key(0), f.failed().key(1)));
        assertEquals(1, idx.keyCount());
    }

    @Test
    void aMaskCheckedFinishServesWhenItFitsAndFailsEverythingWhenNot() throws Exception {
        // a bool mask must have exactly the session's length
        String s = sid();
        write(s, 1, 2, 3);
        FinishResult f = idx.finishWrite(s, new boolean[] {true, true}, true, NOW);
        assertFalse(f.maskFits());
        assertEquals(0, f.served());
        assertEquals(3, f.failed().size(), "a mask that does not fit closes the session as failed");
        assertEquals(3, f.session().size());
        assertEquals(0, idx.keyCount());
        assertNull(idx.session(s));
        assertNull(store.sessionOwner(s));
        // a prefix may be shorter, not longer
        String p = sid();
        write(p, 1, 2, 3);
        f = idx.finishWrite(p, new boolean[] {true, true}, false, NOW + 5);
        assertTrue(f.maskFits());
        assertEquals(2, f.served());
        assertEquals(3, f.failed().key(0));
        assertEquals(NOW + 5, idx.get(2).writeSec());
        String q = sid();
        write(q, 4);
        assertFalse(idx.finishWrite(q, new boolean[] {true, true}, false, NOW).maskFits());
        assertNull(idx.get(4));
        // an exact fit; the session's location is the second replica of key 1
        String e = sid();
        StartResult r = write(idx, e, 2, ANY_STORAGE, 0, 7, 1, 5);
        assertArrayEquals(new boolean[] {true, true}, r.inserted());
        f = idx.finishWrite(e, new boolean[] {true, false}, true, NOW);
        assertTrue(f.maskFits());
        assertEquals(1, f.served());
        Block b1 = idx.get(1);
        assertEquals(2, b1.size());
        assertEquals(Loc.SERVING, status(b1, 1));
        assertEquals(7, Loc.storage(b1.a(1)));
        assertEquals(r.session().locIds()[0], Loc.id(b1.a(1)));
        assertEquals(5, f.failed().key(0));
        assertTrue(f.failed().keyGone(0));
        assertNull(idx.finishWrite("no-such-session", new boolean[0], true, NOW));
        restartAndCompare();
    }

    @Test
    void finishLeavesALocationMovedToDeletingAlone() throws Exception {
        String s = sid();
        long[] keys = {1, 2, 3, 4};
        write(s, keys);
        // remove 2 and 3 while they are being written
        LocList moved = idx.markDeleting(new long[] {2, 3}, 0, 2, null);
        assertEquals(2, moved.size());
        restartAndCompare();
        FinishResult f = idx.finishWrite(s, new boolean[] {true, true, false, false}, NOW);
        assertNotNull(f);
        assertEquals(1, f.served(), "only key 1 is served");
        assertEquals(1, f.failed().size(), "only key 4 failed: 2 and 3 belong to their deleter");
        assertEquals(4, f.failed().key(0));
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(1))));
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(2))), "not resurrected");
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(3))), "not removed by the failed finish");
        assertNull(idx.get(4));
        assertEquals(3, idx.keyCount());
        // the deleter still owns and purges them
        for (int i = 0; i < moved.size(); i++) {
            assertEquals(1, idx.purge(moved.key(i), Loc.id(moved.a(i))).size());
        }
        assertEquals(1, idx.keyCount());
        restartAndCompare();
    }

    @Test
    void finishIgnoresALocationPurgedAndReplacedMeanwhile() {
        String s = sid();
        write(s, 1);
        LocList moved = idx.markDeleting(new long[] {1}, 0, 1, null);
        idx.purge(1, Loc.id(moved.a(0)));
        String s2 = sid();
        long newId = write(s2, 1).session().locIds()[0];
        FinishResult f = idx.finishWrite(s, new boolean[] {false}, NOW);
        assertEquals(0, f.served());
        assertEquals(0, f.failed().size());
        long a = onlyA(idx.get(1));
        assertEquals(newId, Loc.id(a));
        assertEquals(Loc.WRITING, Loc.status(a));
    }

    // ---- markDeleting and purge ----------------------------------------------------------------------------

    @Test
    void markDeletingMovesEveryReplicaOnceAndSkipsMaskedPositions() throws Exception {
        serve(1, 2, 3);
        assertTrue(write(idx, sid(), 2, ANY_STORAGE, 0, 4, 2).inserted()[0]); // 2: SERVING + WRITING
        long[] keys = {1, 2, 3, 99, 2};
        LocList moved = idx.markDeleting(keys, 0, keys.length, i -> i == 2); // skip key 3
        assertEquals(3, moved.size());
        Map<Long, Integer> perKey = new HashMap<>();
        for (int i = 0; i < moved.size(); i++) {
            perKey.merge(moved.key(i), 1, Integer::sum);
            assertEquals(Loc.DELETING, Loc.status(moved.a(i)));
            assertEquals(addr(Loc.id(moved.a(i))), moved.b(i));
            assertFalse(moved.keyGone(i));
        }
        assertEquals(Map.of(1L, 1, 2L, 2), perKey);
        int writing = 0;
        for (int i = 0; i < moved.size(); i++) {
            writing += moved.wasWriting(i) ? 1 : 0;
            assertTrue(!moved.wasWriting(i) || moved.key(i) == 2, "only key 2's second replica was WRITING");
        }
        assertEquals(1, writing, "the replica taken from WRITING says so");
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(1))));
        Block b2 = idx.get(2);
        assertEquals(2, b2.size());
        assertEquals(Loc.DELETING, status(b2, 0));
        assertEquals(Loc.DELETING, status(b2, 1));
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(3))));
        assertEquals(3, idx.keyCount(), "marking removes no key");
        restartAndCompare();
        assertEquals(1, idx.markDeleting(keys, 0, 3, null).size(), "only key 3 is left to move");
        assertEquals(0, idx.markDeleting(keys, 0, keys.length, null).size());
    }

    /** A trim leaves a session in flight its WRITING replicas, in the same atomic step as it moves the others. */
    @Test
    void markDeletingCanLeaveWritingReplicasToTheirSession() throws Exception {
        serve(1, 2);
        assertTrue(write(idx, sid(), 2, ANY_STORAGE, 0, 4, 2).inserted()[0]); // 2: SERVING + WRITING
        String s = sid();
        write(s, 3); // 3: WRITING only
        long[] keys = {1, 2, 3};
        LocList moved = idx.markDeleting(keys, 0, keys.length, null, false);
        assertEquals(2, moved.size(), "the SERVING replicas of 1 and 2");
        Block b2 = idx.get(2);
        assertEquals(java.util.Set.of(Loc.DELETING, Loc.WRITING), java.util.Set.of(status(b2, 0), status(b2, 1)));
        assertEquals(Loc.WRITING, Loc.status(onlyA(idx.get(3))));
        restartAndCompare();
        FinishResult f = idx.finishWrite(s, new boolean[] {true}, NOW);
        assertEquals(1, f.served(), "the session finishes what it wrote");
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(3))));
        assertEquals(1, idx.markDeleting(keys, 0, keys.length, null, false).size(), "3 can go now; 2's WRITING stays");
        assertEquals(1, idx.markDeleting(keys, 0, keys.length, null).size(), "and goes when asked for");
    }

    @Test
    void markDeletingCountsSkipPositionsFromTheOffset() {
        serve(1, 2, 3, 4);
        long[] keys = {1, 2, 3, 4};
        List<Integer> asked = new ArrayList<>();
        LocList moved = idx.markDeleting(keys, 1, 3, i -> {
            asked.add(i);
            return i == 0; // position 0 of the range: key 2
        });
        assertEquals(List.of(0, 1, 2), asked);
        assertEquals(2, moved.size());
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(1))), "outside the range");
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(2))), "skipped");
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(3))));
        assertEquals(Loc.DELETING, Loc.status(onlyA(idx.get(4))));
    }

    @Test
    void purgeRemovesALocationOnlyWhenItIsDeleting() throws Exception {
        serve(1, 2);
        long id1 = Loc.id(onlyA(idx.get(1)));
        assertEquals(0, idx.purge(1, id1).size(), "SERVING is not purged");
        String s = sid();
        long w = write(idx, s, 2, ANY_STORAGE, 0, 3, 1).session().locIds()[0];
        assertEquals(0, idx.purge(1, w).size(), "WRITING is not purged");
        assertEquals(0, idx.purge(1, 123_456_789).size(), "unknown location");
        assertEquals(0, idx.purge(77, id1).size(), "unknown key");
        assertEquals(2, idx.get(1).size());

        idx.markDeleting(new long[] {1, 2}, 0, 2, null);
        restartAndCompare();
        LocList p = idx.purge(1, id1);
        assertEquals(1, p.size());
        assertEquals(1, p.key(0));
        assertEquals(id1, Loc.id(p.a(0)));
        assertEquals(Loc.DELETING, Loc.status(p.a(0)));
        assertEquals(addr(id1), p.b(0));
        assertFalse(p.keyGone(0), "the replica being written is still there");
        assertEquals(0, idx.purge(1, id1).size(), "already purged");
        LocList last = idx.purge(1, w);
        assertTrue(last.keyGone(0));
        assertNull(idx.get(1));
        LocList p2 = idx.purge(2, Loc.id(idx.get(2).a(0)));
        assertTrue(p2.keyGone(0));
        assertEquals(0, idx.keyCount());
        // the session that wrote the purged replica finds nothing to do
        FinishResult f = idx.finishWrite(s, new boolean[] {true}, NOW);
        assertEquals(0, f.served());
        assertEquals(0, f.failed().size());
        assertNull(idx.get(1));
        restartAndCompare();
    }

    @Test
    void purgeAllRemovesTheDeletingLocationsOfABatchAndOnlyThose() throws Exception {
        long[] keys = range(0, 1500); // more than one store batch
        serve(keys);
        serve(2000);
        String s2 = sid();
        write(idx, s2, 2, ANY_STORAGE, 0, 3, 2000); // a second replica of 2000
        idx.finishWrite(s2, new boolean[] {true}, NOW + 1);
        assertEquals(2, idx.get(2000).size());
        LocList deleting = idx.markDeleting(keys, 0, keys.length, i -> i == 5); // key 5 stays SERVING
        deleting.addAll(idx.markDeleting(new long[] {2000}, 0, 1, null));
        assertEquals(1499 + 2, deleting.size());
        deleting.add(5, onlyA(idx.get(5)), 0, false); // SERVING: not purged
        deleting.add(77_777, Loc.a(123_456, Loc.DELETING, 1, 0), 0, false); // unknown key
        restartAndCompare();

        LocList gone = idx.purgeAll(deleting);
        assertEquals(1499 + 2, gone.size());
        java.util.Map<Long, Integer> goneKeys = new java.util.HashMap<>();
        for (int i = 0; i < gone.size(); i++) {
            assertEquals(Loc.DELETING, Loc.status(gone.a(i)));
            assertEquals(addr(Loc.id(gone.a(i))), gone.b(i));
            if (gone.keyGone(i)) {
                assertNull(goneKeys.put(gone.key(i), i), "key-gone once per key: " + gone.key(i));
            }
        }
        assertEquals(1500, goneKeys.size(), "every purged key left with its last location");
        assertFalse(goneKeys.containsKey(5L));
        assertEquals(1, idx.keyCount());
        assertNotNull(idx.get(5));
        assertNull(idx.get(2000));
        assertEquals(0, idx.purgeAll(deleting).size(), "purging again finds nothing");
        assertEquals(0, idx.purgeAll(new LocList()).size());
        restartAndCompare();
    }

    // ---- the block state machine: every row of Transition's table ------------------------------------------

    /** A location put into a status through this API, and the open session that names it (null: none asked). */
    private record Placed(long key, long id, String session) {
    }

    private long nextStateKey = 7_000_000_000L;

    /**
     * Puts a fresh key's location into {@code s} the way a store's life gets it there. With {@code withSession} an
     * open session names it, so that a finish can be tried on it. NEW is never held (null).
     */
    private Placed place(BlockState s, boolean withSession) {
        long key = nextStateKey++;
        String session = sid();
        switch (s) {
            case NOT_FOUND -> {
                // its session still open: the location was deleted and purged while it was being written
                long id = write(idx, session, 2, ANY_STORAGE, 0, 1, key).session().locIds()[0];
                LocList moved = idx.markDeleting(new long[] {key}, 0, 1, null);
                assertEquals(1, idx.purge(key, Loc.id(moved.a(0))).size());
                assertNull(idx.get(key));
                return new Placed(key, id, session);
            }
            case WRITING -> {
                // minReplicas 2: the Redis store then finishes through its general script, which checks statuses
                return new Placed(key, write(idx, session, 2, ANY_STORAGE, 0, 1, key).session().locIds()[0], session);
            }
            case DELETING -> {
                long id = write(idx, session, 2, ANY_STORAGE, 0, 1, key).session().locIds()[0];
                assertEquals(1, idx.markDeleting(new long[] {key}, 0, 1, null).size());
                return new Placed(key, id, session);
            }
            case SERVING -> {
                long id = write(idx, session, 2, ANY_STORAGE, 0, 1, key).session().locIds()[0];
                assertEquals(1, idx.finishWrite(session, new boolean[] {true}, NOW).served());
                if (!withSession) {
                    return new Placed(key, id, null);
                }
                // the only way an open session names a SERVING location: a later start reusing its id (added after
                // it), so a finish that looked at the id alone would take the SERVING one
                String again = sid();
                StartResult r = idx.startWrite(new long[] {key}, new long[] {Loc.a(id, Loc.NEW, 1, 0)},
                        new long[] {addr(id)}, 2, st -> false, 0, again, NOW + 3_600_000L, NOW);
                assertTrue(r.inserted()[0]);
                return new Placed(key, id, again);
            }
            default -> {
                return null;
            }
        }
    }

    /** The first replica of the block with this location id, or -1 (also when the key is absent). */
    private static int replicaOf(Block b, long id) {
        for (int i = 0; b != null && i < b.size(); i++) {
            if (Loc.id(b.a(i)) == id) {
                return i;
            }
        }
        return -1;
    }

    private static List<Long> words(Block b) {
        List<Long> out = new ArrayList<>();
        for (int i = 0; b != null && i < b.size(); i++) {
            out.add(b.a(i));
            out.add(b.b(i));
        }
        return out;
    }

    /**
     * Every transition tried on a location in every status a store can hold: where the table allows it, the
     * location ends in the table's status (or is gone) and the operation hands it back as the store promises;
     * everywhere else the block is left exactly as it was.
     */
    @TestFactory
    List<DynamicTest> everyTransitionFromEveryStatusFollowsTheTable() {
        List<DynamicTest> out = new ArrayList<>();
        for (Transition t : Transition.values()) {
            for (BlockState s : BlockState.values()) {
                if (s == BlockState.NEW) {
                    continue; // never held: see aStartNeverStoresNew below
                }
                String name = t + " from " + s.wireName() + (t.allows(s) ? " -> " + t.to().wireName() : ": refused");
                out.add(DynamicTest.dynamicTest(name, () -> tryTransition(t, s)));
            }
        }
        out.add(DynamicTest.dynamicTest("aStartNeverStoresNew", () -> {
            long key = nextStateKey++;
            write(sid(), key); // the helper's words carry NEW
            assertEquals(BlockState.WRITING.code(), Loc.status(onlyA(idx.get(key))));
        }));
        out.add(DynamicTest.dynamicTest("every status survives a restart", this::restartAndCompare));
        return out;
    }

    private void tryTransition(Transition t, BlockState s) {
        String row = t + " from " + s.wireName() + ": "; // surefire names dynamic tests by number only
        boolean finish = t == Transition.FINISH_OK || t == Transition.FINISH_FAILED;
        Placed p = place(s, finish);
        Block before = idx.get(p.key());
        int at = replicaOf(before, p.id());
        assertEquals(s == BlockState.NOT_FOUND, at < 0, row + "placed");
        if (at >= 0) {
            assertEquals(s.code(), Loc.status(before.a(at)), row + "placed");
        }
        boolean allowed = t.allows(s);
        long subject = p.id(); // the location the transition is about
        switch (t) {
            case START_WRITE -> {
                StartResult r = write(idx, sid(), 1, ANY_STORAGE, 0, 1, p.key());
                assertEquals(allowed, r.inserted()[0], row + "inserted");
                if (allowed) {
                    subject = r.session().locIds()[0];
                }
            }
            case FINISH_OK, FINISH_FAILED -> {
                FinishResult f = idx.finishWrite(p.session(), new boolean[] {t == Transition.FINISH_OK}, NOW + 1);
                assertNotNull(f, row + "the session is open");
                assertEquals(allowed && !t.removes() ? 1 : 0, f.served(), row + "served");
                assertEquals(allowed && t.removes() ? 1 : 0, f.failed().size(), row + "failed");
                if (allowed && t.removes()) {
                    assertEquals(before.a(at), f.failed().a(0), row + "handed back as it was held");
                    assertEquals(before.b(at), f.failed().b(0));
                }
            }
            case MARK_DELETING, MARK_DELETING_SETTLED -> {
                LocList moved = idx.markDeleting(new long[] {p.key()}, 0, 1, null, t == Transition.MARK_DELETING);
                assertEquals(allowed ? 1 : 0, moved.size(), row + "moved");
                if (allowed) {
                    assertEquals(t.apply(before.a(at)), moved.a(0), row + "handed back as it is now");
                    assertEquals(s == BlockState.WRITING, moved.wasWriting(0));
                }
            }
            case PURGE -> {
                LocList gone = idx.purge(p.key(), p.id());
                assertEquals(allowed ? 1 : 0, gone.size(), row + "purged");
                if (allowed) {
                    assertEquals(before.a(at), gone.a(0), row + "handed back as it was held");
                }
            }
        }
        Block after = idx.get(p.key());
        if (!allowed) {
            assertEquals(words(before), words(after), row + "refused: the block is as it was");
            return;
        }
        int now = replicaOf(after, subject);
        if (t.removes()) {
            assertEquals(-1, now, row + "removed");
            assertEquals(before.size() - 1, after == null ? 0 : after.size());
            return;
        }
        assertTrue(now >= 0, row + "still there");
        assertEquals(t.to().code(), Loc.status(after.a(now)), row + "status");
        if (at >= 0) {
            // only the status changes: id, storage, spec group and address stay
            assertEquals(Loc.withStatus(before.a(at), 0), Loc.withStatus(after.a(now), 0));
            assertEquals(before.b(at), after.b(now));
        }
    }

    // ---- clear, scan, sample, forEach ----------------------------------------------------------------------

    @Test
    void clearDropsEveryKeyAndSession() throws Exception {
        serve(range(0, 100));
        String s = sid();
        write(s, range(1000, 10));
        InstanceIndex other = store.index("inst-b");
        String so = sid();
        write(other, so, 1, ANY_STORAGE, 0, 1, 5, 6);
        idx.clear();
        assertEquals(0, idx.keyCount());
        assertNull(idx.get(5));
        assertNull(idx.get(1005));
        assertTrue(idx.sessions().isEmpty());
        assertNull(idx.session(s));
        assertNull(store.sessionOwner(s));
        assertNull(idx.finishWrite(s, new boolean[10], NOW));
        assertEquals(0, idx.scan(0, 10, k -> fail("key " + k)));
        // other instances are untouched
        assertEquals(2, other.keyCount());
        assertEquals("inst-b", store.sessionOwner(so));
        restartAndCompare();
        // and the index works afterwards
        serve(5);
        assertEquals(1, idx.keyCount());
        restartAndCompare();
        assertEquals(Loc.SERVING, Loc.status(onlyA(idx.get(5))));
    }

    @Test
    void scanPagesThroughEveryKeyExactlyOnce() throws Exception {
        SplittableRandom r = new SplittableRandom(7);
        Set<Long> all = new HashSet<>();
        while (all.size() < 5000) {
            all.add(r.nextLong());
        }
        all.add(0L);
        long[] keys = all.stream().mapToLong(Long::longValue).toArray();
        for (int i = 0; i < keys.length; i += 500) {
            serve(Arrays.copyOfRange(keys, i, Math.min(keys.length, i + 500)));
        }
        restartAndCompare();
        for (int page : new int[] {1, 7, 64, 1000, 100_000}) {
            Map<Long, Integer> seen = new HashMap<>();
            long cursor = 0;
            int calls = 0;
            do {
                int[] inPage = {0};
                cursor = idx.scan(cursor, page, k -> {
                    seen.merge(k, 1, Integer::sum);
                    inPage[0]++;
                });
                assertTrue(inPage[0] <= page, "page of " + page + " returned " + inPage[0]);
                assertTrue(++calls <= keys.length + 2, "scan does not terminate");
            } while (cursor != 0);
            assertEquals(all, seen.keySet(), "page " + page);
            assertTrue(seen.values().stream().allMatch(c -> c == 1), "page " + page + ": a key seen twice");
        }
    }

    @Test
    void scanBlocksVisitsEveryBlockWithItsLocations() throws Exception {
        long[] keys = range(-300, 2700);
        for (int i = 0; i < keys.length; i += 500) {
            serve(Arrays.copyOfRange(keys, i, Math.min(keys.length, i + 500)));
        }
        markAndPurge(-300, -200); // gone: never visited
        idx.markDeleting(new long[] {5}, 0, 1, null); // DELETING: visited as it is
        restartAndCompare();
        for (int hint : new int[] {1, 64, 100_000}) {
            Map<Long, Block> seen = new HashMap<>();
            long cursor = 0;
            int calls = 0;
            do {
                cursor = idx.scanBlocks(cursor, hint, b -> seen.put(b.key(), b));
                assertTrue(++calls <= keys.length + 2, "scanBlocks does not terminate");
            } while (cursor != 0);
            assertEquals(2600, seen.size(), "hint " + hint); // 2,700 served, 100 purged
            for (Block b : seen.values()) {
                Block now = idx.get(b.key());
                assertEquals(now.meta(), b.meta(), "meta of " + b.key());
                assertEquals(now.size(), b.size());
                assertEquals(now.a(0), b.a(0), "location of " + b.key());
            }
            assertEquals(Loc.DELETING, Loc.status(seen.get(5L).a(0)));
            assertNull(seen.get(-250L));
        }
    }

    @Test
    void scanOfAnEmptyIndexEndsAtOnce() {
        assertEquals(0, idx.scan(0, 64, k -> fail("key " + k)));
        serve(3);
        idx.markDeleting(new long[] {3}, 0, 1, null);
        idx.purge(3, Loc.id(idx.get(3).a(0)));
        assertEquals(0, idx.scan(0, 64, k -> fail("key " + k)));
    }

    @Test
    void sampleReturnsLiveKeys() {
        assertEquals(0, idx.sample(10, new Random(1)).length);
        long[] keys = range(-50, 200);
        serve(keys);
        Set<Long> live = new HashSet<>();
        for (long k : keys) {
            live.add(k);
        }
        markAndPurge(-50, 0); // the sample must not return these
        for (long k = -50; k < 0; k++) {
            live.remove(k);
        }
        Random rnd = new Random(3);
        Set<Long> sampled = new HashSet<>();
        for (int round = 0; round < 50; round++) {
            long[] s = idx.sample(16, rnd);
            assertTrue(s.length > 0 && s.length <= 16, "sample size " + s.length);
            for (long k : s) {
                assertTrue(live.contains(k), "sampled a key that is not live: " + k);
                sampled.add(k);
            }
        }
        assertTrue(sampled.size() > 50, "sampling looks stuck: " + sampled.size() + " distinct keys");
        long[] few = idx.sample(1000, rnd);
        assertTrue(few.length <= idx.keyCount());
    }

    @Test
    void sampledBlocksAreLiveAndCarryTheirLocations() {
        assertEquals(0, idx.sampleBlocks(10, new Random(1)).length);
        serve(range(0, 200));
        markAndPurge(0, 50); // the sample must not return these
        Random rnd = new Random(5);
        Set<Long> sampled = new HashSet<>();
        for (int round = 0; round < 50; round++) {
            Block[] s = idx.sampleBlocks(16, rnd);
            assertTrue(s.length > 0 && s.length <= 16, "sample size " + s.length);
            for (Block b : s) {
                assertNotNull(b, "nothing changes meanwhile, so every drawn key is read");
                assertTrue(b.key() >= 50 && b.key() < 200, "sampled a key that is not live: " + b.key());
                Block now = evictionView(idx).get(b.key());
                assertEquals(now.a(0), b.a(0));
                assertEquals(now.b(0), b.b(0));
                assertEquals(now.accessSec(), b.accessSec());
                sampled.add(b.key());
            }
        }
        assertTrue(sampled.size() > 50, "sampling looks stuck: " + sampled.size() + " distinct keys");
        assertTrue(idx.sampleBlocks(1000, rnd).length <= idx.keyCount());
    }

    private void markAndPurge(long from, long to) {
        for (long k = from; k < to; k++) {
            idx.markDeleting(new long[] {k}, 0, 1, null);
            idx.purge(k, Loc.id(idx.get(k).a(0)));
        }
    }

    @Test
    void forEachVisitsEveryBlockOnce() {
        serve(range(0, 300));
        write(sid(), range(1000, 20));
        Map<Long, Block> seen = new HashMap<>();
        idx.forEach(b -> assertNull(seen.put(b.key(), b), "visited twice: " + b.key()));
        assertEquals(320, seen.size());
        assertEquals(Loc.SERVING, Loc.status(onlyA(seen.get(5L))));
        assertEquals(Loc.WRITING, Loc.status(onlyA(seen.get(1005L))));
        long[] serving = idx.keysWhere(meta -> Loc.writeSec(meta) == NOW + 1);
        assertEquals(300, serving.length);
    }

    // ---- store-level ---------------------------------------------------------------------------------------

    @Test
    void recordsArePutReplacedRemovedAndSorted() throws Exception {
        store.putRecord("instances", "b", "two".getBytes(StandardCharsets.UTF_8));
        store.putRecord("instances", "a", "one".getBytes(StandardCharsets.UTF_8));
        store.putRecord("instances", "c", new byte[0]);
        store.putRecord("groups", "a", new byte[] {1, 2, 3});
        store.putRecord("instances", "b", "zwei".getBytes(StandardCharsets.UTF_8));
        restartAndCompare();
        Map<String, byte[]> rec = store.records("instances");
        assertEquals(List.of("a", "b", "c"), new ArrayList<>(rec.keySet()));
        assertEquals("zwei", new String(rec.get("b"), StandardCharsets.UTF_8));
        assertArrayEquals(new byte[] {1, 2, 3}, store.records("groups").get("a"));
        store.removeRecord("instances", "a");
        store.removeRecord("instances", "nope");
        store.removeRecord("nope", "nope");
        restartAndCompare();
        assertEquals(List.of("b", "c"), new ArrayList<>(store.records("instances").keySet()));
        assertTrue(store.records("nothing-here").isEmpty());
        // the map handed out is a copy
        try {
            store.records("instances").remove("b");
        } catch (UnsupportedOperationException ignored) {
            // an unmodifiable view is fine too
        }
        assertTrue(store.records("instances").containsKey("b"));
    }

    @Test
    void sessionOwnerAndInstancesAreSeparate() throws Exception {
        InstanceIndex b = store.index("inst-b");
        assertSame(b, store.index("inst-b"));
        assertNotNull(store.existing(INST));
        assertNull(store.existing("inst-none"));
        assertTrue(store.instanceIds().containsAll(Set.of(INST, "inst-b")));
        assertFalse(store.instanceIds().contains("inst-none"));
        String sa = sid(), sb = sid();
        write(sa, 1, 2);
        write(b, sb, 1, ANY_STORAGE, 0, 1, 2, 3);
        assertEquals(INST, store.sessionOwner(sa));
        assertEquals("inst-b", store.sessionOwner(sb));
        assertNull(store.sessionOwner("nope"));
        assertNull(idx.session(sb), "sessions are per instance");
        assertNull(idx.finishWrite(sb, new boolean[] {true, true}, NOW));
        assertNotNull(b.session(sb));
        // the same key is two unrelated keys under two instances
        assertNotEquals(Loc.id(idx.get(2).a(0)), Loc.id(b.get(2).a(0)));
        assertNull(idx.get(3));
        assertEquals(2, idx.keyCount());
        assertEquals(2, b.keyCount());
        restartAndCompare();
        assertEquals("inst-b", store.sessionOwner(sb));
        assertNotNull(store.index("inst-b").finishWrite(sb, new boolean[] {true, true}, NOW));
        assertNull(store.sessionOwner(sb));
        assertEquals(INST, store.sessionOwner(sa));
    }

    @Test
    void keyCountsAndDueSessionsOfSeveralInstancesInOneCall() throws Exception {
        InstanceIndex b = store.index("inst-b");
        store.index("inst-empty");
        serve(1, 2, 3);
        long d = NOW + 3_600_000L;
        String early = sid(), late = sid(), other = sid();
        startAt(idx, early, d, 4);
        startAt(idx, late, d + 10_000, 5, 6);
        startAt(b, other, d + 5_000, 7);
        List<String> ids = List.of("inst-b", INST, "inst-none", "inst-empty");
        for (int round = 0; round < 2; round++) {
            assertArrayEquals(new long[] {1, 6, 0, 0}, store.keyCounts(ids));
            assertEquals(List.of(List.of(), List.of(), List.of(), List.of()), dueIds(ids, d - 1), "none due yet");
            assertEquals(List.of(List.of(), List.of(early), List.of(), List.of()), dueIds(ids, d), "at the deadline");
            assertEquals(List.of(List.of(other), List.of(early), List.of(), List.of()), dueIds(ids, d + 9_999));
            assertEquals(List.of(List.of(other), java.util.stream.Stream.of(early, late).sorted().toList(), List.of(),
                    List.of()), dueIds(ids, d + 10_000));
            WriteSession got = store.sessionsDue(List.of(INST), d + 10_000).getFirst().stream()
                    .filter(x -> x.id().equals(late)).findFirst().orElseThrow();
            assertEquals(INST, got.instanceId());
            assertEquals(d + 10_000, got.deadlineMs());
            assertArrayEquals(new long[] {5, 6}, got.keys());
            assertArrayEquals(idx.session(late).locIds(), got.locIds());
            restartAndCompare();
            b = store.index("inst-b");
        }
        assertNotNull(idx.finishWrite(early, new boolean[] {true}, NOW));
        assertEquals(List.of(List.of(other), List.of(late)), dueIds(List.of("inst-b", INST), d + 10_000),
                "a closed session is not due");
        assertArrayEquals(new long[0], store.keyCounts(List.of()));
        assertTrue(store.sessionsDue(List.of(), d).isEmpty());
    }

    private StartResult startAt(InstanceIndex ix, String session, long deadlineMs, long... keys) {
        long[] a = new long[keys.length], bs = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = nextId++;
            a[i] = Loc.a(id, Loc.NEW, 1, 0);
            bs[i] = addr(id);
        }
        return ix.startWrite(keys, a, bs, 1, ANY_STORAGE, 0, session, deadlineMs, NOW);
    }

    /** The ids of the due sessions per instance, sorted. */
    private List<List<String>> dueIds(List<String> ids, long nowMs) {
        return store.sessionsDue(ids, nowMs).stream()
                .map(l -> l.stream().map(WriteSession::id).sorted().toList()).toList();
    }

    private static void assertNotEquals(long x, long y) {
        assertTrue(x != y, x + " == " + y);
    }

    @Test
    void anEmptyIndexStillExists() throws Exception {
        store.index("inst-empty");
        restartAndCompare();
        assertNotNull(store.existing("inst-empty"));
        assertEquals(0, store.existing("inst-empty").keyCount());
    }

    @Test
    void dropRemovesAnInstanceItsKeysAndSessions() throws Exception {
        InstanceIndex b = store.index("inst-b");
        String sb = sid();
        write(b, sb, 1, ANY_STORAGE, 0, 1, 1, 2, 3);
        serve(1);
        store.drop("inst-b");
        store.drop("inst-never");
        assertNull(store.existing("inst-b"));
        assertFalse(store.instanceIds().contains("inst-b"));
        assertNull(store.sessionOwner(sb));
        assertEquals(1, idx.keyCount(), "other instances stay");
        restartAndCompare();
        assertNull(store.existing("inst-b"));
        // created again, it starts empty
        InstanceIndex again = store.index("inst-b");
        assertEquals(0, again.keyCount());
        assertNull(again.get(1));
        assertNull(again.session(sb));
        assertTrue(write(again, sid(), 1, ANY_STORAGE, 0, 1, 1).inserted()[0]);
        restartAndCompare();
        assertEquals(1, store.existing("inst-b").keyCount());
    }

    // ---- concurrency ---------------------------------------------------------------------------------------

    /** Keys the concurrency tests contend on; a slow remote store may choose fewer. */
    protected int contendedKeys() {
        return 8192;
    }

    private static long key(int i) {
        return Long.reverse(i) ^ 0x5DEECE66DL; // spread, negative ones included, distinct
    }

    /** Runs {@code body(t)} on {@code threads} threads released at once; the first failure fails the caller. */
    public static void race(int threads, IntConsumerEx body) throws InterruptedException {
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Throwable> err = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            Thread th = new Thread(() -> {
                try {
                    go.await();
                    body.accept(tt);
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                }
            }, "race-" + t);
            th.start();
            ts.add(th);
        }
        go.countDown();
        for (Thread th : ts) {
            th.join(TimeUnit.SECONDS.toMillis(40));
            assertFalse(th.isAlive(), th.getName() + " still running");
        }
        if (err.get() != null) {
            throw new AssertionError("a racing thread failed", err.get());
        }
    }

    @FunctionalInterface
    public interface IntConsumerEx {
        void accept(int t) throws Exception;
    }

    /** Batch starts for thread t: every window of the key space, shifted per thread, in a per-thread order. */
    private static int[] windows(int t, int keys, int batch) {
        int n = keys / batch;
        int[] starts = new int[n];
        for (int j = 0; j < n; j++) {
            starts[j] = (j * batch + t * 13) % keys;
        }
        Random r = new Random(t);
        for (int j = n - 1; j > 0; j--) {
            int x = r.nextInt(j + 1);
            int tmp = starts[j];
            starts[j] = starts[x];
            starts[x] = tmp;
        }
        return starts;
    }

    @Test
    @Timeout(60)
    void racingStartWritesHandOutExactlyOneLocationPerKey() throws Exception {
        int n = contendedKeys(), batch = 64, threads = 32;
        Map<Long, Integer> slotOf = new HashMap<>();
        for (int i = 0; i < n; i++) {
            slotOf.put(key(i), i);
        }
        AtomicIntegerArray handedOut = new AtomicIntegerArray(n);
        long[] idOf = new long[n];
        AtomicLong ids = new AtomicLong(1);
        race(threads, t -> {
            int seq = 0;
            for (int start : windows(t, n, batch)) {
                long[] keys = new long[batch];
                long[] a = new long[batch], b = new long[batch];
                for (int j = 0; j < batch; j++) {
                    keys[j] = key((start + j) % n);
                    long id = ids.getAndIncrement();
                    a[j] = Loc.a(id, Loc.NEW, 1 + t, 0);
                    b[j] = addr(id);
                }
                String s = "race-" + t + "-" + seq++;
                StartResult r = idx.startWrite(keys, a, b, 1, ANY_STORAGE, 0, s, NOW + 60_000L, NOW);
                assertFalse(r.capacityExceeded());
                int m = 0;
                for (int j = 0; j < batch; j++) {
                    if (r.inserted()[j]) {
                        int slot = slotOf.get(keys[j]);
                        handedOut.incrementAndGet(slot);
                        idOf[slot] = Loc.id(a[j]); // written once per slot, read after the join
                        assertEquals(keys[j], r.session().keys()[m]);
                        assertEquals(Loc.id(a[j]), r.session().locIds()[m++]);
                    }
                }
                assertEquals(m, r.session().size());
                if ((seq & 1) == 0) {
                    boolean[] ok = new boolean[m];
                    Arrays.fill(ok, true);
                    assertEquals(m, idx.finishWrite(s, ok, NOW).served());
                }
            }
        });
        for (int i = 0; i < n; i++) {
            assertEquals(1, handedOut.get(i), "WRITING locations handed out for key #" + i);
        }
        assertEquals(n, idx.keyCount());
        int[] seen = {0};
        idx.forEach(b -> {
            seen[0]++;
            Integer slot = slotOf.get(b.key());
            assertNotNull(slot, "a key nobody wrote: " + b.key());
            assertEquals(idOf[slot], Loc.id(onlyA(b)));
            assertNotEquals(Loc.DELETING, Loc.status(b.a(0)));
        });
        assertEquals(n, seen[0]);
        long inSessions = idx.sessions().stream().mapToLong(WriteSession::size).sum();
        long writing = 0;
        for (int i = 0; i < n; i++) {
            if (Loc.status(idx.get(key(i)).a(0)) == Loc.WRITING) {
                writing++;
            }
        }
        assertEquals(writing, inSessions, "every WRITING location belongs to exactly one open session");
        restartAndCompare();
    }

    @Test
    @Timeout(60)
    void racingStartWritesNeverExceedMaxKeys() throws Exception {
        int n = contendedKeys(), threads = 32;
        long max = n * 5L / 8 + 3; // not a multiple of the batch size
        AtomicLong ids = new AtomicLong(1);
        AtomicLong inserted = new AtomicLong();
        AtomicLong seenMax = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Thread watcher = new Thread(() -> {
            while (!stop.get()) {
                seenMax.accumulateAndGet(idx.keyCount(), Math::max);
                Thread.onSpinWait();
            }
        }, "keycount-watcher");
        watcher.start();
        IntUnaryOperator batchOf = t -> t % 4 == 0 ? 1 : 1 + (t % 7) * 13; // sizes 1 .. 79
        try {
            // phase 1: mixed batch sizes over overlapping windows
            race(threads, t -> {
                int batch = batchOf.applyAsInt(t);
                int seq = 0;
                for (int start : windows(t, n, Math.max(batch, 16))) {
                    long[] keys = new long[batch], a = new long[batch], b = new long[batch];
                    for (int j = 0; j < batch; j++) {
                        keys[j] = key((start + j) % n);
                        long id = ids.getAndIncrement();
                        a[j] = Loc.a(id, Loc.NEW, 1, 0);
                        b[j] = addr(id);
                    }
                    StartResult r = idx.startWrite(keys, a, b, 1, ANY_STORAGE, max, "p1-" + t + "-" + seq++,
                            NOW + 60_000L, NOW);
                    long before = idx.keyCount();
                    assertTrue(before <= max, "keyCount " + before + " > " + max);
                    if (r.capacityExceeded()) {
                        assertNull(r.session());
                        for (boolean x : r.inserted()) {
                            assertFalse(x);
                        }
                    } else {
                        for (boolean x : r.inserted()) {
                            if (x) {
                                inserted.incrementAndGet();
                            }
                        }
                    }
                }
            });
            assertTrue(idx.keyCount() <= max);
            assertEquals(inserted.get(), idx.keyCount());
            // phase 2: single keys, everybody tries every key: the bound is reached exactly
            race(threads, t -> {
                int[] order = windows(t, n, 1);
                for (int j = 0; j < order.length; j++) {
                    long id = ids.getAndIncrement();
                    StartResult r = idx.startWrite(new long[] {key(order[j])}, new long[] {Loc.a(id, Loc.NEW, 1, 0)},
                            new long[] {addr(id)}, 1, ANY_STORAGE, max, "p2-" + t + "-" + j, NOW + 60_000L, NOW);
                    if (r.inserted()[0]) {
                        inserted.incrementAndGet();
                    }
                    if (r.capacityExceeded() && idx.keyCount() == max) {
                        break; // full for good (nothing is removed): every later try would be refused too
                    }
                }
            });
        } finally {
            stop.set(true);
            watcher.join(5000);
        }
        assertTrue(seenMax.get() <= max, "keyCount peaked at " + seenMax.get() + " > " + max);
        assertEquals(max, idx.keyCount());
        assertEquals(max, inserted.get());
        long[] visible = {0};
        idx.forEach(b -> visible[0]++);
        assertEquals(max, visible[0]);
        restartAndCompare();
    }
}
