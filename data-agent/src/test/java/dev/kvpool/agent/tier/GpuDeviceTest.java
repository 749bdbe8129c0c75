package dev.kvpool.agent.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.api.SharedMemory;
import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.store.AgentSetup;
import dev.kvpool.agent.store.BlockStore;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** G1 through JCuda: runs only where a CUDA device exists (skipped on the build machines). */
class GpuDeviceTest {
    static final int BLOCK = 2 << 20;

    @BeforeEach
    void needsCuda() {
        assumeTrue(GpuDevice.deviceCount() > 0, "no CUDA device here (JCuda natives, driver or GPU missing): GPU tests skipped");
    }

    @Test
    void hostToGpuAndBackByteForByte() {
        try (Arena a = Arena.ofShared();
             PooledTier gpu = PooledTier.of("gpu", BlockEvent.GPU, BLOCK, List.of(new GpuDevice("gpu0", 0, 64, BLOCK)),
                     new double[] {1})) {
            MemorySegment[] src = TestBlocks.random(a, 32, BLOCK, 1);
            long[] keys = TestBlocks.keys(1, 32);
            for (boolean b : gpu.put(keys, src, false).join()) {
                assertTrue(b);
            }
            MemorySegment[] dst = TestBlocks.empty(a, 32, BLOCK);
            long t0 = System.nanoTime();
            boolean[] hit = gpu.get(keys, dst).join();
            double gbs = 32.0 * BLOCK / ((System.nanoTime() - t0) / 1e9) / 1e9;
            for (int i = 0; i < 32; i++) {
                assertTrue(hit[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            System.out.printf("[GpuDeviceTest] PooledTier D2H %.1f GB/s (pageable host buffers: staged, CRC32C checked)%n", gbs);
        }
    }

    /**
     * Pinned buffers go straight to the copy engines, pageable ones through the staging halves; both byte for byte,
     * with partial blocks, scattered slots and more ops than one staging half holds (so the halves alternate).
     */
    @Test
    void pinnedDirectAndPageableStagedAgree() {
        int slotBytes = 256 << 10;
        int n = 3 * (int) (GpuDevice.STAGE_HALF / slotBytes) + 5; // > 2 halves: both reuse paths run
        Random r = new Random(7);
        try (Arena a = Arena.ofShared(); GpuDevice dev = new GpuDevice("gpu0", 0, 2L * n, slotBytes)) {
            long[] slots = new long[n];
            MemorySegment[] src = new MemorySegment[n];
            for (int i = 0; i < n; i++) {
                slots[i] = (i * 7L) % (2L * n); // scattered, distinct (7 is coprime with 2n for these n)
                int len = (1 + r.nextInt(slotBytes / 4096)) * 4096;
                src[i] = TestBlocks.random(a, 1, len, i)[0];
            }
            // pageable → GPU (staged), GPU → pinned (direct)
            assertAll(dev.io(true, slots, src));
            MemorySegment pinnedRegion = a.allocate((long) n * slotBytes, 4096);
            assertTrue(GpuDevice.pin(pinnedRegion));
            try {
                MemorySegment[] pinnedDst = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    pinnedDst[i] = pinnedRegion.asSlice((long) i * slotBytes, src[i].byteSize());
                }
                long[] before = dev.opCounts();
                assertAll(dev.io(false, slots, pinnedDst));
                assertEquals(before[0] + n, dev.opCounts()[0], "pinned buffers are copied directly");
                for (int i = 0; i < n; i++) {
                    assertEquals(-1, pinnedDst[i].mismatch(src[i]), "block " + i);
                }
                // pinned → GPU (direct) at other slots, GPU → pageable (staged)
                long[] other = new long[n];
                for (int i = 0; i < n; i++) {
                    other[i] = (slots[i] + 1) % (2L * n);
                }
                long[] shifted = new long[n];
                for (int i = 0; i < n; i++) {
                    shifted[i] = other[(i + 1) % n];
                }
                assertAll(dev.io(true, shifted, pinnedDst));
                MemorySegment[] back = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    back[i] = a.allocate(src[i].byteSize(), 4096);
                }
                before = dev.opCounts();
                assertAll(dev.io(false, shifted, back));
                assertEquals(before[1] + n, dev.opCounts()[1], "pageable buffers are staged");
                for (int i = 0; i < n; i++) {
                    assertEquals(-1, back[i].mismatch(src[i]), "block " + i);
                }
            } finally {
                GpuDevice.unpin(pinnedRegion);
            }
            assertFalse(GpuDevice.isPinned(pinnedRegion));
        }
    }

    /**
     * Scattered copies as batch calls (cuMemcpyBatchAsync_v2, where the driver has it) and one by one give the same
     * bytes, both ways, with partial blocks and more copies than one batch call carries; a driver without batch
     * copies runs the one-by-one half only (and says so).
     */
    @Test
    void scatteredCopiesBatchedAndOneByOneAgreeByteForByte() {
        int slotBytes = 64 << 10;
        int n = CudaBatchCopy.MAX + 77; // two batch calls
        Random r = new Random(13);
        try (Arena a = Arena.ofShared(); GpuDevice dev = new GpuDevice("gpu0", 0, 2L * n, slotBytes)) {
            boolean batchHere = dev.batched();
            System.out.println("[GpuDeviceTest] " + dev.copyPath());
            MemorySegment srcRegion = a.allocate((long) n * slotBytes, 4096);
            MemorySegment dstRegion = a.allocate((long) n * slotBytes, 4096);
            assertTrue(GpuDevice.pin(srcRegion));
            assertTrue(GpuDevice.pin(dstRegion));
            try {
                long[] slots = new long[n];
                MemorySegment[] src = new MemorySegment[n], dst = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    slots[i] = (i * 7L) % (2L * n); // scattered: no two adjacent, so no runs
                    int len = (1 + r.nextInt(slotBytes / 4096)) * 4096;
                    int at = (int) ((i * 5L) % n); // a permutation (5 is coprime with n): no host runs either
                    src[i] = srcRegion.asSlice((long) at * slotBytes, len);
                    byte[] b = new byte[len];
                    r.nextBytes(b);
                    src[i].copyFrom(MemorySegment.ofArray(b));
                    dst[i] = dstRegion.asSlice((long) at * slotBytes, len);
                }
                for (boolean writeBatched : new boolean[] {true, false}) {
                    dstRegion.fill((byte) 0);
                    long[] c0 = dev.copyCounts();
                    dev.batchCopies(writeBatched);
                    assertAll(dev.io(true, slots, src));
                    dev.batchCopies(!writeBatched);
                    assertAll(dev.io(false, slots, dst));
                    for (int i = 0; i < n; i++) {
                        assertEquals(-1, dst[i].mismatch(src[i]), "block " + i + (writeBatched ? " (H2D batched)" : " (D2H batched)"));
                    }
                    long[] c1 = dev.copyCounts();
                    if (batchHere) {
                        assertEquals(2, c1[0] - c0[0], "one direction in two batch calls");
                        assertEquals(n, c1[1] - c0[1]);
                        assertEquals(n, c1[2] - c0[2], "the other direction one by one");
                    } else {
                        assertEquals(2L * n, c1[2] - c0[2]);
                    }
                }
            } finally {
                GpuDevice.unpin(srcRegion);
                GpuDevice.unpin(dstRegion);
            }
        }
    }

