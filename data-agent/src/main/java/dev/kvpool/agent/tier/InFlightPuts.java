package dev.kvpool.agent.tier;

import java.util.HashMap;
import java.util.Map;

/**
 * The puts a tier has started and not finished, per key, so a removal that arrives while a block is on its way
 * (a write-behind queued or running) is not undone by the late write: the tier asks {@link #end} before it makes
 * the block visible. Thread-safe; holds no lock while calling out.
 */
public final class InFlightPuts {
    private final Map<Long, Integer> writing = new HashMap<>();
    /** The put stamp current when a key in flight was removed. */
    private final Map<Long, Long> removedAt = new HashMap<>();
    private long stamp;

    /** A put of these keys starts; returns its stamp for {@link #end}. */
    public synchronized long begin(long... keys) {
        for (long k : keys) {
            writing.merge(k, 1, Integer::sum);
        }
        return ++stamp;
    }

    /** A put of {@code key} stamped {@code putStamp} ended; whether the key was removed after that put began. */
    public synchronized boolean end(long key, long putStamp) {
        Long at = removedAt.get(key);
        Integer left = writing.merge(key, -1, Integer::sum);
        if (left == null || left <= 0) {
            writing.remove(key);
            removedAt.remove(key);
        }
        return at != null && at >= putStamp;
    }

    /** The key is removed: puts in flight must not bring it back. Whether one was in flight. */
    public synchronized boolean removed(long key) {
        if (!writing.containsKey(key)) {
            return false;
        }
        removedAt.put(key, stamp);
        return true;
    }
}
