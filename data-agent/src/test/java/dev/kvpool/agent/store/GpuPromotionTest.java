package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.io.gds.AutoGpuFileIo;
import dev.kvpool.agent.io.gds.Gds;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.tier.GpuDevice;
import dev.kvpool.agent.tier.Tier;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NVMe hits of a load promoted into the GPU tier straight from the NVMe slot file (README "GPUDirect Storage"), so
 * the next load of those keys is served from the GPU tier, byte for byte; on the build machines the GPU tier is its
 * host-memory stand-in and the path is the bounce path, on a GPU machine the same test runs on CUDA through cuFile
 * (or the bounce path where cuFile is missing). A promoted block whose GPU bytes went bad is a miss there, never
 * wrong bytes.
 */
class GpuPromotionTest {
    static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    static AgentSetup.Settings settings(Path dir, boolean gpu, boolean nvme) {
        AgentSetup.Settings s = AgentSetup.Settings.defaults(dir).withBlock(BLOCK, 1, 16L << 20)
                .withNvme(nvme ? List.of(dir.resolve("nvme0")) : List.of(), 1024L * BLOCK).withInstance("gds-test");
        return new AgentSetup.Settings(s.agentId(), s.blockBytes(), s.blockTokens(), s.hostRegions(),
                s.hostRegionBytes(), s.nvmeDirs(), s.nvmeDeviceBytes(), s.ioEngine(), s.queueDepth(),
                s.nvmeBandwidthMBps(), s.nvmeThrottleMBps(), s.probeBytes(), gpu, 128L * BLOCK, s.poolEnabled(),
                s.metaUri(), s.instanceId(), s.instanceGroup(), s.spec(), s.writeTimeoutSeconds(), s.model(),
                s.requireChecksum(), s.chunkOps(), s.highWaterOps(), s.guardMicros(), s.nvmeKeep(), s.poolRoots());
    }

    static void fill(MemorySegment m, long key) {
        for (long o = 0; o < m.byteSize(); o += 8) {
            m.set(ValueLayout.JAVA_LONG, o, key * 0x9E3779B97F4A7C15L ^ o);
        }
    }

