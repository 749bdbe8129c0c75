package dev.kvpool.agent.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.testing.Await;
import dev.kvpool.testing.MutableClock;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What a worker tells the liveness check: how long due work waits without progress, and whether it still runs. */
class DeviceWorkerHealthTest {
    /** A device whose I/O blocks until released: a disk that stopped answering. */
    static final class StuckDevice extends DeviceWorkerTest.SlowDevice {
        final CountDownLatch release = new CountDownLatch(1);

        StuckDevice() {
            super(0);
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return super.io(write, slots, bufs);
        }
    }

    static MutableClock clock() {
        return new MutableClock(Instant.parse("2026-11-28T06:00:00Z"));
    }

    @Test
    void dueWorkWithoutProgressCountsUpAndProgressResetsIt() throws Exception {
        StuckDevice dev = new StuckDevice();
        MutableClock clock = clock();
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 4, 4096, 0, 64, clock)) {
            MemorySegment buf = a.allocate(4096, 4096);
            clock.advance(Duration.ofMinutes(5)); // idle for a while: an idle worker is never stalled, however long
            assertEquals(0, w.health().stalledNanos());
            CompletableFuture<boolean[]> r1 = w.read(new long[] {1}, new MemorySegment[] {buf});
            Await.until("r1 on the device", Duration.ofSeconds(10), () -> w.health().onDevice() == 1);
            CompletableFuture<boolean[]> r2 = w.read(new long[] {2}, new MemorySegment[] {buf}); // queued behind r1
            clock.advance(300);
            DeviceWorker.Health h = w.health();
            // the wait counts from when the work arrived, not from the last progress before the idle time
            assertEquals(300_000_000L, h.stalledNanos(), h.toString());
            assertTrue(h.alive());
            assertEquals(1, h.onDevice(), h.toString());
            assertEquals(1, h.queuedReads(), h.toString()); // r2 waits behind the stuck batch
            dev.release.countDown();
            r1.join();
            r2.join();
            assertEquals(0, w.health().stalledNanos());
            clock.advance(Duration.ofHours(1));
            assertEquals(0, w.health().stalledNanos(), "idle again: not stalled, however long");
        }
    }

    @Test
    void deferredWritesWaitingForAnIdleWindowAreNotAStall() throws Exception {
        DeviceWorkerTest.SlowDevice dev = new DeviceWorkerTest.SlowDevice(0);
        // a guard of 10 s (real time): a deferred write waits for its idle window that long after a read, by design
        MutableClock clock = clock();
        try (Arena a = Arena.ofShared();
             DeviceWorker w = new DeviceWorker(dev, 4, 4096, 10_000_000_000L, 64, clock)) {
            MemorySegment buf = a.allocate(4096, 4096);
            w.read(new long[] {1}, new MemorySegment[] {buf}).join();
            w.writeDeferred(new long[] {2}, new MemorySegment[] {buf});
            clock.advance(Duration.ofMinutes(5)); // the deferred write keeps waiting for its idle window, and must
            assertEquals(1, w.pendingDeferredOps());
            assertEquals(0, w.health().stalledNanos());
        }
    }

    @Test
    void aWorkerThreadThatEndedIsNotAlive() throws Exception {
        DeviceWorkerTest.SlowDevice dev = new DeviceWorkerTest.SlowDevice(0);
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 4, 4096, 0, 64)) {
            MemorySegment buf = a.allocate(4096, 4096);
            w.observer((write, ops, t0, t1) -> {
                throw new IllegalStateException("observer broke");
            });
            w.read(new long[] {1}, new MemorySegment[] {buf});
            Await.within(Duration.ofSeconds(5), () -> !w.health().alive());
            DeviceWorker.Health h = w.health();
            assertFalse(h.alive());
            assertTrue(String.valueOf(h.died()).contains("observer broke"), h.toString());
        }
    }
}
