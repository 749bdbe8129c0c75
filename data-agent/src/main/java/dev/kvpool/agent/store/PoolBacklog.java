package dev.kvpool.agent.store;

import java.util.BitSet;

/**
 * Saved blocks whose global-pool copy could not be written because the metadata plane was out of reach (down,
 * restarting, timing out): their keys and parents, oldest first. Bounded by {@code capacity}, the local tiers'
 * slots (a block beyond that has left the local tiers and cannot be written anyway); when full the oldest entry
 * goes and is counted. Arrays grow with use, 16 bytes and a bit per entry. Thread-safe.
 */
final class PoolBacklog {
    private final int capacity;
    private long[] keys = new long[0];
    private long[] parents = new long[0];
    private BitSet hasParent = new BitSet();
    private int head;
    private int size;
    private int out; // taken by the writer, not yet written, given up or put back
    private long dropped;

    PoolBacklog(int capacity) {
        this.capacity = Math.max(1, capacity);
    }

    /** Appends blocks (parents null or per key, null entries where unknown). */
    synchronized void add(long[] k, Long[] p) {
        for (int i = 0; i < k.length; i++) {
            if (size == capacity) {
                head = (head + 1) % keys.length;
                size--;
                dropped++;
            }
            grow();
            set((head + size) % keys.length, k[i], p == null ? null : p[i]);
            size++;
        }
        notifyAll();
    }

    /** Takes up to {@code k.length} of the oldest blocks; returns how many. */
    synchronized int take(long[] k, Long[] p) {
        int n = Math.min(k.length, size);
        for (int i = 0; i < n; i++) {
            int at = (head + i) % keys.length;
            k[i] = keys[at];
            p[i] = hasParent.get(at) ? parents[at] : null;
        }
        head = n == 0 ? head : (head + n) % keys.length;
        size -= n;
        out += n;
        return n;
    }

    /** {@code n} taken blocks are done with (written, or no longer owed). */
    synchronized void settled(int n) {
        out -= n;
    }

    /**
     * Of {@code taken} blocks, puts the first {@code n} of {@code k} back in front, in their order (their write
     * failed again; the others are no longer owed), in one step so {@link #owed} never counts one twice.
     */
    synchronized void putBack(long[] k, Long[] p, int n, int taken) {
        out -= taken;
        for (int i = n - 1; i >= 0; i--) {
            if (size == capacity) { // newer saves filled it meanwhile: these are the oldest
                dropped += i + 1;
                return;
            }
            grow();
            head = (head - 1 + keys.length) % keys.length;
            set(head, k[i], p[i]);
            size++;
        }
    }

    /** Waits up to {@code millis} for an entry. */
    synchronized void awaitEntries(long millis) throws InterruptedException {
        if (size == 0) {
            wait(millis);
        }
    }

    /** Waiting, plus taken by the writer and not settled. */
    synchronized int owed() {
        return size + out;
    }

    synchronized int size() {
        return size;
    }

    synchronized long dropped() {
        return dropped;
    }

    private void set(int at, long key, Long parent) {
        keys[at] = key;
        if (parent != null) {
            parents[at] = parent;
            hasParent.set(at);
        } else {
            hasParent.clear(at);
        }
    }

    private void grow() {
        if (size < keys.length) {
            return;
        }
        int n = (int) Math.min(capacity, Math.max(1024, 2L * keys.length));
        long[] k = new long[n], p = new long[n];
        BitSet b = new BitSet(n);
        for (int i = 0; i < size; i++) {
            int at = (head + i) % keys.length;
            k[i] = keys[at];
            p[i] = parents[at];
            b.set(i, hasParent.get(at));
        }
        keys = k;
        parents = p;
        hasParent = b;
        head = 0;
    }
}
