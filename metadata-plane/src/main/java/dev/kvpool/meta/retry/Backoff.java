package dev.kvpool.meta.retry;

import java.time.Duration;

/**
 * Exponential backoff, the one policy of the metadata plane's retry loops (the reclaimer's rounds against a store
 * that is down, the wait for the control plane at start-up, the resync while it stays unreachable): the first wait
 * is {@code initial}, each next one doubles, up to {@code max}. A loop keeps the last wait (0: none failed yet)
 * and asks for the next.
 *
 * <p>Why not SmallRye Fault Tolerance's {@code @Retry}: it is not among the dependencies that resolve here (no
 * smallrye-fault-tolerance or quarkus-smallrye-fault-tolerance artifact offline), and it retries calls on CDI beans,
 * while these loops live in plain objects the runtime builds after recovery and that decide per round what a failure
 * means (serve with the persisted configuration, keep serving the last position, log once per outage).
 */
public record Backoff(long initialMs, long maxMs) {
    public Backoff {
        if (initialMs <= 0 || maxMs < initialMs) {
            throw new IllegalArgumentException("backoff must have 0 < initial <= max, got " + initialMs + ", " + maxMs);
        }
    }

    public static Backoff of(Duration initial, Duration max) {
        return new Backoff(initial.toMillis(), max.toMillis());
    }

    /** The wait after {@code previousMs} (0: the first failure): double it, within [initial, max]. */
    public long after(long previousMs) {
        return Math.min(maxMs, Math.max(initialMs, previousMs * 2));
    }
}
