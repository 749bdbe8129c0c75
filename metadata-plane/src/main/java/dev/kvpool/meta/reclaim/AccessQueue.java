package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import java.util.Arrays;
import java.util.function.Predicate;

/**
 * PREFIX_LRU's victims for many rounds from one pass over an instance's index: the pass keeps the oldest keys by
 * access second (every key of the seconds it keeps, all of them before the pass less a clock margin); each round
 * takes whole seconds from the front, re-reading the keys it takes. A key whose access second changed was touched
 * since (and with it its prefix): it is dropped, as is a key that left.
 *
 * <p>Why taking from the queue is as exact as a fresh pass: access seconds only grow, and a key written or touched
 * after the pass gets a second at or after the pass. So the queued keys that are still untouched are exactly the
 * oldest keys of the index now, and every cached extension of a queued key — never newer than its prefix — is
 * queued too, in the same second (taken with it) or an earlier one (taken before it).
 */
final class AccessQueue {
    /** Keys read per store call while taking. */
    private static final int READ_CHUNK = 1024;

    final InstanceIndex index;
    /** The second of the pass that built the queue. */
    final int builtSec;
    private final long[] sec;
    private final long[] key;
    private int head;

    private Block[] window = new Block[0];
    private int windowFrom, windowLen;

    private AccessQueue(InstanceIndex index, int builtSec, long[] sec, long[] key) {
        this.index = index;
        this.builtSec = builtSec;
        this.sec = sec;
        this.key = key;
    }

    /**
     * The queue of what a pass offered to {@code oldest} (access second, key). A full heap may hold only part of
     * its highest second: that second is left out, so that every queued second is complete.
     */
    static AccessQueue of(InstanceIndex index, int builtSec, Reclaimer.TopK oldest) {
        boolean full = oldest.full();
        long top = oldest.size() == 0 ? 0 : oldest.maxScore();
        int n = oldest.sortAscending();
        long[] s = oldest.scores(), k = oldest.keysInOrder();
        if (full) {
            while (n > 0 && s[n - 1] == top) {
                n--;
            }
        }
        return new AccessQueue(index, builtSec, Arrays.copyOf(s, n), Arrays.copyOf(k, n));
    }

    int remaining() {
        return sec.length - head;
    }

    /**
     * Up to {@code share} keys, whole seconds oldest first, that are unchanged since the pass and pass
     * {@code evictable}; more than {@code share} only when the first such second alone has more (it goes whole,
     * else nothing could ever go). A second that does not fit stays queued for the next round.
     */
    long[] take(int share, Predicate<Block> evictable) {
        Reclaimer.LongList out = new Reclaimer.LongList();
        windowLen = 0; // blocks read in an earlier round are stale
        int n = sec.length;
        int i = head;
        while (i < n && out.size() < share) {
            long s = sec[i];
            int from = out.size();
            int j = i;
            for (; j < n && sec[j] == s; j++) {
                Block b = block(j, share);
                if (b != null && Loc.accessSec(b.meta()) == s && evictable.test(b)) {
                    out.add(key[j]);
                }
            }
            if (from > 0 && out.size() > share) {
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
            int len = Math.min(sec.length - p, Math.min(READ_CHUNK, Math.max(16, share + share / 4)));
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
