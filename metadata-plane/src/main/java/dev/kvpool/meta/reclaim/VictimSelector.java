package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Chooses which blocks of an instance a round evicts, by the group's policy (the reclaimer's victim selection).
 * Selection is exact up to {@code exactLimit} keys, and sampled above that (like Redis' approximated LRU).
 * PREFIX_LRU is always exact: its guarantee — never a cached block without its prefix — rests on prefix touches (a
 * hit or a write refreshes the whole prefix, so a prefix is never older than what extends it) plus all-or-nothing
 * eviction of the blocks sharing the boundary access second. Exact LRU, TTL and PREFIX_LRU take their rounds from
 * an {@link AccessQueue} that one pass fills, so a large index is not read whole every round; LFU, whose scores
 * decay with time, makes a pass per round up to the limit. Leader's reclaimer thread only.
 */
final class VictimSelector {
    /** Replicas' clocks may differ this much: a queue holds only seconds at least this far before its pass. */
    static final int CLOCK_MARGIN_SEC = 2;
    /** A queue older than this is rebuilt even if it still yields (bounds what a clock step could spoil). */
    static final int QUEUE_MAX_AGE_SEC = 600;

    private final Registry registry;
    private final Reclaimer.Settings settings;
    /** Full passes over an instance's index made to choose victims (shared with the reclaimer's expiry passes). */
    private final AtomicLong scans;
    /** Victims in waiting, per instance id. */
    private final Map<String, AccessQueue> queues = new ConcurrentHashMap<>();
    /** Passes over a large index in progress, a page per round, per instance id. */
    private final Map<String, PagedPass> passes = new ConcurrentHashMap<>();
    /** Set by a selection that read a page of an unfinished pass; cleared by {@link #clearPaging}. */
    private boolean paging;

    VictimSelector(Registry registry, Reclaimer.Settings settings, AtomicLong scans) {
        this.registry = registry;
        this.settings = settings;
        this.scans = scans;
    }

    /** Not the leader (any more): queues and passes are rebuilt by the next leader's rounds. */
    void forget() {
        queues.clear();
        passes.clear();
    }

    /** Drops the queues of instances that left, or whose group turned LFU (their memory goes with them). */
    void retainLive() {
        if (queues.isEmpty() && passes.isEmpty()) {
            return;
        }
        Set<String> live = new HashSet<>();
        for (Instance i : registry.instances()) {
            GroupConfig g = registry.group(i.group);
            if (g != null && g.reclaim().policy() != ReclaimPolicy.LFU) {
                live.add(i.id);
            }
        }
        queues.keySet().retainAll(live);
        passes.keySet().retainAll(live);
    }

    void clearPaging() {
        paging = false;
    }

    /** Whether a selection since {@link #clearPaging} read a page of a pass that is not done yet. */
    boolean paging() {
        return paging;
    }

    /** A block may go when it has a SERVING replica (of an exceeded type, if given) and nothing being written. */
    boolean evictable(Block b, Set<StorageKind> only) {
        if (b == null || b.count(Loc.WRITING) > 0) {
            return false;
        }
        for (int i = 0; i < b.size(); i++) {
            if (Loc.status(b.a(i)) != Loc.SERVING) {
                continue;
            }
            if (only == null) {
                return true;
            }
            Storage st = registry.storageByNumber(Loc.storage(b.a(i)));
            if (st != null && only.contains(st.kind.usageKind())) {
                return true;
            }
        }
        return false;
    }

    /** The {@code share} keys the policy ranks lowest (PREFIX_LRU: see the class comment). */
    long[] select(Instance inst, ReclaimConfig r, Set<StorageKind> only, int share, int nowSec) {
        ReclaimPolicy pol = r.policy();
        InstanceIndex ix = inst.index;
        boolean exact = pol == ReclaimPolicy.PREFIX_LRU || ix.keyCount() <= settings.exactLimit();
        if (exact && pol != ReclaimPolicy.LFU) {
            return selectQueued(inst, pol, only, share, nowSec); // LFU's scores decay with time: no queue
        }
        int decay = r.lfuDecaySeconds();
        TopK top = new TopK(share);
        if (exact) {
            scans.incrementAndGet();
            ix.forEach(b -> {
                if (evictable(b, only)) {
                    top.offer(pol.score(b, nowSec, decay), b.key());
                }
            });
        } else {
            Block[] blocks = ix.sampleBlocks(Math.max(settings.sampleSize(), share * 4), ThreadLocalRandom.current());
            for (Block b : blocks) {
                if (evictable(b, only)) {
                    top.offer(pol.score(b, nowSec, decay), b.key());
                }
            }
        }
        return top.keys();
    }

    /**
     * LRU, TTL and PREFIX_LRU, exactly: from the instance's {@link AccessQueue} while it yields; else one pass over
     * the index that both rebuilds the queue and, when nothing is old enough to queue, selects from the newest
     * seconds. PREFIX_LRU there: blocks sharing the boundary second go together or not at all. Every key scoring
     * below the boundary is in the top k, so those go and the boundary second stays. If the top k all share one
     * second, it is the lowest of all and goes whole, however many keys it has (else nothing could ever go).
     */
    private long[] selectQueued(Instance inst, ReclaimPolicy pol, Set<StorageKind> only, int share, int nowSec) {
        InstanceIndex ix = inst.index;
        Predicate<Block> ok = b -> evictable(b, only);
        AccessQueue q = queues.get(inst.id);
        if (q != null && q.index == ix && q.policy == pol && nowSec >= q.builtSec
                && nowSec - q.readySec <= QUEUE_MAX_AGE_SEC) {
            long[] got = q.take(share, ok);
            if (got.length > 0) {
                return got;
            }
        }
        int cutoff = nowSec - CLOCK_MARGIN_SEC;
        long keyCount = ix.keyCount();
        long cap = queueCapacity(settings.queueLimit(), share, keyCount);
        int capacity = (int) Math.min(cap, Integer.MAX_VALUE - 8);
        if (cap > 0 && registry.sharedStore() && settings.passPage() > 0 && keyCount > settings.passPage()) {
            return pagedPass(inst, pol, share, nowSec, capacity, ok);
        }
        passes.remove(inst.id); // the index shrank below a page meanwhile: one go
        TopK oldest = new TopK(capacity);
        TopK top = new TopK(share);
        boolean prefix = pol == ReclaimPolicy.PREFIX_LRU;
        long[] minScore = {Long.MAX_VALUE};
        LongList atMin = new LongList();
        scans.incrementAndGet();
        ix.forEach(b -> {
            long s = pol.score(b.meta(), nowSec, 0);
            if (s < cutoff) {
                oldest.offer(s, b.key()); // any status: whether it may go is read again when taken
            }
            if (evictable(b, only)) {
                top.offer(s, b.key());
                if (prefix && s <= minScore[0]) {
                    if (s < minScore[0]) {
                        minScore[0] = s;
                        atMin.clear();
                    }
                    atMin.add(b.key());
                }
            }
        });
        q = AccessQueue.of(ix, pol, nowSec, nowSec, oldest);
        queues.put(inst.id, q);
        long[] got = q.take(share, ok);
        if (got.length > 0 || top.size() == 0) {
            return got;
        }
        // nothing old enough to queue: the newest seconds, exactly, from this same pass
        if (!prefix || top.size() < share) {
            return top.keys();
        }
        long[] below = top.keysBelow(top.maxScore());
        return below.length > 0 ? below : atMin.toArray();
    }

    /**
     * Keys a pass queues: 256 rounds' worth or a sixteenth of the index, whichever is more, within the limit, and
     * never less than two rounds (a huge step would otherwise need a pass for every part of one round). The
     * sixteenth is what keeps eviction ahead of the pass on a huge index: a pass costs in proportion to the index
     * (~1.5 s per million keys on Redis), so a queue of a fixed number of rounds would let 10^8 keys evict only
     * 256 rounds per ~150 s pass, while a sixteenth evicts at ~40 k blocks/s whatever the size (16 bytes of heap per
     * queued key: one byte per key of the index).
     */
    static long queueCapacity(int queueLimit, int share, long keyCount) {
        if (queueLimit <= 0) {
            return 0; // off: a pass every round
        }
        long wanted = Math.max(Math.max(4096L, share * 256L), keyCount / 16);
        long cap = Math.max(2L * share, Math.min(queueLimit, wanted));
        // the heap is allocated whole: no bigger than the index (and what a pass may see added to it)
        return Math.min(cap, keyCount + keyCount / 8 + 1024);
    }

    /**
     * A large index on a shared store: one page of the pass per round, nothing evicted from this instance until
     * the pass is done (other groups and instances go on meanwhile). The queue counts from the pass's start: a key
     * touched during the pass is either read after the touch (too new to queue) or queued with its old second,
     * which the re-read when taking finds changed; a key present and unchanged throughout is seen (HSCAN's promise).
     * Nothing is ever too new to queue in such an index, so there is no exact fallback here.
     */
    private long[] pagedPass(Instance inst, ReclaimPolicy pol, int share, int nowSec, int capacity,
                             Predicate<Block> ok) {
        PagedPass p = passes.get(inst.id);
        if (p == null || p.index != inst.index || p.policy != pol || nowSec < p.startSec
                || nowSec - p.lastStepSec > QUEUE_MAX_AGE_SEC) {
            p = new PagedPass(inst.index, pol, nowSec, capacity);
            passes.put(inst.id, p);
        }
        if (!p.step(settings.passPage(), nowSec)) {
            paging = true;
            return new long[0];
        }
        passes.remove(inst.id);
        scans.incrementAndGet();
        AccessQueue q = AccessQueue.of(inst.index, pol, p.startSec, nowSec, p.oldest);
        queues.put(inst.id, q);
        return q.take(share, ok);
    }

    /** A pass over an index a page at a time ({@link InstanceIndex#scanBlocks}: one HSCAN page on Redis). */
    static final class PagedPass {
        final InstanceIndex index;
        final ReclaimPolicy policy;
        final int startSec;
        final TopK oldest;
        int lastStepSec;
        private long cursor;
        private boolean begun;

        PagedPass(InstanceIndex index, ReclaimPolicy policy, int startSec, int capacity) {
            this.index = index;
            this.policy = policy;
            this.startSec = startSec;
            this.lastStepSec = startSec;
            this.oldest = new TopK(capacity);
        }

        /** Reads about {@code hint} more blocks; true when the pass is complete. */
        boolean step(int hint, int nowSec) {
            lastStepSec = nowSec;
            if (begun && cursor == 0) {
                return true;
            }
            begun = true;
            int cutoff = startSec - CLOCK_MARGIN_SEC;
            cursor = index.scanBlocks(cursor, hint, b -> {
                long s = policy.score(b.meta(), startSec, 0);
                if (s < cutoff) {
                    oldest.offer(s, b.key());
                }
            });
            return cursor == 0;
        }
    }
}