    /** Adjacent host bytes + consecutive slots become one copy (direct and staged); gaps and short blocks end a run. */
    @Test
    void adjacentBlocksAreCopiedAsRunsByteForByte() {
        int slotBytes = 256 << 10;
        int n = 150; // > 2 staging halves of 64 slots
        long[] slots = new long[n];
        for (int i = 0; i < n; i++) {
            slots[i] = i < 50 ? i : i < 100 ? i + 10 : 300 - i; // run, gap, run, descending (no run)
        }
        try (Arena a = Arena.ofShared(); GpuDevice dev = new GpuDevice("gpu0", 0, 320, slotBytes)) {
            MemorySegment pinned = a.allocate((long) n * slotBytes, 4096);
            MemorySegment pageable = a.allocate((long) n * slotBytes, 4096);
            assertTrue(GpuDevice.pin(pinned));
            try {
                MemorySegment[] src = new MemorySegment[n], back = new MemorySegment[n];
                Random r = new Random(5);
                for (int i = 0; i < n; i++) {
                    long len = i % 37 == 20 ? slotBytes / 2 : slotBytes; // a short block now and then
                    src[i] = pinned.asSlice((long) i * slotBytes, len);
                    byte[] b = new byte[(int) len];
                    r.nextBytes(b);
                    src[i].copyFrom(MemorySegment.ofArray(b));
                    back[i] = pageable.asSlice((long) i * slotBytes, len);
                }
                assertAll(dev.io(true, slots, src)); // direct, in runs
                assertAll(dev.io(false, slots, back)); // staged, in runs
                for (int i = 0; i < n; i++) {
                    assertEquals(-1, back[i].mismatch(src[i]), "block " + i);
                }
                pinned.fill((byte) 0);
                long[] moved = new long[n];
                for (int i = 0; i < n; i++) {
                    moved[i] = slots[i] + 2; // still in range (max 301)
                }
                assertAll(dev.io(true, moved, back)); // staged, in runs
                assertAll(dev.io(false, moved, src)); // direct, in runs
                for (int i = 0; i < n; i++) {
                    assertEquals(-1, back[i].mismatch(src[i]), "block " + i);
                }
            } finally {
                GpuDevice.unpin(pinned);
            }
        }
    }

