package dev.kvpool.meta.engine.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The per-reporter write gate (§4.6): drain, wait, refuse, and the bounds on both waits. */
class ReporterGateTest {

    @Test
    void aSecondSnapshotIsRefusedNotQueued() throws Exception {
        ReporterGate g = new ReporterGate();
        assertEquals(ReporterGate.SnapshotEntry.ADMITTED, g.beginSnapshot(1_000));
        assertEquals(ReporterGate.SnapshotEntry.BUSY, g.beginSnapshot(1_000));
        g.endSnapshot();
        assertEquals(ReporterGate.SnapshotEntry.ADMITTED, g.beginSnapshot(1_000));
        g.endSnapshot();
    }

    @Test
    void aSnapshotWaitsForAdmittedDeltasToDrain() throws Exception {
        ReporterGate g = new ReporterGate();
        assertTrue(g.beginDelta(0));
        CompletableFuture<ReporterGate.SnapshotEntry> snap = CompletableFuture.supplyAsync(() -> {
            try {
                return g.beginSnapshot(10_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!g.snapshotRunning() && System.nanoTime() < end) {
            Thread.onSpinWait();
        }
        assertTrue(g.snapshotRunning(), "the snapshot closed the gate");
        assertFalse(snap.isDone(), "it waits for the admitted delta");
        assertFalse(g.beginDelta(0), "a new delta is not admitted while the snapshot holds the gate");
        g.endDelta();
        assertEquals(ReporterGate.SnapshotEntry.ADMITTED, snap.get(10, TimeUnit.SECONDS));
        // a delta that waits gets in once the snapshot ends
        CompletableFuture<Boolean> delta = CompletableFuture.supplyAsync(() -> {
            try {
                return g.beginDelta(10_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        g.endSnapshot();
        assertTrue(delta.get(10, TimeUnit.SECONDS));
        assertEquals(1, g.admittedDeltas());
        g.endDelta();
    }

    @Test
    void drainTimeoutAbortsTheSnapshotAndReopens() throws Exception {
        ReporterGate g = new ReporterGate();
        assertTrue(g.beginDelta(0));
        assertEquals(ReporterGate.SnapshotEntry.DRAIN_TIMEOUT, g.beginSnapshot(50));
        assertFalse(g.snapshotRunning(), "the gate reopened");
        assertTrue(g.beginDelta(0), "deltas flow again");
        assertEquals(2, g.admittedDeltas());
    }
}
