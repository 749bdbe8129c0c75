package dev.kvpool.meta.reclaim;

import java.util.Arrays;

/** The k smallest (score, key) pairs: a max-heap on score, no boxing. */
final class TopK {
    private final int k;
    private final long[] score;
    private final long[] key;
    private int n;

    TopK(int k) {
        this.k = Math.max(0, k);
        this.score = new long[this.k];
        this.key = new long[this.k];
    }

    int size() {
        return n;
    }

    void offer(long s, long kk) {
        if (k == 0) {
            return;
        }
        if (n < k) {
            score[n] = s;
            key[n] = kk;
            up(n++);
        } else if (s < score[0]) {
            score[0] = s;
            key[0] = kk;
            down(0);
        }
    }

    long maxScore() {
        return score[0];
    }

    boolean full() {
        return k > 0 && n == k;
    }

    /** Heap sort in place: afterwards {@link #scores} and {@link #keysInOrder} ascend; no more offers. */
    int sortAscending() {
        int m = n;
        while (n > 1) {
            swap(0, --n);
            down(0);
        }
        n = m;
        return m;
    }

    long[] scores() {
        return score;
    }

    long[] keysInOrder() {
        return key;
    }

    long[] keys() {
        return Arrays.copyOf(key, n);
    }

    long[] keysBelow(long s) {
        long[] out = new long[n];
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (score[i] < s) {
                out[m++] = key[i];
            }
        }
        return Arrays.copyOf(out, m);
    }

    private void up(int i) {
        while (i > 0) {
            int p = (i - 1) >>> 1;
            if (score[p] >= score[i]) {
                break;
            }
            swap(i, p);
            i = p;
        }
    }

    private void down(int i) {
        while (true) {
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < n && score[l] > score[m]) {
                m = l;
            }
            if (r < n && score[r] > score[m]) {
                m = r;
            }
            if (m == i) {
                return;
            }
            swap(i, m);
            i = m;
        }
    }

    private void swap(int a, int b) {
        long s = score[a];
        score[a] = score[b];
        score[b] = s;
        long kk = key[a];
        key[a] = key[b];
        key[b] = kk;
    }
}
