package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.index.KeyHash;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * One shard of an instance index: an open-addressing table (linear probing, backward-shift deletion, no
 * tombstones) from a block key to its first replica (words A and B) and its meta word, in four parallel
 * primitive columns. Further replicas of the rare multi-replica key sit in a side map. Capacity grows by 1.5×
 * and maps a hash to a slot by multiply-shift, so the fill stays between ~53 % and 80 %: 32 bytes per slot,
 * 40–60 bytes per block. Not thread-safe: the owning index locks around it.
 */
final class LongTable {
    private static final float MAX_FILL = 0.8f;
    private static final int MIN_CAPACITY = 16;

    private long[] keys, as, bs, metas;
    private int capacity, size, growAt;
    /** Replicas after the first, as (a, b) pairs, for keys that have more than one. */
    private final Map<Long, long[]> extra = new HashMap<>();

    LongTable() {
        allocate(MIN_CAPACITY);
    }

    private void allocate(int cap) {
        capacity = cap;
        keys = new long[cap];
        as = new long[cap];
        bs = new long[cap];
        metas = new long[cap];
        growAt = (int) (cap * MAX_FILL);
    }

    // Word A is never 0 for a live slot (status bits are ≥ 1), so as[i] == 0 marks an empty slot and any key,
    // 0 included, can be stored without a sentinel.
    private int home(long key) {
        return (int) (((KeyHash.mix(key) & 0xFFFFFFFFL) * capacity) >>> 32);
    }

    int size() {
        return size;
    }

    int capacity() {
        return capacity;
    }

    /** Slot of the key, or -1. */
    int find(long key) {
        int i = home(key);
        while (as[i] != 0) {
            if (keys[i] == key) {
                return i;
            }
            if (++i == capacity) {
                i = 0;
            }
        }
        return -1;
    }

    long key(int slot) {
        return keys[slot];
    }

    long meta(int slot) {
        return metas[slot];
    }

    void setMeta(int slot, long meta) {
        metas[slot] = meta;
    }

    boolean live(int slot) {
        return as[slot] != 0;
    }

    /** Every replica of the block at a slot, as (a, b) pairs. */
    long[] locs(int slot) {
        long[] more = extra.isEmpty() ? null : extra.get(keys[slot]);
        if (more == null) {
            return new long[] {as[slot], bs[slot]};
        }
        long[] all = new long[2 + more.length];
        all[0] = as[slot];
        all[1] = bs[slot];
        System.arraycopy(more, 0, all, 2, more.length);
        return all;
    }

    /** Replaces all replicas of a key (an empty array removes the key). Returns +1 if added, -1 if removed. */
    int put(long key, long[] locs, long meta) {
        if (locs.length == 0) {
            return remove(key) ? -1 : 0;
        }
        if ((locs.length & 1) != 0) {
            throw new IllegalArgumentException("replicas come as (a, b) pairs: " + locs.length + " words");
        }
        for (int i = 0; i < locs.length; i += 2) {
            // word A 0 is the empty-slot marker; it would silently lose the key (first replica) or become one
            // once an earlier replica is purged
            if (locs[i] == 0) {
                throw new IllegalArgumentException("replica word A must not be 0 (key " + key + ")");
            }
        }
        int slot = claim(key);
        int delta = slot < 0 ? 1 : 0;
        slot = slot < 0 ? ~slot : slot;
        as[slot] = locs[0];
        bs[slot] = locs[1];
        metas[slot] = meta;
        if (locs.length > 2) {
            extra.put(key, Arrays.copyOfRange(locs, 2, locs.length));
        } else if (!extra.isEmpty()) {
            extra.remove(key);
        }
        return delta;
    }

