package dev.kvpool.agent.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.pool.Device;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** Read-first scheduling on one device. */
class DeviceWorkerTest {
    /** A fake device: each op takes a fixed time; records every batch and checks that batches never overlap. */
    static final class SlowDevice implements Device {
        final long nanosPerOp;
        final AtomicInteger concurrent = new AtomicInteger();
        volatile int maxConcurrent;
        final List<String> log = Collections.synchronizedList(new ArrayList<>());

        SlowDevice(long nanosPerOp) {
            this.nanosPerOp = nanosPerOp;
        }

        @Override
        public String id() {
            return "slow";
        }

        @Override
        public long slotCount() {
            return 1 << 20;
        }

        @Override
        public int slotBytes() {
            return 4096;
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            int c = concurrent.incrementAndGet();
            maxConcurrent = Math.max(maxConcurrent, c);
            for (long s : slots) {
                log.add((write ? "W" : "R") + s);
            }
            LockSupport.parkNanos(nanosPerOp * slots.length);
            concurrent.decrementAndGet();
            boolean[] ok = new boolean[slots.length];
            java.util.Arrays.fill(ok, true);
            return ok;
        }
    }

    @Test
    void aReadNeverWaitsBehindQueuedWrites() throws Exception {
        SlowDevice dev = new SlowDevice(2_000_000); // 2 ms per op
        // chunks of 2 ops, high water far away, no guard: writes drain whenever reads are idle
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 2, 1_000_000, 0, 64)) {
            MemorySegment buf = a.allocate(4096, 4096);
            List<CompletableFuture<boolean[]>> writes = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                writes.add(w.writeDeferred(new long[] {1000 + i}, new MemorySegment[] {buf}));
            }
            Thread.sleep(5); // the worker is now inside some write chunk
            long t0 = System.nanoTime();
            CompletableFuture<boolean[]> read = w.read(new long[] {1, 2, 3}, new MemorySegment[] {buf, buf, buf});
            read.join();
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            int readAt = dev.log.indexOf("R1");
            int writesBefore = (int) dev.log.subList(0, readAt).stream().filter(s -> s.startsWith("W")).count();
            // the read waited for at most the chunk in progress (2 ops), not for the ~47 writes queued before it
            assertTrue(writesBefore <= 2 + 2 * 2, "writes executed before the read: " + writesBefore + " " + dev.log);
            assertTrue(waitedMs < 40, "read waited " + waitedMs + " ms");
            CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
            assertEquals(1, dev.maxConcurrent, "a read and a write ran on the device at the same time");
            assertEquals(50, w.writeOps());
        }
    }

    @Test
    void deferredWritesWaitForTheIdleWindow() throws Exception {
        SlowDevice dev = new SlowDevice(100_000);
        // a 50 ms guard: writes must not start while reads keep arriving every ~5 ms
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 4, 1_000_000, 50_000_000L, 64)) {
            MemorySegment buf = a.allocate(4096, 4096);
            w.read(new long[] {0}, new MemorySegment[] {buf}).join();
            CompletableFuture<boolean[]> wr = w.writeDeferred(new long[] {7}, new MemorySegment[] {buf});
            for (int i = 0; i < 6; i++) {
                Thread.sleep(5);
                w.read(new long[] {i}, new MemorySegment[] {buf}).join();
                assertTrue(!wr.isDone(), "write ran inside a read burst");
            }
            wr.join(); // drains once the reads stop
            assertTrue(dev.log.indexOf("W7") > dev.log.lastIndexOf("R5"));
        }
    }

    @Test
    void highWaterForcesDrainDuringReadBursts() throws Exception {
        SlowDevice dev = new SlowDevice(10_000);
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 4, 8, 1_000_000_000L, 64)) {
            MemorySegment buf = a.allocate(4096, 4096);
            w.read(new long[] {0}, new MemorySegment[] {buf}).join();
            List<CompletableFuture<boolean[]>> writes = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                writes.add(w.writeDeferred(new long[] {i}, new MemorySegment[] {buf}));
            }
            writes.get(0).join(); // backlog above 8: drained although the guard (1 s) has not passed
            assertTrue(w.forcedDrains() > 0);
        }
    }

    @Test
    void urgentWritesGoRightAfterReads() throws Exception {
        SlowDevice dev = new SlowDevice(1_000_000);
        try (Arena a = Arena.ofShared(); DeviceWorker w = new DeviceWorker(dev, 1, 1_000_000, 1_000_000_000L, 64)) {
            MemorySegment buf = a.allocate(4096, 4096);
            w.read(new long[] {0}, new MemorySegment[] {buf}).join();
            long t0 = System.nanoTime();
            w.writeNow(new long[] {5}, new MemorySegment[] {buf}).join(); // not held for the 1 s idle guard
            assertTrue((System.nanoTime() - t0) < 500_000_000L);
        }
    }

    @Test
    void idleEstimatorLearnsGaps() {
        IdleWindowEstimator e = new IdleWindowEstimator(100_000);
        long t = 0;
        for (int i = 0; i < 20; i++) {
            e.readArrived(t);
            t += 1_000_000;
            e.readEnded(t);
            t += 10_000_000; // 10 ms gaps
        }
        assertTrue(Math.abs(e.gapNanos() - 10_000_000) < 1_000_000, "gap " + e.gapNanos());
        e.writeChunkTook(3_000_000);
        // right after a burst: inside the guard
        assertTrue(e.waitBeforeWrite(t - 10_000_000 + 50_000) > 0);
        // 1 ms into a predicted 10 ms window with ~0.8 ms chunks: go
        assertEquals(0, e.waitBeforeWrite(t - 10_000_000 + 1_000_000));
    }
}
