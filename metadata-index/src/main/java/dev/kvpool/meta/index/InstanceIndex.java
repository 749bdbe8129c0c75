package dev.kvpool.meta.index;

import java.util.function.IntPredicate;
import java.util.function.LongPredicate;
import java.util.random.RandomGenerator;

/**
 * The block index of one instance: block key → replica locations. Every batch operation is atomic with respect
 * to the keys it touches (implementations lock key shards in ascending order) and is durable before it returns,
 * as far as the store's durability setting promises.
 */
public interface InstanceIndex {

    String instanceId();

    /**
     * False when this index is gone from its store (see {@link IndexDroppedException}); a shared store asks it, so
     * this is a round trip there. An in-process index is dropped only through its own store, which its owner knows.
     */
    default boolean alive() {
        return true;
    }

    /**
     * True when a read costs a round trip and the store's own work on data it does not cache, so a writer may skip
     * a look-up that {@link #startWrite} (minReplicas ≤ 1) repeats atomically anyway: it inserts only absent keys.
     */
    default boolean remoteReads() {
        return false;
    }

    /** Number of keys, in any status. */
    long keyCount();

    Block get(long key);

    /** Fills {@code out[i]} with the block of {@code keys[off + i]}, or null when absent. */
    void getAll(long[] keys, int off, int len, Block[] out);

