package dev.kvpool.agent.sched;

/**
 * Online estimate of the idle windows between read bursts on one device (no offline profile): an EWMA of the gap
 * between the end of one read burst and the arrival of the next, and an EWMA of how long one write chunk takes.
 * A deferred write chunk may start when the device has been quiet for a short guard time and the predicted rest
 * of the window still fits a chunk, or when the window has outlived its prediction (the reads have stopped).
 * Not thread-safe: only the device worker touches it.
 */
public final class IdleWindowEstimator {
    private static final double ALPHA = 0.2;
    private final long guardNanos;
    private double gapNanos = -1;       // EWMA of idle gaps between read bursts; -1 until one is seen
    private double writeNanos = 200_000; // EWMA of one write chunk's service time
    private long lastReadEnd = Long.MIN_VALUE;

    public IdleWindowEstimator(long guardNanos) {
        this.guardNanos = guardNanos;
    }

    /** A read burst arrives (the device was idle since the last one ended). */
    public void readArrived(long now) {
        if (lastReadEnd != Long.MIN_VALUE) {
            double gap = now - lastReadEnd;
            gapNanos = gapNanos < 0 ? gap : (1 - ALPHA) * gapNanos + ALPHA * gap;
        }
    }

    public void readEnded(long now) {
        lastReadEnd = now;
    }

    public void writeChunkTook(long nanos) {
        writeNanos = (1 - ALPHA) * writeNanos + ALPHA * nanos;
    }

    /** Nanoseconds until a write chunk may start (0 = now). */
    public long waitBeforeWrite(long now) {
        if (lastReadEnd == Long.MIN_VALUE) {
            return 0; // no read ever: the device is idle
        }
        long quiet = now - lastReadEnd;
        if (quiet < guardNanos) {
            return guardNanos - quiet;
        }
        if (gapNanos < 0 || quiet >= gapNanos) {
            return 0; // no estimate yet, or the window is already longer than predicted
        }
        double left = gapNanos - quiet;
        if (left >= writeNanos) {
            return 0; // the predicted rest of the window fits a chunk
        }
        return (long) left; // the next read is predicted before a chunk could finish: wait past it
    }

    public double gapNanos() {
        return gapNanos;
    }

    public double writeNanos() {
        return writeNanos;
    }
}
