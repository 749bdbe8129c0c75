package dev.kvpool.meta.index;

import java.util.Arrays;

/** An immutable read of one block: its key, replica locations (packed, see {@link Loc}) and meta word. */
public final class Block {
    private final long key;
    private final long[] locs; // a0, b0, a1, b1, ...
    private final long meta;

    public Block(long key, long[] locs, long meta) {
        this.key = key;
        this.locs = locs;
        this.meta = meta;
    }

    public long key() {
        return key;
    }

    public int size() {
        return locs.length >> 1;
    }

    public long a(int i) {
        return locs[i << 1];
    }

    public long b(int i) {
        return locs[(i << 1) + 1];
    }

    public long meta() {
        return meta;
    }

    /** This block with another access time (the replicas are shared: a Block never changes them). */
    public Block withAccessSec(int accessSec) {
        return new Block(key, locs, Loc.meta(writeSec(), accessSec, freq()));
    }

    /** LFU's logarithmic hit counter (see {@link Loc#touched}). */
    public int freq() {
        return Loc.freq(meta);
    }

    public int writeSec() {
        return Loc.writeSec(meta);
    }

    public int accessSec() {
        return Loc.accessSec(meta);
    }

    /** Index of the first replica in {@code status}, or -1. */
    public int first(int status) {
        for (int i = 0; i < size(); i++) {
            if (Loc.status(a(i)) == status) {
                return i;
            }
        }
        return -1;
    }

    public int count(int status) {
        int n = 0;
        for (int i = 0; i < size(); i++) {
            if (Loc.status(a(i)) == status) {
                n++;
            }
        }
        return n;
    }

    @Override
    public String toString() {
        return "Block{" + key + ", locs=" + Arrays.toString(locs) + '}';
    }
}
