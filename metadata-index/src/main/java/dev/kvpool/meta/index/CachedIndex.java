package dev.kvpool.meta.index;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.random.RandomGenerator;

/**
 * A search cache in front of an index (KVCM's meta_cache_policy_config): {@link #get} and {@link #getAll}
 * results are kept in a sharded LRU (a power-of-two number of shards, each an access-ordered
 * {@link LinkedHashMap} under its own lock, the capacity split evenly across them). Only present keys are cached.
 *
 * <p>Every mutating call that goes through this decorator ({@link #startWrite}, {@link #finishWrite},
 * {@link #markDeleting}, {@link #purge}, {@link #purgeAll}, {@link #clear}) invalidates the keys it may have changed once the
 * delegate returned (or threw). A read that missed, went to the delegate and then raced with such a mutation
 * must not store what it read: each shard carries a version, bumped by every invalidation in that shard, and a
 * fill only lands if the shard's version is still the one the reader saw before asking the delegate. So after a
 * mutating call returns, no read through this decorator can see the state from before it.
 *
 * <p>Mutations that bypass the decorator (another decorator over the same index, {@link IndexStore#drop}) are
 * not seen: call {@link #invalidateAll()} after them. {@link #touch} does not invalidate (a read hit is followed
 * by a touch, which would empty the cache as fast as it fills): it passes through and then updates the access time
 * of the cached copies in place. A read racing with a touch may still cache the access time from just before it;
 * access time is advisory, and eviction reads it from {@link #sample}/{@link #forEach}, which go to the delegate.
 */
public final class CachedIndex extends ForwardingIndex {
    private final Shard[] shards; // empty when the cache is disabled
    private final int shardShift;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();

    /**
     * @param capacity   blocks kept in all; 0 disables the cache (every read goes to the delegate and is a miss)
     * @param shardCount power of two; lowered to the largest power of two ≤ capacity so that no shard is empty
     */
    public CachedIndex(InstanceIndex delegate, long capacity, int shardCount) {
        super(delegate);
        if (capacity < 0) {
            throw new IllegalArgumentException("cache capacity must be ≥ 0: " + capacity);
        }
        if (shardCount <= 0 || Integer.bitCount(shardCount) != 1) {
            throw new IllegalArgumentException("cache shard count must be a power of two: " + shardCount);
        }
        if (capacity == 0) {
            shards = new Shard[0];
            shardShift = 64;
            return;
        }
        int n = (int) Math.min(shardCount, Long.highestOneBit(capacity));
        int perShard = (int) Math.min(Integer.MAX_VALUE - 1, capacity / n); // ≥ 1, as n ≤ capacity
        shards = new Shard[n];
        for (int i = 0; i < n; i++) {
            // spread the remainder so the shard capacities add up to exactly `capacity`
            shards[i] = new Shard(perShard + (i < capacity % n ? 1 : 0));
        }
        shardShift = 64 - Integer.numberOfTrailingZeros(n);
    }

    public CachedIndex(InstanceIndex delegate, long capacity) {
        this(delegate, capacity, 16);
    }

    /** One LRU shard. Every field is guarded by the shard's monitor. */
    private static final class Shard {
        final int capacity;
        final LinkedHashMap<Long, Block> map;
        long version;

