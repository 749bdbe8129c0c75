package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.BlockState;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.KeyHash;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocArrays;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.index.Transition;
import dev.kvpool.meta.index.WriteSession;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.random.RandomGenerator;

/**
 * The in-process index of one instance: a power-of-two number of {@link LongTable} shards, each behind its own
 * read-write lock. A batch locks the shards it touches in ascending order, decides the new block states, appends
 * them to the journal as one frame and then applies that same frame in memory — live writes and recovery share
 * one mutation path.
 */
final class EmbeddedIndex implements InstanceIndex {
    private final String instanceId;
    private final EmbeddedStore store;
    private final LongTable[] shards;
    private final ReentrantReadWriteLock[] locks;
    private final int shardShift;
    private final AtomicLong keyCount = new AtomicLong();
    private final Map<String, WriteSession> sessions = new ConcurrentHashMap<>();
    /** Set, under every shard's write lock, once the store dropped this index; mutations then refuse. */
    private volatile boolean dropped;

    EmbeddedIndex(String instanceId, EmbeddedStore store, int shardCount) {
        if (Integer.bitCount(shardCount) != 1) {
            throw new IllegalArgumentException("shard count must be a power of two: " + shardCount);
        }
        this.instanceId = instanceId;
        this.store = store;
        this.shards = new LongTable[shardCount];
        this.locks = new ReentrantReadWriteLock[shardCount];
        for (int i = 0; i < shardCount; i++) {
            shards[i] = new LongTable();
            locks[i] = new ReentrantReadWriteLock();
        }
        this.shardShift = 64 - Integer.numberOfTrailingZeros(shardCount);
    }

    private int shardOf(long key) {
        // the shard takes the high bits of the mixed key, the table slot the low bits
        return KeyHash.shard(key, shardShift);
    }

    @Override
    public String instanceId() {
        return instanceId;
    }

    @Override
    public long keyCount() {
        return keyCount.get();
    }

    // ---- locking -------------------------------------------------------------------------------------------

    private long[] shardSet(long[] keys, int off, int len) {
        long[] set = new long[(shards.length + 63) >>> 6];
        for (int i = off; i < off + len; i++) {
            int s = shardOf(keys[i]);
            set[s >>> 6] |= 1L << s;
        }
        return set;
    }

    /**
     * The shards a mutation locks: those of its keys, and shard 0 when it has none, so that even a key-less
     * mutation (an empty write session opened or finished) serializes with a racing finish, clear or drop.
     */
    private long[] writeSet(long[] keys, int off, int len) {
        long[] set = shardSet(keys, off, len);
        if (len == 0) {
            set[0] = 1L;
        }
        return set;
    }

    /**
     * Only startWrite refuses on a dropped index: the other mutations find it empty (no keys, no sessions) and
     * journal nothing, so a late finish, purge or markDeleting from the service is a harmless no-op.
     */
    private void checkLive() {
        if (dropped) {
            throw new dev.kvpool.meta.index.IndexDroppedException(instanceId);
        }
    }

    private void lock(long[] set, boolean write) {
        for (int w = 0; w < set.length; w++) {
            for (long bits = set[w]; bits != 0; bits &= bits - 1) {
                int s = (w << 6) + Long.numberOfTrailingZeros(bits);
                if (write) {
                    locks[s].writeLock().lock();
                } else {
                    locks[s].readLock().lock();
                }
            }
        }
    }

    private void unlock(long[] set, boolean write) {
        for (int w = set.length - 1; w >= 0; w--) {
            for (long bits = set[w]; bits != 0; bits &= bits - 1) {
                int s = (w << 6) + Long.numberOfTrailingZeros(bits);
                if (write) {
                    locks[s].writeLock().unlock();
                } else {
                    locks[s].readLock().unlock();
                }
            }
        }
    }

    private long[] allShards() {
        long[] set = new long[(shards.length + 63) >>> 6];
        for (int s = 0; s < shards.length; s++) {
            set[s >>> 6] |= 1L << s;
        }
        return set;
    }

    // ---- reads ---------------------------------------------------------------------------------------------