    /**
     * {@link #getAll} without blocking the caller, so an event loop may call it: a remote store completes the
     * stage when its answer arrives (on its client's thread); an in-process store has filled {@code out} on return.
     * Failures complete the stage exceptionally.
     */
    default java.util.concurrent.CompletionStage<Void> getAllAsync(long[] keys, int off, int len, Block[] out) {
        try {
            getAll(keys, off, len, out);
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return java.util.concurrent.CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The read of the query path, which looks only at SERVING locations: as {@link #getAllAsync}, except that a
     * store may answer from a copy that lags the index by a bounded time (its {@link IndexStore#readerStalenessMs})
     * and that holds only SERVING locations and no meta word. Never older than this replica's own writes.
     */
    default java.util.concurrent.CompletionStage<Void> servingAsync(long[] keys, int off, int len, Block[] out) {
        return getAllAsync(keys, off, len, out);
    }

    /** Records a read hit (LRU/LFU input) for the given keys; absent keys are ignored. */
    void touch(long[] keys, int off, int len, int nowSec);

    /**
     * Records {@code hits[i]} read hits of {@code keys[i]} at once, as that many {@link #touch} calls would (a
     * batch of touches coalesced off the read path); a count below 1 counts as 1. Stores override it to send each
     * key once with its count.
     */
    default void touch(long[] keys, int[] hits, int len, int nowSec) {
        int n = 0;
        for (int i = 0; i < len; i++) {
            n += Math.max(1, hits[i]);
        }
        long[] all = new long[n];
        for (int i = 0, k = 0; i < len; i++) {
            for (int h = 0; h < Math.max(1, hits[i]); h++) {
                all[k++] = keys[i];
            }
        }
        touch(all, 0, n, nowSec);
    }

    /**
     * Adds the WRITING location {@code (a[i], b[i])} to {@code keys[i]} unless the key already has enough
     * replicas: with {@code minReplicas} ≤ 1 any replica in any status counts (KVCM's rule); above 1 only
     * WRITING/SERVING replicas on storages where {@code storageUsable} holds count. Later duplicates of a key
     * inside one batch count as existing. When the keys that would be new exceed {@code maxKeys} − keyCount,
     * nothing is inserted. On success the session (the inserted keys in batch order) is stored in the same
     * atomic step; a session is stored even when no key is inserted.
     *
     * @throws IllegalArgumentException when {@code sessionId} is already open in this store (any instance);
     *                                  nothing is changed
     * @throws IllegalStateException    when the store dropped this index meanwhile
     */
    StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate storageUsable,
                           long maxKeys, String sessionId, long deadlineMs, int nowSec);

    /** What every store refuses before a start touches anything: words missing for a key, no session id. */
    static void checkStart(long[] keys, long[] a, long[] b, String sessionId) {
        int n = keys.length;
        if (a.length < n || b.length < n) {
            throw new IllegalArgumentException("startWrite: " + n + " keys but " + a.length + " A words and "
                    + b.length + " B words");
        }
        if (sessionId == null) {
            throw new IllegalArgumentException("startWrite: session id is null");
        }
    }

    /**
     * Closes a session: location i becomes SERVING when {@code success[i]} and it is still WRITING; otherwise it
     * is removed (if still WRITING) and returned for release. Null when the session is unknown.
     */
    FinishResult finishWrite(String sessionId, boolean[] success, int nowSec);

    /**
     * FinishWriteCache with the client's mask as sent, checked against the session in the same step: location i
     * succeeds when {@code i < ok.length && ok[i]}. The mask fits when its length equals the session's size
     * ({@code exactLength}, a bool mask) or does not exceed it (a prefix). A mask that does not fit still closes
     * the session, every location failed, and the result says so. Null when the session is unknown. A remote
     * store does this in one round trip; the default reads the session first.
     */
    default FinishResult finishWrite(String sessionId, boolean[] ok, boolean exactLength, int nowSec) {
        WriteSession s = session(sessionId);
        if (s == null) {
            return null;
        }
        boolean fits = exactLength ? ok.length == s.size() : ok.length <= s.size();
        FinishResult r = finishWrite(sessionId, fits ? ok : new boolean[s.size()], nowSec);
        return r == null || fits ? r : new FinishResult(r.session(), r.served(), r.failed(), false);
    }

    WriteSession session(String sessionId);

    java.util.List<WriteSession> sessions();

    /**
     * How many sessions are open, for metrics and listings: cheaper than {@link #sessions()} (one counter read on
     * Redis instead of reading every session). May count a session the store expired since the last listing.
     */
    default int sessionCount() {
        return sessions().size();
    }

    /**
     * Ids of sessions the store itself expired before anyone closed them (a shared store drops an abandoned
     * session after its grace; it happens only while no replica ran the session expiry). Their WRITING locations
     * are left behind with nothing naming them, until an orphan sweep removes them; the ids stay listed until
     * {@link #forgetExpiredUnclosed}. Stores that never expire sessions by themselves list none.
     */
    default java.util.List<String> expiredUnclosed() {
        return java.util.List.of();
    }

    /** Stops listing these ids in {@link #expiredUnclosed} (their orphans were swept). */
    default void forgetExpiredUnclosed(java.util.Collection<String> ids) {
    }

    /**
     * Moves every replica of the keys at unmasked positions to DELETING (readers stop seeing them at once) and
     * returns the replicas that this call moved, which the caller must delete and then {@link #purge}. Positions
     * handed to {@code skipPosition} count from {@code off} (0 is {@code keys[off]}); it may be null.
     */
    default LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition) {
        return markDeleting(keys, off, len, skipPosition, true);
    }

    /**
     * {@link #markDeleting(long[], int, int, IntPredicate)}; with {@code writing} false, WRITING replicas stay as
     * they are, in the same atomic step: they belong to a session in flight, which finishes or expires them (and
     * releases what it reserved) itself.
     */
    LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing);

    /** Removes the location if it is still DELETING; returns it (with key-gone) or an empty list. */
    LocList purge(long key, long locId);

    /**
     * {@link #purge} of every location in {@code deleting} (key i, the id of a(i)): what left the index, a
     * location with key-gone set when its key left with it. Remote stores override it to purge a batch in a few
     * round trips instead of two per location.
     */
    default LocList purgeAll(LocList deleting) {
        LocList out = new LocList();
        for (int i = 0; i < deleting.size(); i++) {
            out.addAll(purge(deleting.key(i), Loc.id(deleting.a(i))));
        }
        return out;
    }

    /** Drops every key and session without handing anything back (TS_REMOVE_ALL_META, instance removal). */
    void clear();

    /**
     * Pages through keys: returns the next cursor, 0 when done. Start with cursor 0; {@code max} must be positive.
     * Every key is seen exactly once while the index does not change; keys inserted or removed during the scan
     * (and, in the embedded store, keys moved by those changes) may be missed or seen twice.
     */
    long scan(long cursor, int max, java.util.function.LongConsumer sink);

    /**
     * Pages through blocks with their locations and meta word: visits about {@code hint} blocks (a remote store may
     * visit more) and returns the next cursor, 0 when done; start with 0. A key present and unchanged for the whole
     * scan is visited at least once; one that changes meanwhile may be visited twice or not at all. A cursor of
     * this method is not one of {@link #scan}. Remote stores override it to read keys and values in one call.
     */
    default long scanBlocks(long cursor, int hint, java.util.function.Consumer<Block> sink) {
        long[] keys = new long[Math.max(1, Math.min(hint, 1 << 16))];
        int[] n = {0};
        long next = scan(cursor, keys.length, k -> keys[n[0]++] = k);
        Block[] blocks = new Block[n[0]];
        getAll(keys, 0, n[0], blocks);
        for (Block b : blocks) {
            if (b != null) {
                sink.accept(b);
            }
        }
        return next;
    }

    /** Up to {@code n} keys drawn at random (for eviction sampling). */
    long[] sample(int n, RandomGenerator random);

    /**
     * Up to {@code n} blocks drawn at random, with their locations and meta word (sampled eviction). Remote stores
     * override it to draw and read in one round trip; an entry may be null when its key left in between.
     */
    default Block[] sampleBlocks(int n, RandomGenerator random) {
        long[] keys = sample(n, random);
        Block[] out = new Block[keys.length];
        getAll(keys, 0, keys.length, out);
        return out;
    }

    /**
     * Visits every block (startup rebuild of usage and slot maps). The visitor must not call back into this index
     * to mutate it: the embedded store holds a shard's read lock while visiting it.
     */
    void forEach(java.util.function.Consumer<Block> visitor);

    /** Keys whose block satisfies the predicate on its meta word (e.g. a write-time range). */
    default long[] keysWhere(LongPredicate metaPredicate) {
        long[][] out = {new long[64]}; // primitive: a TTL expiry may match millions of keys
        int[] n = {0};
        forEach(bl -> {
            if (metaPredicate.test(bl.meta())) {
                if (n[0] == out[0].length) {
                    out[0] = java.util.Arrays.copyOf(out[0], n[0] * 2);
                }
                out[0][n[0]++] = bl.key();
            }
        });
        return java.util.Arrays.copyOf(out[0], n[0]);
    }

    /**
     * {@code inserted[i]}: key i received a WRITING location; {@code created[i]}: and the key itself is new (it
     * had no replica at all), which is what a group's key-based usage counts.
     */
    record StartResult(boolean capacityExceeded, boolean[] inserted, boolean[] created, WriteSession session) {
    }

    /** {@code maskFits} false: the success mask did not fit the session, which was closed as failed. */
    record FinishResult(WriteSession session, int served, LocList failed, boolean maskFits) {
        public FinishResult(WriteSession session, int served, LocList failed) {
            this(session, served, failed, true);
        }
    }
}