    boolean remove(long key) {
        int i = find(key);
        if (i < 0) {
            return false;
        }
        if (!extra.isEmpty()) {
            extra.remove(key);
        }
        size--;
        // backward-shift: pull later members of the probe run into the hole so lookups never need tombstones
        int hole = i;
        int j = i;
        while (true) {
            if (++j == capacity) {
                j = 0;
            }
            if (as[j] == 0) {
                break;
            }
            int h = home(keys[j]);
            boolean stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
            if (!stays) {
                keys[hole] = keys[j];
                as[hole] = as[j];
                bs[hole] = bs[j];
                metas[hole] = metas[j];
                hole = j;
            }
        }
        as[hole] = 0;
        keys[hole] = 0;
        bs[hole] = 0;
        metas[hole] = 0;
        return true;
    }

    private void grow() {
        long[] ok = keys, oa = as, ob = bs, om = metas;
        int newCap = Math.max(MIN_CAPACITY, (int) Math.min(Integer.MAX_VALUE - 8, capacity * 3L / 2));
        allocate(newCap);
        for (int i = 0; i < ok.length; i++) {
            if (oa[i] != 0) {
                int s = home(ok[i]);
                while (as[s] != 0) {
                    if (++s == capacity) {
                        s = 0;
                    }
                }
                keys[s] = ok[i];
                as[s] = oa[i];
                bs[s] = ob[i];
                metas[s] = om[i];
            }
        }
    }

    /** A copy of one shard's columns, taken under the owner's lock so that a snapshot can write it unlocked. */
    record Image(int capacity, int size, long[] keys, long[] as, long[] bs, long[] metas, Map<Long, long[]> extra) {
    }

    Image image() {
        // four array copies (memcpy) under the lock: a writer of this shard waits for them, not for the disk
        return new Image(capacity, size, keys.clone(), as.clone(), bs.clone(), metas.clone(),
                extra.isEmpty() ? Map.of() : new HashMap<>(extra));
    }

    /**
     * Takes columns read back from a snapshot as this table's own. They must come from a table of the same capacity
     * and the same {@link KeyHash#mix}: slots are where {@link #home} put them, nothing is rehashed.
     */
    void install(Image img) {
        if (img.keys().length != img.capacity() || img.as().length != img.capacity()
                || img.bs().length != img.capacity() || img.metas().length != img.capacity()
                || img.size() < 0 || img.size() > img.capacity()) {
            throw new IllegalArgumentException("columns do not match capacity " + img.capacity());
        }
        keys = img.keys();
        as = img.as();
        bs = img.bs();
        metas = img.metas();
        capacity = img.capacity();
        size = img.size();
        growAt = (int) (capacity * MAX_FILL);
        extra.clear();
        extra.putAll(img.extra());
    }

    /**
     * The key's slot, found in one probe: a miss ends at the empty slot the key is then put into (key stored, size
     * counted; the caller sets word A), returned as {@code ~slot}. An unsuccessful search at 80 % fill walks ~13
     * slots; probing twice for a new key was most of a journal replay's time.
     */
    private int claim(long key) {
        int slot = home(key);
        while (as[slot] != 0 && keys[slot] != key) {
            if (++slot == capacity) {
                slot = 0;
            }
        }
        if (as[slot] != 0) {
            return slot;
        }
        if (size >= growAt) {
            grow();
            slot = home(key);
            while (as[slot] != 0) {
                if (++slot == capacity) {
                    slot = 0;
                }
            }
        }
        keys[slot] = key;
        size++;
        return ~slot;
    }

    /**
     * {@link #put} of a key with one replica, without the array (the journal replays mostly these).
     */
    int put1(long key, long a, long b, long meta) {
        if (a == 0) {
            throw new IllegalArgumentException("replica word A must not be 0 (key " + key + ")");
        }
        int slot = claim(key);
        int delta = slot < 0 ? 1 : 0;
        slot = slot < 0 ? ~slot : slot;
        as[slot] = a;
        bs[slot] = b;
        metas[slot] = meta;
        if (!extra.isEmpty()) {
            extra.remove(key);
        }
        return delta;
    }

    void clear() {
        extra.clear();
        size = 0;
        allocate(MIN_CAPACITY);
    }

    /** Approximate heap bytes held by this shard. */
    long heapBytes() {
        return 4L * 8 * capacity + extra.size() * 64L;
    }
}
