package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.Block;
import java.util.concurrent.locks.StampedLock;

/**
 * The local copy's map of block key → SERVING locations, for one writer (the follower) and any number of readers.
 *
 * <p>Why not a {@code ConcurrentHashMap<Long, Block>}: that keeps four long-lived objects per block (node, boxed key,
 * block, location array), which every young collection copies until they are promoted; with the copy on, the
 * plane's GC time during a write load tripled. Here a block with one location (nearly all) is three array slots in
 * a table of primitive arrays, and one with more keeps an extra {@code long[]}. Readers take no lock: each key is
 * read under a {@link StampedLock} optimistic stamp and read again when the writer changed the table meanwhile
 * (after a few tries under the read lock, which the writer holds only per field), so a reader never sees half of
 * an update.
 */
final class ServedMap {
    private static final byte FREE = 0, FULL = 1, GONE = 2;
    private static final int READ_TRIES = 4;

    private final StampedLock lock = new StampedLock();
    private Table t;
    private int size;

    private static final class Table {
        final long[] keys, a, b;
        final Object[] more; // long[] of every location (a, b pairs) when a block has more than one, else null
        final byte[] state;
        final int mask;
        int used; // FULL + GONE: what probing walks over

        Table(int capacity) {
            keys = new long[capacity];
            a = new long[capacity];
            b = new long[capacity];
            more = new Object[capacity];
            state = new byte[capacity];
            mask = capacity - 1;
        }
    }

    ServedMap() {
        this(16);
    }

    ServedMap(int expected) {
        t = new Table(capacityFor(expected));
    }

    private static int capacityFor(int n) {
        int c = 16;
        while (c < (long) n * 2 && c < (1 << 30)) {
            c <<= 1;
        }
        return c;
    }

    /** Where a key's probe starts in a table of {@code mask + 1} slots ({@link RedisMirror.OwnEntry} too). */
    static int slot(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    int size() {
        long st = lock.tryOptimisticRead();
        int n = size;
        if (lock.validate(st)) {
            return n;
        }
        st = lock.readLock();
        try {
            return size;
        } finally {
            lock.unlockRead(st);
        }
    }

    /** Fills {@code out[i]} for {@code keys[off + i]} (null: none served). Blocks are made here, for the caller. */
    void getAll(long[] keys, int off, int len, Block[] out) {
        for (int i = 0; i < len; i++) {
            out[i] = get(keys[off + i]);
        }
    }

    /** The block's served locations, or null. Each key is read consistently on its own, as from a concurrent map. */
    Block get(long key) {
        for (int attempt = 0; attempt < READ_TRIES; attempt++) {
            long st = lock.tryOptimisticRead();
            if (st != 0) {
                Block got = find(t, key);
                if (lock.validate(st)) {
                    return got;
                }
            }
            Thread.onSpinWait();
        }
        long st = lock.readLock(); // the writer holds the lock per field: a short wait
        try {
            return find(t, key);
        } finally {
            lock.unlockRead(st);
        }
    }

    /** Probes {@code tb}; under an optimistic stamp what it reads may be torn, which validation then rejects. */
    private static Block find(Table tb, long key) {
        int s = slot(key, tb.mask);
        for (int probes = 0; probes <= tb.mask; probes++) {
            byte state = tb.state[s];
            if (state == FREE) {
                return null;
            }
            if (state == FULL && tb.keys[s] == key) {
                Object m = tb.more[s];
                long a = tb.a[s], b = tb.b[s];
                return new Block(key, m != null ? (long[]) m : new long[] {a, b}, 0);
            }
            s = (s + 1) & tb.mask;
        }
        return null;
    }

    /** The block's served locations ({@code locs}: a, b pairs, at least one), replacing any. Writer only. */
    void put(long key, long[] locs) {
        long st = lock.writeLock();
        try {
            Table tb = t;
            if ((tb.used + 1) * 4L > (tb.mask + 1) * 3L) {
                tb = rehash(size + 1);
            }
            int s = slot(key, tb.mask), reuse = -1;
            for (int probes = 0; probes <= tb.mask; probes++) {
                byte state = tb.state[s];
                if (state == FREE) {
                    break;
                }
                if (state == FULL && tb.keys[s] == key) {
                    set(tb, s, locs);
                    return;
                }
                if (state == GONE && reuse < 0) {
                    reuse = s;
                }
                s = (s + 1) & tb.mask;
            }
            if (reuse >= 0) {
                s = reuse;
            } else {
                tb.used++;
            }
            tb.keys[s] = key;
            set(tb, s, locs);
            tb.state[s] = FULL;
            size++;
        } finally {
            lock.unlockWrite(st);
        }
    }

    private static void set(Table tb, int s, long[] locs) {
        if (locs.length == 2) {
            tb.a[s] = locs[0];
            tb.b[s] = locs[1];
            tb.more[s] = null;
        } else {
            tb.more[s] = locs;
        }
    }

    /** Forgets the block. Writer only. */
    void remove(long key) {
        long st = lock.writeLock();
        try {
            Table tb = t;
            int s = slot(key, tb.mask);
            for (int probes = 0; probes <= tb.mask; probes++) {
                byte state = tb.state[s];
                if (state == FREE) {
                    return;
                }
                if (state == FULL && tb.keys[s] == key) {
                    tb.state[s] = GONE;
                    tb.more[s] = null;
                    size--;
                    return;
                }
                s = (s + 1) & tb.mask;
            }
        } finally {
            lock.unlockWrite(st);
        }
    }

    /** Forgets every block. Writer only. */
    void clear() {
        long st = lock.writeLock();
        try {
            t = new Table(16);
            size = 0;
        } finally {
            lock.unlockWrite(st);
        }
    }

    /** A table sized for {@code n} blocks holding the live ones (tombstones dropped); called under the write lock. */
    private Table rehash(int n) {
        Table old = t, tb = new Table(capacityFor(Math.max(n, 16)));
        for (int s = 0; s <= old.mask; s++) {
            if (old.state[s] != FULL) {
                continue;
            }
            int d = slot(old.keys[s], tb.mask);
            while (tb.state[d] != FREE) {
                d = (d + 1) & tb.mask;
            }
            tb.keys[d] = old.keys[s];
            tb.a[d] = old.a[s];
            tb.b[d] = old.b[s];
            tb.more[d] = old.more[s];
            tb.state[d] = FULL;
            tb.used++;
        }
        t = tb;
        return tb;
    }
}
