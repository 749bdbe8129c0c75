package dev.kvpool.api.time;

import java.time.Instant;
import java.time.InstantSource;

/**
 * Elapsed time for code that measures intervals (log rate limits, stall detection) and takes an
 * {@link InstantSource} so that a test moves time instead of sleeping through it. Production passes {@link #SOURCE}:
 * {@link System#nanoTime()}, which a wall-clock step (NTP, an operator) cannot move, as the code read it before the
 * source was injected. Its instants are only good for differences, not as dates.
 */
public final class Monotonic {
    /** {@link System#nanoTime()} as an instant after the epoch (or before it: nanoTime may be negative). */
    public static final InstantSource SOURCE = new InstantSource() {
        @Override
        public Instant instant() {
            return Instant.ofEpochSecond(0, System.nanoTime());
        }

        @Override
        public String toString() {
            return "Monotonic.SOURCE";
        }
    };

    private Monotonic() {
    }

    /**
     * The nanoseconds of {@code source}, for differences. {@link #SOURCE} is read without making an instant: hot
     * paths (a device worker's completions) pay one nanoTime as before. Exact for any instant within ±292 years of
     * the epoch; a source outside that fails here rather than wrapping.
     */
    public static long nanos(InstantSource source) {
        if (source == SOURCE) {
            return System.nanoTime();
        }
        Instant i = source.instant();
        return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000_000L), i.getNano());
    }
}