    static Tier tier(BlockStore s, String name) {
        return s.tiers().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void nvmeHitsArePromotedIntoTheGpuTierAndServedFromThere() {
        List<BlockEvent> events = new CopyOnWriteArrayList<>();
        GdsSettings gds = new GdsSettings(Gds.Mode.AUTO, System.getProperty("kvpool.agent.gds.library",
                "libcufile.so.0"), 128, 8L << 20);
        try (Arena a = Arena.ofShared();
             BlockStore store = AgentSetup.build(settings(dir, true, true), events::add, gds).store()) {
            int n = 32;
            long[] keys = new long[n];
            MemorySegment[] src = new MemorySegment[n];
            for (int i = 0; i < n; i++) {
                keys[i] = 1000 + i;
                src[i] = a.allocate(BLOCK, 4096);
                fill(src[i], keys[i]);
            }
            for (boolean b : store.save(keys, src, null)) {
                assertTrue(b);
            }
            store.awaitWriteBehind();
            PooledTier gpu = (PooledTier) tier(store, "gpu");
            for (long k : keys) { // only the NVMe tier keeps them
                assertTrue(gpu.remove(k));
                assertTrue(store.host().remove(k));
            }
            GpuPromoter p = store.gpuPromoter();
            assertNotNull(p, store.gpuPathNote());
            AutoGpuFileIo path = p.paths().get(0);
            assertNotNull(path.reason());
            if (GpuDevice.deviceCount() == 0) {
                assertEquals("bounce", path.mode());
                assertTrue(path.reason().contains("no CUDA device"), path.reason());
            }
            System.out.printf("[GpuPromotionTest] GPU ↔ NVMe path: %s (%s), cuFile %s%n", path.mode(), path.reason(),
                    path.version());

            MemorySegment[] dst = new MemorySegment[n];
            for (int i = 0; i < n; i++) {
                dst[i] = a.allocate(BLOCK, 4096);
            }
            BlockStore.LoadResult r = store.load(keys, dst);
            assertEquals(n, r.hits());
            assertTrue(Arrays.stream(r.tier()).allMatch("nvme"::equals), Arrays.toString(r.tier()));
            store.awaitWriteBehind(); // the promotion runs after the load answered
            assertEquals(n, p.promoted(), "promoted " + p.promoted() + ", failed " + p.failed());
            for (long k : keys) {
                assertTrue(gpu.contains(k));
            }
            assertTrue(path.verified());
            List<Long> gpuStored = events.stream().filter(e -> e.eventType().equals(BlockEvent.STORED)
                            && BlockEvent.GPU.equals(e.medium()))
                    .flatMap(e -> Arrays.stream(e.blockHashes()).boxed()).toList();
            assertTrue(gpuStored.containsAll(Arrays.stream(keys).boxed().toList()), "stored events, medium gpu");

            // the next load: from the GPU tier, byte for byte (its CRC check uses the CRC the NVMe index carried)
            for (long k : keys) {
                store.host().remove(k);
            }
            for (MemorySegment d : dst) {
                d.fill((byte) 0);
            }
            r = store.load(keys, dst);
            assertEquals(n, r.hits());
            assertTrue(Arrays.stream(r.tier()).allMatch("gpu"::equals), Arrays.toString(r.tier()));
            for (int i = 0; i < n; i++) {
                assertEquals(-1, dst[i].mismatch(src[i]), "block " + i);
            }
            long before = p.promoted();
            store.load(keys, dst); // already in the GPU tier: nothing promoted again
            store.awaitWriteBehind();
            assertEquals(before, p.promoted());
        }
    }

    @Test
    void aPromotedBlockWhoseGpuBytesWentBadIsAMissThereNotWrongBytes() {
        org.junit.jupiter.api.Assumptions.assumeTrue(GpuDevice.deviceCount() == 0,
                "corrupts the host-memory stand-in of the GPU tier directly");
        try (Arena a = Arena.ofShared();
             BlockStore store = AgentSetup.build(settings(dir, true, true), null, GdsSettings.fromSystemProperties())
                     .store()) {
            long[] keys = {7, 8};
            MemorySegment[] src = {a.allocate(BLOCK, 4096), a.allocate(BLOCK, 4096)};
            fill(src[0], 7);
            fill(src[1], 8);
            store.save(keys, src, null);
            store.awaitWriteBehind();
            PooledTier gpu = (PooledTier) tier(store, "gpu");
            for (long k : keys) {
                gpu.remove(k);
                store.host().remove(k);
            }
            MemorySegment[] dst = {a.allocate(BLOCK, 4096), a.allocate(BLOCK, 4096)};
            store.load(keys, dst);
            store.awaitWriteBehind();
            assertTrue(gpu.contains(7) && gpu.contains(8));
            // flip a byte of key 7 in the GPU tier's memory (the stand-in's region)
            Object[] h = new Object[1];
            PooledTier.Located at = gpu.pinLocated(new long[] {7}, h)[0];
            MemorySegment slot = gpu.devices().get(at.device()).slotMemory(at.slot());
            slot.set(ValueLayout.JAVA_BYTE, 100, (byte) ~slot.get(ValueLayout.JAVA_BYTE, 100));
            gpu.release(h);
            for (long k : keys) {
                store.host().remove(k);
            }
            dst[0].fill((byte) 0);
            dst[1].fill((byte) 0);
            BlockStore.LoadResult r = store.load(keys, dst);
            assertEquals(2, r.hits());
            assertEquals("nvme", r.tier()[0], "the bad GPU copy was a miss; NVMe served the block");
            assertEquals("gpu", r.tier()[1]);
            assertEquals(-1, dst[0].mismatch(src[0]));
            assertEquals(-1, dst[1].mismatch(src[1]));
            assertEquals(1, gpu.checksumFailures());
        }
    }

    @Test
    void withoutNvmeOrGpuTierThereIsNoPathAndStatusSaysWhy() {
        try (BlockStore s = AgentSetup.build(settings(dir.resolve("a"), false, true), null).store()) {
            assertNull(s.gpuPromoter());
            assertTrue(s.gpuPathNote().contains("GPU tier is off"), s.gpuPathNote());
        }
        try (BlockStore s = AgentSetup.build(settings(dir.resolve("b"), true, false), null).store()) {
            assertNull(s.gpuPromoter());
            assertTrue(s.gpuPathNote().contains("no NVMe tier"), s.gpuPathNote());
        }
    }

    @Test
    void modeOnWithoutCuFileRefusesToStart() {
        GdsSettings on = new GdsSettings(Gds.Mode.ON, dir.resolve("no-libcufile.so.0").toString(), 128, 8L << 20);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> AgentSetup.build(settings(dir, true, true), null, on));
        assertTrue(e.getMessage().contains("kvpool.agent.gds.mode=on"), e.getMessage());
        // the start that failed let go of its directory: a new one opens it
        try (BlockStore s = AgentSetup.build(settings(dir, true, true), null, GdsSettings.fromSystemProperties())
                .store()) {
            assertArrayEquals(new boolean[] {false}, s.load(new long[] {1}, new MemorySegment[] {
                    Arena.ofAuto().allocate(BLOCK, 4096)}).found());
        }
    }
}
