package dev.kvpool.agent.pool;

/**
 * A tier's index: block key → the slot holding it (a tier-wide slot number), with least-recently-used order, in
 * primitive arrays sized by the tier's slots. No object per block: a boxed map cost ~110 bytes and three objects
 * per block (gigabytes of heap, and long GC pauses, for a few TiB of NVMe); this costs ~37 bytes per slot, allocated
 * once. Per slot: key, CRC32C, the parent hash (for events), and the LRU list's links; keys are found through an open-addressing table of slot
 * numbers (linear probing, backward-shift deletion, at most 75 % full since a tier never holds more blocks than
 * slots). Not thread-safe: the tier locks around it.
 */
final class SlotIndex {
    private static final int NONE = -1;

    private final long[] keys;
    private final int[] crcs;
    /** The block hash before each block, where it was saved with one ({@link #hasParent}). */
    private final long[] parents;
    private final java.util.BitSet hasParent;
    private final int[] older, newer;
    /** Slot number + 1 per table position; 0 = empty. */
    private final int[] table;
    private final int mask;
    private int lru = NONE, mru = NONE, size;

    SlotIndex(int slots) {
        keys = new long[slots];
        crcs = new int[slots];
        parents = new long[slots];
        hasParent = new java.util.BitSet(slots);
        older = new int[slots];
        newer = new int[slots];
        int cap = Integer.highestOneBit(Math.max(4, (int) Math.min(1 << 30, slots + (long) slots / 3 + 1)) * 2 - 1);
        table = new int[cap];
        mask = cap - 1;
    }

    private int home(long key) {
        return home(key, mask);
    }

    /** A key's first position in an open-addressing table of {@code mask + 1} (a power of two) places. */
    static int home(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    int size() {
        return size;
    }

    /** The slot holding {@code key}, or -1. */
    int find(long key) {
        for (int i = home(key); ; i = (i + 1) & mask) {
            int t = table[i];
            if (t == 0) {
                return NONE;
            }
            if (keys[t - 1] == key) {
                return t - 1;
            }
        }
    }

    /** Adds {@code key} in slot {@code s} as the most recently used; the key must be absent and the slot free. */
    void add(long key, int s, int crc) {
        add(key, s, crc, null);
    }

    /** As {@link #add(long, int, int)}, with the block hash before this block (null: unknown). */
    void add(long key, int s, int crc, Long parent) {
        add(key, s, crc, parent != null, parent == null ? 0 : parent);
    }

    /** As {@link #add(long, int, int, Long)} without a box per block (start-up adds millions). */
    void add(long key, int s, int crc, boolean withParent, long parent) {
        int i = home(key);
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = s + 1;
        keys[s] = key;
        crcs[s] = crc;
        parents[s] = withParent ? parent : 0;
        hasParent.set(s, withParent);
        link(s);
        size++;
    }

    /** Removes the block in slot {@code s} (which must be in the index). */
    void remove(int s) {
        int i = home(keys[s]);
        while (table[i] != s + 1) {
            i = (i + 1) & mask;
        }
        // backward shift: pull later entries of the probe run into the hole, so no tombstones build up
        for (int j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
            int h = home(keys[table[j] - 1]);
            boolean movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
            if (movable) {
                table[i] = table[j];
                i = j;
            }
        }
        table[i] = 0;
        unlink(s);
        size--;
    }

    /** Marks the block in slot {@code s} as the most recently used. */
    void touch(int s) {
        if (mru != s) {
            unlink(s);
            link(s);
        }
    }

    long key(int s) {
        return keys[s];
    }

    int crc(int s) {
        return crcs[s];
    }

    /** The block hash before the block in slot {@code s}, or null when it was saved without one. */
    Long parent(int s) {
        return hasParent.get(s) ? parents[s] : null;
    }

    /** The least recently used block's slot, or -1 when empty. */
    int leastRecent() {
        return lru;
    }

    /** The slot of the next more recently used block after the one in {@code s}, or -1. */
    int moreRecent(int s) {
        return newer[s];
    }

    private void link(int s) {
        older[s] = mru;
        newer[s] = NONE;
        if (mru != NONE) {
            newer[mru] = s;
        } else {
            lru = s;
        }
        mru = s;
    }

    private void unlink(int s) {
        int o = older[s], n = newer[s];
        if (o != NONE) {
            newer[o] = n;
        } else {
            lru = n;
        }
        if (n != NONE) {
            older[n] = o;
        } else {
            mru = o;
        }
    }
}
