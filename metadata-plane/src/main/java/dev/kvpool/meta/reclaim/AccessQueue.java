package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import java.util.function.Predicate;

/**
 * Victims for many rounds from one pass over an instance's index, for the policies whose score is a time that only
 * grows (LRU and PREFIX_LRU: the access second; TTL: the write second). The pass keeps the lowest-scoring keys
 * (every key of the seconds it keeps, all of them before the pass less a clock margin); each round takes from the
 * front, re-reading the keys it takes. A key whose score changed was touched (or written again) since — under
 * PREFIX_LRU, with its whole prefix — and is dropped, as is a key that left.
 *
 * <p>Why taking from the queue is as exact as a fresh pass: a key written or touched after the pass gets a second
 * at or after the pass. So the queued keys that are still unchanged are exactly the lowest-scoring keys of the
 * index now. For PREFIX_LRU, which takes whole seconds, every cached extension of a queued key — never newer than
 * its prefix — is queued too, in the same second (taken with it) or an earlier one (taken before it).
 */
final class AccessQueue {
    /** Keys read per store call while taking. */
    private static final int READ_CHUNK = 1024;

    final InstanceIndex index;
    final ReclaimPolicy policy;
    /** The second the pass that built the queue started (what the queue is complete below, less the margin). */
    final int builtSec;
    /** The second that pass ended (the queue's age counts from it). */
    final int readySec;
    private final long[] sec;
    private final long[] key;
    /** Queued entries: the first {@code n} of {@code sec} and {@code key}. */
    private final int n;
    private int head;

    private Block[] window = new Block[0];
    private int windowFrom, windowLen;

    private AccessQueue(InstanceIndex index, ReclaimPolicy policy, int builtSec, int readySec, long[] sec, long[] key,
                        int n) {
        this.index = index;
        this.policy = policy;
        this.builtSec = builtSec;
        this.readySec = readySec;
        this.sec = sec;
        this.key = key;
        this.n = n;
    }

    /**
     * The queue of what a pass offered to {@code oldest} (score second, key). A full heap may hold only part of
     * its highest second: that second is left out, so that every queued second is complete.
     */
    static AccessQueue of(InstanceIndex index, ReclaimPolicy policy, int builtSec, int readySec,
                          TopK oldest) {
        boolean full = oldest.full();
        long top = oldest.size() == 0 ? 0 : oldest.maxScore();
        int n = oldest.sortAscending();
        long[] s = oldest.scores(), k = oldest.keysInOrder();
        if (full) {
            while (n > 0 && s[n - 1] == top) {
                n--;
            }
        }
        // the heap's own arrays, not copies: at a sixteenth of a 10^8-key index they are 100 MB each
        return new AccessQueue(index, policy, builtSec, readySec, s, k, n);
    }

    /**
     * Up to {@code share} keys, oldest first, that are unchanged since the pass and pass {@code evictable}.
     * PREFIX_LRU takes whole seconds: more than {@code share} only when the first such second alone has more (it
     * goes whole, else nothing could ever go), and a second that does not fit stays queued for the next round.
     */
    long[] take(int share, Predicate<Block> evictable) {
        LongList out = new LongList();
        windowLen = 0; // blocks read in an earlier round are stale
        boolean whole = policy == ReclaimPolicy.PREFIX_LRU;
        int i = head;
        while (i < n && out.size() < share) {
            long s = sec[i];
            int from = out.size();
            int j = i;
            for (; j < n && sec[j] == s && (whole || out.size() < share); j++) {
                Block b = block(j, share);
                if (b != null && policy.score(b.meta(), 0, 0) == s && evictable.test(b)) {
                    out.add(key[j]);
                }
            }
            if (whole && from > 0 && out.size() > share) {
                out.truncate(from);
                break;
            }
            head = i = j;
        }
        return out.toArray();
    }

    /** The current block of queue position {@code p}, read a chunk ahead (positions are visited in order). */
    private Block block(int p, int share) {
        if (p < windowFrom || p >= windowFrom + windowLen) {
            int len = Math.min(n - p, Math.min(READ_CHUNK, Math.max(16, share + share / 4)));
            if (window.length < len) {
                window = new Block[Math.max(len, 16)];
            }
            index.getAll(key, p, len, window);
            windowFrom = p;
            windowLen = len;
        }
        return window[p - windowFrom];
    }
}
