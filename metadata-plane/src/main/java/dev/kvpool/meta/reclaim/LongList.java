package dev.kvpool.meta.reclaim;

import java.util.Arrays;

/** A growable list of longs, no boxing. */
final class LongList {
    private long[] v = new long[16];
    private int n;

    void add(long x) {
        if (n == v.length) {
            v = Arrays.copyOf(v, n * 2);
        }
        v[n++] = x;
    }

    int size() {
        return n;
    }

    void truncate(int size) {
        n = Math.min(n, size);
    }

    void clear() {
        n = 0;
    }

    long[] toArray() {
        return Arrays.copyOf(v, n);
    }
}