    /** The engine's shared segment (a /dev/shm file both sides mmap) is page-locked and copied directly. */
    @Test
    void sharedSegmentIsPinnedAndCopiedDirectly(@TempDir Path dir) {
        Path shmDir = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : dir;
        try (SharedMemory shm = new SharedMemory(shmDir.resolve("kvpool-gpu-test-" + ProcessHandle.current().pid()), 64L << 20);
             Arena a = Arena.ofShared(); GpuDevice dev = new GpuDevice("gpu0", 0, 16, BLOCK)) {
            assertTrue(GpuDevice.pin(shm.segment()), "cudaHostRegister of the mmap'd shared segment");
            try {
                MemorySegment[] src = TestBlocks.random(a, 8, BLOCK, 21);
                MemorySegment[] inShm = new MemorySegment[8];
                for (int i = 0; i < 8; i++) {
                    inShm[i] = shm.slice((long) i * BLOCK, BLOCK);
                    inShm[i].copyFrom(src[i]);
                }
                long[] slots = TestBlocks.keys(0, 8);
                long direct0 = dev.opCounts()[0];
                assertAll(dev.io(true, slots, inShm));
                MemorySegment[] back = new MemorySegment[8];
                for (int i = 0; i < 8; i++) {
                    back[i] = shm.slice((long) (16 + i) * BLOCK, BLOCK);
                }
                assertAll(dev.io(false, slots, back));
                assertEquals(direct0 + 16, dev.opCounts()[0]);
                for (int i = 0; i < 8; i++) {
                    assertEquals(-1, back[i].mismatch(src[i]));
                }
            } finally {
                GpuDevice.unpin(shm.segment());
            }
        } finally {
            try {
                Files.deleteIfExists(shmDir.resolve("kvpool-gpu-test-" + ProcessHandle.current().pid()));
            } catch (java.io.IOException ignored) {
                // best effort
            }
        }
    }

    @Test
    void outOfRangeOpsFailAloneAndOthersComplete() {
        try (Arena a = Arena.ofShared(); GpuDevice dev = new GpuDevice("gpu0", 0, 4, BLOCK)) {
            MemorySegment[] src = TestBlocks.random(a, 3, BLOCK, 3);
            MemorySegment[] bufs = {src[0], a.allocate(BLOCK + 4096L, 4096), src[2]};
            boolean[] ok = dev.io(true, new long[] {0, 1, 9}, bufs);
            assertArrayEquals(new boolean[] {true, false, false}, ok);
            MemorySegment[] dst = TestBlocks.empty(a, 1, BLOCK);
            assertTrue(dev.io(false, new long[] {0}, dst)[0]);
            assertEquals(-1, dst[0].mismatch(src[0]));
        }
    }

    /** The agent's own setup with the GPU tier on: host regions pinned, a saved block written behind to the GPU. */
    @Test
    void agentSetupPutsTheGpuTierOnCuda(@TempDir Path dir) throws Exception {
        AgentSetup.Settings s = AgentSetup.Settings.defaults(dir).withNvme(List.of(), 0);
        s = new AgentSetup.Settings(s.agentId(), s.blockBytes(), s.blockTokens(), s.hostRegions(), s.hostRegionBytes(),
                s.nvmeDirs(), s.nvmeDeviceBytes(), s.ioEngine(), s.queueDepth(), s.nvmeBandwidthMBps(), s.nvmeThrottleMBps(),
                s.probeBytes(), true, 64L << 20, false, s.metaUri(), s.instanceId(), s.instanceGroup(), s.spec(),
                s.writeTimeoutSeconds(), s.model(), s.requireChecksum(), s.chunkOps(), s.highWaterOps(), s.guardMicros(),
                s.nvmeKeep(), s.poolRoots());
        AgentSetup.Built built = AgentSetup.build(s, EventSink.NONE);
        try (BlockStore store = built.store(); Arena a = Arena.ofShared()) {
            assertTrue(built.cuda(), built.gpu());
            MemorySegment[] src = TestBlocks.random(a, 8, s.blockBytes(), 11);
            long[] keys = TestBlocks.keys(100, 8);
            for (boolean b : store.save(keys, src, null)) {
                assertTrue(b);
            }
            PooledTier gpu = (PooledTier) store.tiers().get(0);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (gpu.size() < 8 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(8, gpu.size(), "write-behind reached the GPU tier");
            MemorySegment[] dst = TestBlocks.empty(a, 8, s.blockBytes());
            boolean[] hit = gpu.get(keys, dst).join();
            for (int i = 0; i < 8; i++) {
                assertTrue(hit[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            GpuDevice g = (GpuDevice) gpu.devices().get(0);
            assertTrue(g.opCounts()[0] >= 8, "write-behinds from pinned host slots are direct: " + g.opCounts()[0]);
        }
    }

    private static void assertAll(boolean[] ok) {
        for (int i = 0; i < ok.length; i++) {
            assertTrue(ok[i], "op " + i);
        }
    }
}
