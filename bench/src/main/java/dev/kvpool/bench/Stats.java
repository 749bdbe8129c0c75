package dev.kvpool.bench;

import java.util.Arrays;

/** Latency samples in nanoseconds. */
final class Stats {
    private long[] v = new long[1024];
    private int n;

    void add(long nanos) {
        if (n == v.length) {
            v = Arrays.copyOf(v, n * 2);
        }
        v[n++] = nanos;
    }

    int count() {
        return n;
    }

    double pctMicros(double p) {
        if (n == 0) {
            return Double.NaN;
        }
        long[] s = Arrays.copyOf(v, n);
        Arrays.sort(s);
        return s[(int) Math.min(n - 1, Math.floor(p / 100.0 * n))] / 1000.0;
    }

    double totalSeconds() {
        long t = 0;
        for (int i = 0; i < n; i++) {
            t += v[i];
        }
        return t / 1e9;
    }

    String line(String name) {
        return String.format("%-22s n=%-7d p50=%9.1f us  p99=%9.1f us  %9.0f calls/s", name, n, pctMicros(50),
                pctMicros(99), n / Math.max(1e-9, totalSeconds()));
    }
}