        Shard(int capacity) {
            this.capacity = capacity;
            this.map = new LinkedHashMap<>(Math.min(capacity, 1 << 16) * 4 / 3 + 1, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Block> eldest) {
                    return size() > Shard.this.capacity;
                }
            };
        }
    }

    private Shard shardOf(long key) {
        return shards[KeyHash.shard(key, shardShift)];
    }

    public long hits() {
        return hits.sum();
    }

    public long misses() {
        return misses.sum();
    }

    /** Blocks currently cached. */
    public long cachedCount() {
        long n = 0;
        for (Shard s : shards) {
            synchronized (s) {
                n += s.map.size();
            }
        }
        return n;
    }

    /** Total capacity (0 when disabled). */
    public long capacity() {
        long n = 0;
        for (Shard s : shards) {
            n += s.capacity;
        }
        return n;
    }

    // ---- reads ---------------------------------------------------------------------------------------------

    @Override
    public Block get(long key) {
        if (shards.length == 0) {
            misses.increment();
            return delegate.get(key);
        }
        Shard s = shardOf(key);
        long version;
        synchronized (s) {
            Block b = s.map.get(key);
            if (b != null) {
                hits.increment();
                return b;
            }
            version = s.version;
        }
        misses.increment();
        Block fresh = delegate.get(key);
        if (fresh != null) {
            fill(s, key, fresh, version);
        }
        return fresh;
    }

    private static void fill(Shard s, long key, Block b, long versionSeen) {
        synchronized (s) {
            // an invalidation since the reader looked: what it read may predate that mutation
            if (s.version == versionSeen) {
                s.map.put(key, b);
            }
        }
    }

    @Override
    public void getAll(long[] keys, int off, int len, Block[] out) {
        if (shards.length == 0) {
            misses.add(len);
            delegate.getAll(keys, off, len, out);
            return;
        }
        Misses m = cached(keys, off, len, out);
        if (m != null) {
            delegate.getAll(m.keys, 0, m.n, m.fresh);
            m.fill(out);
        }
    }

    /** As {@link #getAll}; the misses go to the delegate's asynchronous read. */
    @Override
    public java.util.concurrent.CompletionStage<Void> getAllAsync(long[] keys, int off, int len, Block[] out) {
        if (shards.length == 0) {
            misses.add(len);
            return delegate.getAllAsync(keys, off, len, out);
        }
        Misses m = cached(keys, off, len, out);
        if (m == null) {
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
        return delegate.getAllAsync(m.keys, 0, m.n, m.fresh).thenRun(() -> m.fill(out));
    }

    /** The query path's read goes through this cache too (the delegate's copy, if any, is bypassed). */
    @Override
    public java.util.concurrent.CompletionStage<Void> servingAsync(long[] keys, int off, int len, Block[] out) {
        return getAllAsync(keys, off, len, out);
    }

    /** The keys a read did not find cached, with the shard versions seen, so that a fill can tell it is stale. */
    private final class Misses {
        final int[] at;
        final long[] keys, versions;
        final Block[] fresh;
        int n;

        Misses(int max) {
            at = new int[max];
            keys = new long[max];
            versions = new long[max];
            fresh = new Block[max];
        }

        void fill(Block[] out) {
            for (int j = 0; j < n; j++) {
                out[at[j]] = fresh[j];
                if (fresh[j] != null) {
                    CachedIndex.fill(shardOf(keys[j]), keys[j], fresh[j], versions[j]);
                }
            }
        }
    }

    /** Fills {@code out} from the cache; returns the misses, or null when there are none. */
    private Misses cached(long[] keys, int off, int len, Block[] out) {
        Misses m = null;
        for (int i = 0; i < len; i++) {
            long key = keys[off + i];
            Shard s = shardOf(key);
            synchronized (s) {
                Block b = s.map.get(key);
                if (b != null) {
                    out[i] = b;
                    continue;
                }
                if (m == null) {
                    m = new Misses(len - i);
                }
                m.at[m.n] = i;
                m.keys[m.n] = key;
                m.versions[m.n++] = s.version;
            }
        }
        int missed = m == null ? 0 : m.n;
        hits.add(len - missed);
        misses.add(missed);
        return m;
    }

    // ---- invalidation --------------------------------------------------------------------------------------

    private void invalidate(long key) {
        Shard s = shardOf(key);
        synchronized (s) {
            s.map.remove(key);
            s.version++;
        }
    }

    private void invalidate(long[] keys, int off, int len) {
        if (shards.length == 0) {
            return;
        }
        for (int i = off; i < off + len; i++) {
            invalidate(keys[i]);
        }
    }

    /** Empties the cache; use after a mutation that did not go through this decorator. */
    public void invalidateAll() {
        for (Shard s : shards) {
            synchronized (s) {
                s.map.clear();
                s.version++;
            }
        }
    }

    // ---- mutations: delegate, then invalidate what they may have changed -------------------------------------

    @Override
    public StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate storageUsable,
                                  long maxKeys, String sessionId, long deadlineMs, int nowSec) {
        StartResult r = null;
        try {
            r = delegate.startWrite(keys, a, b, minReplicas, storageUsable, maxKeys, sessionId, deadlineMs, nowSec);
            return r;
        } finally {
            if (shards.length > 0) {
                if (r == null) {
                    invalidate(keys, 0, keys.length); // failed: it may or may not have written
                } else if (!r.capacityExceeded()) {
                    boolean[] ins = r.inserted();
                    for (int i = 0; i < keys.length; i++) {
                        if (ins[i]) {
                            invalidate(keys[i]);
                        }
                    }
                }
            }
        }
    }

    @Override
    public FinishResult finishWrite(String sessionId, boolean[] success, int nowSec) {
        return finished(() -> delegate.finishWrite(sessionId, success, nowSec));
    }

    @Override
    public FinishResult finishWrite(String sessionId, boolean[] ok, boolean exactLength, int nowSec) {
        return finished(() -> delegate.finishWrite(sessionId, ok, exactLength, nowSec));
    }

    /**
     * A finish changes only its session's keys, which the result names; null means the session was unknown and
     * nothing changed. When the call fails it may still have run (a lost answer) and which keys it had is unknown
     * here, so everything goes: reading the session first would cost a round trip on every finish.
     */
    private FinishResult finished(java.util.function.Supplier<FinishResult> call) {
        FinishResult r;
        try {
            r = call.get();
        } catch (RuntimeException | Error e) {
            invalidateAll();
            throw e;
        }
        if (r != null) {
            invalidate(r.session().keys(), 0, r.session().size());
        }
        return r;
    }

    @Override
    public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing) {
        try {
            return delegate.markDeleting(keys, off, len, skipPosition, writing);
        } finally {
            invalidate(keys, off, len);
        }
    }

    @Override
    public LocList purge(long key, long locId) {
        try {
            return delegate.purge(key, locId);
        } finally {
            if (shards.length > 0) {
                invalidate(key);
            }
        }
    }

    @Override
    public LocList purgeAll(LocList deleting) {
        try {
            return delegate.purgeAll(deleting);
        } finally {
            if (shards.length > 0) {
                for (int i = 0; i < deleting.size(); i++) {
                    invalidate(deleting.key(i));
                }
            }
        }
    }

    @Override
    public void clear() {
        try {
            delegate.clear();
        } finally {
            invalidateAll();
        }
    }

    // ---- pass-through --------------------------------------------------------------------------------------

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        delegate.touch(keys, off, len, nowSec);
        touchCached(keys, off, len, nowSec);
    }

    @Override
    public void touch(long[] keys, int[] hits, int len, int nowSec) {
        delegate.touch(keys, hits, len, nowSec);
        touchCached(keys, 0, len, nowSec);
    }

    private void touchCached(long[] keys, int off, int len, int nowSec) {
        if (shards.length == 0) {
            return;
        }
        for (int i = off; i < off + len; i++) {
            Shard s = shardOf(keys[i]);
            synchronized (s) {
                Block b = s.map.get(keys[i]);
                if (b != null && b.accessSec() != nowSec) {
                    s.map.put(keys[i], b.withAccessSec(nowSec));
                }
            }
        }
    }

    @Override
    public String toString() {
        return "CachedIndex{" + delegate.instanceId() + ", capacity=" + capacity() + ", shards=" + shards.length
                + '}';
    }
}
