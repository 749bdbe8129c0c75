package dev.kvpool.meta.engine.report;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One reporter's write gate (kvcm-engine-events.md §4.6): deltas are admitted together; a snapshot closes the gate,
 * waits for the admitted deltas to drain, writes, and reopens it. Deltas that arrive meanwhile wait. Both waits are
 * bounded (snapshot_delta_drain_timeout_ms); a second snapshot while one runs is refused at once, not queued.
 */
public final class ReporterGate {
    public enum SnapshotEntry { ADMITTED, BUSY, DRAIN_TIMEOUT }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private boolean snapshot;
    private int deltas;

    /** True when admitted (call {@link #endDelta}); false when a snapshot held the gate past the bound. */
    public boolean beginDelta(long timeoutMs) throws InterruptedException {
        lock.lock();
        try {
            long left = TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMs));
            while (snapshot) {
                if (left <= 0) {
                    return false;
                }
                left = changed.awaitNanos(left);
            }
            deltas++;
            return true;
        } finally {
            lock.unlock();
        }
    }

    public void endDelta() {
        lock.lock();
        try {
            deltas--;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** ADMITTED: call {@link #endSnapshot}; otherwise the gate is as before and the snapshot must not write. */
    public SnapshotEntry beginSnapshot(long timeoutMs) throws InterruptedException {
        lock.lock();
        try {
            if (snapshot) {
                return SnapshotEntry.BUSY;
            }
            snapshot = true; // closed: new deltas wait from here on
            long left = TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMs));
            while (deltas > 0) {
                if (left <= 0) {
                    snapshot = false;
                    changed.signalAll();
                    return SnapshotEntry.DRAIN_TIMEOUT;
                }
                left = changed.awaitNanos(left);
            }
            return SnapshotEntry.ADMITTED;
        } catch (InterruptedException e) {
            snapshot = false;
            changed.signalAll();
            throw e;
        } finally {
            lock.unlock();
        }
    }

    public void endSnapshot() {
        lock.lock();
        try {
            snapshot = false;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** For tests and metrics: deltas admitted now, and whether a snapshot holds the gate. */
    public int admittedDeltas() {
        lock.lock();
        try {
            return deltas;
        } finally {
            lock.unlock();
        }
    }

    public boolean snapshotRunning() {
        lock.lock();
        try {
            return snapshot;
        } finally {
            lock.unlock();
        }
    }
}