    private Block read(long key) {
        LongTable t = shards[shardOf(key)];
        int slot = t.find(key);
        return slot < 0 ? null : new Block(key, t.locs(slot), t.meta(slot));
    }

    @Override
    public Block get(long key) {
        var l = locks[shardOf(key)].readLock();
        l.lock();
        try {
            return read(key);
        } finally {
            l.unlock();
        }
    }

    @Override
    public void getAll(long[] keys, int off, int len, Block[] out) {
        long[] set = shardSet(keys, off, len);
        lock(set, false);
        try {
            for (int i = 0; i < len; i++) {
                out[i] = read(keys[off + i]);
            }
        } finally {
            unlock(set, false);
        }
    }

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        touch(keys, off, null, len, nowSec);
    }

    @Override
    public void touch(long[] keys, int[] hits, int len, int nowSec) {
        touch(keys, 0, hits, len, nowSec);
    }

    /** {@code hits} null: one hit per key. */
    private void touch(long[] keys, int off, int[] hits, int len, int nowSec) {
        long[] set = shardSet(keys, off, len);
        var rnd = java.util.concurrent.ThreadLocalRandom.current();
        // access time is advisory (eviction input), not journaled: racing readers may each store "now"
        lock(set, false);
        try {
            for (int i = off; i < off + len; i++) {
                LongTable t = shards[shardOf(keys[i])];
                int slot = t.find(keys[i]);
                if (slot >= 0) {
                    long meta = t.meta(slot);
                    int n = hits == null ? 1 : Math.max(1, hits[i - off]);
                    for (int h = 0; h < n && (h == 0 || Loc.freq(meta) < Loc.MAX_FREQ); h++) {
                        meta = Loc.touched(meta, nowSec, rnd);
                    }
                    t.setMeta(slot, meta);
                }
            }
        } finally {
            unlock(set, false);
        }
    }

    // ---- writes --------------------------------------------------------------------------------------------

    /** Appends the frame to the journal and applies it; callers hold the write locks of every touched shard. */
    private void commit(Frame f, boolean addsReserved) {
        ByteBuffer payload = f.finish();
        store.append(payload);
        payload.rewind();
        apply(payload, addsReserved);
    }

    void apply(ByteBuffer payload, boolean addsReserved) {
        Frame.read(payload, new Frame.Visitor() {
            @Override
            public void block(long key, long[] locs, long meta) {
                int delta = shards[shardOf(key)].put(key, locs, meta);
                if (delta < 0 || (delta > 0 && !addsReserved)) {
                    keyCount.addAndGet(delta);
                }
            }

            @Override
            public void block1(long key, long a, long b, long meta) {
                int delta = shards[shardOf(key)].put1(key, a, b, meta);
                if (delta > 0 && !addsReserved) {
                    keyCount.addAndGet(delta);
                }
            }

            @Override
            public void sessionOpen(WriteSession s) {
                sessions.put(s.id(), s);
                store.sessionOpened(s.id(), instanceId);
            }

            @Override
            public void sessionClose(String id) {
                sessions.remove(id);
                store.sessionClosed(id);
            }

            @Override
            public void clear() {
                for (LongTable t : shards) {
                    t.clear();
                }
                sessions.keySet().forEach(store::sessionClosed);
                sessions.clear();
                keyCount.set(0);
            }

            @Override
            public void drop() {
                clear();
            }

            @Override
            public void recordPut(String section, String name, byte[] value) {
                throw new IllegalStateException("record in an instance frame");
            }

            @Override
            public void recordDel(String section, String name) {
                throw new IllegalStateException("record in an instance frame");
            }

            @Override
            public void end() {
            }
        });
    }

    @Override
    public StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate storageUsable,
                                  long maxKeys, String sessionId, long deadlineMs, int nowSec) {
        InstanceIndex.checkStart(keys, a, b, sessionId);
        int n = keys.length;
        boolean[] inserted = new boolean[n], created = new boolean[n];
        long[] set = writeSet(keys, 0, n);
        lock(set, true);
        try {
            checkLive();
            Set<Long> seen = new HashSet<>(n * 2);
            long[][] before = new long[n][];
            long[] metaBefore = new long[n];
            int newKeys = 0, count = 0;
            for (int i = 0; i < n; i++) {
                if (!seen.add(keys[i])) {
                    continue; // a repeated key inside one request counts as existing
                }
                LongTable t = shards[shardOf(keys[i])];
                int slot = t.find(keys[i]);
                if (slot < 0) {
                    inserted[i] = true;
                    created[i] = true;
                    newKeys++;
                } else if (minReplicas > 1) {
                    long[] locs = t.locs(slot);
                    int usable = 0;
                    for (int j = 0; j < locs.length; j += 2) {
                        if (BlockState.countsAsReplica(Loc.status(locs[j]))
                                && (storageUsable == null || storageUsable.test(Loc.storage(locs[j])))) {
                            usable++;
                        }
                    }
                    if (usable < minReplicas) {
                        inserted[i] = true;
                        before[i] = locs;
                        metaBefore[i] = t.meta(slot);
                    }
                }
                if (inserted[i]) {
                    count++;
                }
            }
            // one owner per session id in the whole store: a reused id would orphan the first session's
            // WRITING locations (and, across instances, misroute its finish)
            if (!store.claimSession(sessionId, instanceId)) {
                throw new IllegalArgumentException("write session id already open: " + sessionId);
            }
            boolean committed = false;
            boolean reserved = false;
            try {
                if (newKeys > 0) {
                    if (!reserve(newKeys, maxKeys)) {
                        return new StartResult(true, new boolean[n], new boolean[n], null);
                    }
                    reserved = true;
                }
                long[] sk = new long[count], sid = new long[count];
                Frame f = new Frame(instanceId);
                for (int i = 0, j = 0; i < n; i++) {
                    if (!inserted[i]) {
                        continue;
                    }
                    long wa = Transition.START_WRITE.apply(a[i]);
                    long meta = before[i] == null ? Loc.meta(nowSec, nowSec) : metaBefore[i];
                    f.block(keys[i], before[i] == null ? new long[] {wa, b[i]} : LocArrays.with(before[i], wa, b[i]), meta);
                    sk[j] = keys[i];
                    sid[j++] = Loc.id(wa);
                }
                WriteSession s = new WriteSession(sessionId, instanceId, deadlineMs, sk, sid);
                f.sessionOpen(s);
                commit(f, true);
                committed = true;
                return new StartResult(false, inserted, created, s);
            } finally {
                if (!committed) {
                    if (reserved) {
                        keyCount.addAndGet(-newKeys);
                    }
                    store.sessionClosed(sessionId, instanceId);
                }
            }
        } finally {
            unlock(set, true);
        }
    }

    private boolean reserve(int newKeys, long maxKeys) {
        while (true) {
            long cur = keyCount.get();
            if (maxKeys > 0 && cur + newKeys > maxKeys) {
                return false;
            }
            if (keyCount.compareAndSet(cur, cur + newKeys)) {
                return true;
            }
        }
    }

    @Override
    public FinishResult finishWrite(String sessionId, boolean[] success, int nowSec) {
        WriteSession s = sessionId == null ? null : sessions.get(sessionId);
        if (s == null) {
            return null;
        }
        long[] set = writeSet(s.keys(), 0, s.size());
        lock(set, true);
        try {
            if (sessions.get(sessionId) != s) {
                return null; // finished or expired by a racing caller (an empty session locks shard 0 for this)
            }
            LocList failed = new LocList();
            int served = 0;
            Frame f = new Frame(instanceId);
            for (int i = 0; i < s.size(); i++) {
                long key = s.keys()[i];
                LongTable t = shards[shardOf(key)];
                int slot = t.find(key);
                if (slot < 0) {
                    continue;
                }
                long[] locs = t.locs(slot);
                int idx = LocArrays.indexOfId(locs, s.locIds()[i]);
                boolean ok = success != null && i < success.length && success[i];
                Transition op = ok ? Transition.FINISH_OK : Transition.FINISH_FAILED;
                // only a location still WRITING belongs to this session; a DELETING one belongs to its deleter
                if (idx < 0 || !op.allows(Loc.status(locs[idx * 2]))) {
                    continue;
                }
                if (ok) {
                    locs[idx * 2] = Transition.FINISH_OK.apply(locs[idx * 2]);
                    f.block(key, locs, Loc.rewritten(t.meta(slot), nowSec));
                    served++;
                } else {
                    long[] rest = LocArrays.without(locs, idx);
                    failed.add(key, locs[idx * 2], locs[idx * 2 + 1], rest.length == 0);
                    f.block(key, rest, t.meta(slot));
                }
            }
            f.sessionClose(sessionId);
            commit(f, false);
            return new FinishResult(s, served, failed);
        } finally {
            unlock(set, true);
        }
    }

    @Override
    public WriteSession session(String sessionId) {
        return sessionId == null ? null : sessions.get(sessionId);
    }

    @Override
    public List<WriteSession> sessions() {
        return new ArrayList<>(sessions.values());
    }

    @Override
    public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing) {
        LocList moved = new LocList();
        Transition mark = Transition.markDeleting(writing);
        long[] set = shardSet(keys, off, len);
        lock(set, true);
        try {
            Frame f = new Frame(instanceId);
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < len; i++) {
                long key = keys[off + i];
                if ((skipPosition != null && skipPosition.test(i)) || !seen.add(key)) {
                    continue;
                }
                LongTable t = shards[shardOf(key)];
                int slot = t.find(key);
                if (slot < 0) {
                    continue;
                }
                long[] locs = t.locs(slot);
                boolean changed = false;
                for (int j = 0; j < locs.length; j += 2) {
                    int was = Loc.status(locs[j]);
                    if (mark.allows(was)) {
                        locs[j] = mark.apply(locs[j]);
                        moved.add(key, locs[j], locs[j + 1], false, was == BlockState.WRITING.code());
                        changed = true;
                    }
                }
                if (changed) {
                    f.block(key, locs, t.meta(slot));
                }
            }
            if (!f.isEmpty()) {
                commit(f, false);
            }
            return moved;
        } finally {
            unlock(set, true);
        }
    }

    @Override
    public LocList purge(long key, long locId) {
        LocList out = new LocList();
        var l = locks[shardOf(key)].writeLock();
        l.lock();
        try {
            LongTable t = shards[shardOf(key)];
            int slot = t.find(key);
            if (slot < 0) {
                return out;
            }
            long[] locs = t.locs(slot);
            int idx = LocArrays.indexOfId(locs, locId);
            if (idx < 0 || !Transition.PURGE.allows(Loc.status(locs[idx * 2]))) {
                return out;
            }
            long[] rest = LocArrays.without(locs, idx);
            out.add(key, locs[idx * 2], locs[idx * 2 + 1], rest.length == 0);
            commit(new Frame(instanceId).block(key, rest, t.meta(slot)), false);
            return out;
        } finally {
            l.unlock();
        }
    }

    @Override
    public void clear() {
        long[] set = allShards();
        lock(set, true);
        try {
            if (dropped) {
                return; // already empty; a CLEAR journaled after the DROP would bring the instance back
            }
            commit(new Frame(instanceId).clear(), false);
        } finally {
            unlock(set, true);
        }
    }

    /**
     * Drops this index for the store: journals DROP and empties it under every shard lock, so no mutation can
     * slip in between (and be journaled after the DROP, which would resurrect the instance on replay).
     */
    void drop(Runnable unregister) {
        long[] set = allShards();
        lock(set, true);
        try {
            if (dropped) {
                return;
            }
            commit(new Frame(instanceId).drop(), false);
            dropped = true;
            unregister.run();
        } finally {
            unlock(set, true);
        }
    }

    /** Journals an empty frame so that a new, still empty index exists again after a restart. */
    void journalCreation() {
        var l = locks[0].writeLock();
        l.lock();
        try {
            if (!dropped) {
                store.append(new Frame(instanceId).finish());
            }
        } finally {
            l.unlock();
        }
    }

    @Override
    public long scan(long cursor, int max, LongConsumer sink) {
        if (max <= 0) {
            // a page of 0 would hand back cursor 0 ("done") when the very first slot is live
            throw new IllegalArgumentException("scan page size must be positive: " + max);
        }
        int shard = (int) (cursor >>> 32);
        int pos = (int) cursor;
        int emitted = 0;
        while (shard < shards.length) {
            var l = locks[shard].readLock();
            l.lock();
            try {
                LongTable t = shards[shard];
                for (; pos < t.capacity(); pos++) {
                    if (t.live(pos)) {
                        if (emitted == max) {
                            return ((long) shard << 32) | pos;
                        }
                        sink.accept(t.key(pos));
                        emitted++;
                    }
                }
            } finally {
                l.unlock();
            }
            shard++;
            pos = 0;
        }
        return 0;
    }

    @Override
    public long[] sample(int n, RandomGenerator random) {
        long total = keyCount.get();
        if (total <= 0 || n <= 0) {
            return new long[0];
        }
        long[] out = new long[(int) Math.min(n, total)];
        int got = 0;
        for (int attempt = 0; got < out.length && attempt < out.length * 4; attempt++) {
            int s = random.nextInt(shards.length);
            var l = locks[s].readLock();
            l.lock();
            try {
                LongTable t = shards[s];
                if (t.size() == 0) {
                    continue;
                }
                int p = random.nextInt(t.capacity());
                for (int k = 0; k < t.capacity(); k++, p = p + 1 == t.capacity() ? 0 : p + 1) {
                    if (t.live(p)) {
                        out[got++] = t.key(p);
                        break;
                    }
                }
            } finally {
                l.unlock();
            }
        }
        return got == out.length ? out : java.util.Arrays.copyOf(out, got);
    }

    @Override
    public void forEach(Consumer<Block> visitor) {
        for (int s = 0; s < shards.length; s++) {
            var l = locks[s].readLock();
            l.lock();
            try {
                LongTable t = shards[s];
                for (int p = 0; p < t.capacity(); p++) {
                    if (t.live(p)) {
                        visitor.accept(new Block(t.key(p), t.locs(p), t.meta(p)));
                    }
                }
            } finally {
                l.unlock();
            }
        }
    }

    /**
     * Writes this index into a snapshot: each shard's columns as copied under its read lock (a writer of that shard
     * waits for the copy, not for the disk), then the open sessions. Each shard is a consistent table of its own
     * moment; the journal generation opened before the snapshot replays what came after.
     */
    void snapshotInto(SnapshotFile.Writer out) throws java.io.IOException {
        for (int s = 0; s < shards.length; s++) {
            LongTable.Image img;
            var l = locks[s].readLock();
            l.lock();
            try {
                if (dropped) {
                    return; // its DROP is in the journal the snapshot supersedes, or in the new one
                }
                img = shards[s].image();
            } finally {
                l.unlock();
            }
            out.shard(instanceId, shards.length, s, img);
        }
        if (dropped) {
            return;
        }
        // always this frame, empty or not, so that an index without keys still exists after restart
        Frame f = new Frame(instanceId);
        sessions.values().forEach(f::sessionOpen);
        out.section(SnapshotFile.SESSIONS, f.finish());
    }

    /** Recovery: takes a shard read back from a snapshot as it is. */
    void installShard(int shard, LongTable.Image img) {
        long before = shards[shard].size();
        shards[shard].install(img);
        keyCount.addAndGet(img.size() - before);
    }

    /** Recovery of a snapshot with another layout: re-inserts each live slot. */
    void reinsert(LongTable.Image img) {
        for (int p = 0; p < img.capacity(); p++) {
            if (img.as()[p] != 0) {
                long key = img.keys()[p];
                long[] more = img.extra().get(key);
                long[] locs;
                if (more == null) {
                    locs = new long[] {img.as()[p], img.bs()[p]};
                } else {
                    locs = new long[2 + more.length];
                    locs[0] = img.as()[p];
                    locs[1] = img.bs()[p];
                    System.arraycopy(more, 0, locs, 2, more.length);
                }
                keyCount.addAndGet(shards[shardOf(key)].put(key, locs, img.metas()[p]));
            }
        }
    }

    long heapBytes() {
        long sum = 0;
        for (LongTable t : shards) {
            sum += t.heapBytes();
        }
        return sum;
    }
}
