package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.FileDevice;
import dev.kvpool.agent.tier.MemoryDevice;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Save returns when the bytes are in the host pool; NVMe gets them later; loads fall through the tiers. */
class BlockStoreTest {
    static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    /** An 8-slot host pool: small, so a few saves push blocks out of it. */
    static PooledTier host() {
        return PooledTier.of("host", BlockEvent.CPU, BLOCK, List.of(new MemoryDevice("host0", 8, BLOCK)),
                new double[] {1});
    }

    /** An NVMe device whose worker holds deferred writes for 300 ms of read silence. */
    DeviceWorker nvmeWorker(int slots) {
        return new DeviceWorker(new FileDevice("nvme0", dir, slots, BLOCK, new FileChannelBlockIo(2)), 4, 10_000,
                300_000_000L, 64);
    }

    static PooledTier nvme(DeviceWorker w) {
        return new PooledTier("nvme", BlockEvent.DISK, BLOCK, List.of(w.device()), new double[] {1}, List.of(w));
    }

    /**
     * The GPU tier as the agent builds it (a host-memory stand-in here, CUDA where a GPU exists): loads unchecked by
     * default ({@code kvpool.agent.gpu.verify=false}); the write-behind into it carries the host pool's CRC32C, so with
     * verify turned on every block it holds still passes.
     */
    @Test
    void gpuTierLoadsUncheckedByDefaultAndItsWriteBehindCarriesTheCrc() {
        var d = AgentSetup.Settings.defaults(dir).withNvme(List.of(), 0).withBlock(BLOCK, 1, 4L << 20);
        var s = new AgentSetup.Settings(d.agentId(), d.blockBytes(), d.blockTokens(), d.hostRegions(), d.hostRegionBytes(),
                d.nvmeDirs(), d.nvmeDeviceBytes(), d.ioEngine(), d.queueDepth(), d.nvmeBandwidthMBps(),
                d.nvmeThrottleMBps(), 1L << 20, true, 4L << 20, false, d.metaUri(), d.instanceId(), d.instanceGroup(),
                d.spec(), d.writeTimeoutSeconds(), d.model(), d.requireChecksum(), d.chunkOps(), d.highWaterOps(),
                d.guardMicros(), d.nvmeKeep(), d.poolRoots());
        AgentSetup.Built built = AgentSetup.build(s, dev.kvpool.agent.events.EventSink.NONE);
        try (BlockStore store = built.store(); Arena a = Arena.ofShared()) {
            PooledTier gpu = (PooledTier) store.gpu();
            assertFalse(gpu.verifiesLoads(), "kvpool.agent.gpu.verify defaults to false");
            MemorySegment[] src = TestBlocks.random(a, 8, BLOCK, 41);
            long[] keys = TestBlocks.keys(700, 8);
            for (boolean b : store.save(keys, src, null)) {
                assertTrue(b);
            }
            store.awaitWriteBehind();
            assertEquals(8, gpu.size(), "written behind to the GPU tier");
            built.verifyGpuLoads(true);
            assertTrue(gpu.verifiesLoads());
            MemorySegment[] dst = TestBlocks.empty(a, 8, BLOCK);
            BlockStore.LoadResult r = store.load(keys, dst);
            for (int i = 0; i < 8; i++) {
                assertTrue(r.found()[i]);
                assertEquals("gpu", r.tier()[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            assertEquals(0, gpu.checksumFailures(), "the CRC32C the write-behind passed is the bytes' own");
        }
    }

    @Test
    void saveReturnsBeforeTheNvmeWriteAndLoadsFallThrough() throws Exception {
        List<BlockEvent> events = new CopyOnWriteArrayList<>();
        PooledTier host = host();
        DeviceWorker w = nvmeWorker(64);
        PooledTier nvme = nvme(w);
        try (Arena a = Arena.ofShared(); BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, events::add)) {
            w.read(new long[] {63}, TestBlocks.empty(a, 1, BLOCK)).join(); // a device read: the idle window starts now
            MemorySegment[] src = TestBlocks.random(a, 8, BLOCK, 5);
            long[] keys = TestBlocks.keys(40, 8);
            boolean[] ok = store.save(keys, src, 39L);
            for (boolean b : ok) {
                assertTrue(b);
            }
            assertEquals(List.of("host"), store.query(new long[] {40}).get(0), "saved to the first tier only, so far");
            assertTrue(w.pendingDeferredOps() > 0);
            store.awaitWriteBehind();
            assertEquals(List.of("host", "nvme"), store.query(new long[] {40}).get(0));
            // 8 more blocks evict the first 8 from the 8-slot host pool: loads then come from NVMe
            store.save(TestBlocks.keys(100, 8), TestBlocks.random(a, 8, BLOCK, 6), null);
            store.awaitWriteBehind();
            assertFalse(host.contains(40));
            MemorySegment[] dst = TestBlocks.empty(a, 8, BLOCK);
            BlockStore.LoadResult r = store.load(keys, dst);
            for (int i = 0; i < 8; i++) {
                assertTrue(r.found()[i]);
                assertEquals("nvme", r.tier()[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            assertEquals("all_cleared", events.get(0).eventType(), "a new store says so first");
            BlockEvent first = events.get(1);
            assertEquals("stored", first.eventType());
            assertEquals("cpu", first.medium());
            assertEquals(39L, first.parentBlockHash());
            assertEquals(16, first.blockSize());
            assertTrue(events.stream().anyMatch(e -> e.eventType().equals("removed") && e.medium().equals("cpu")));
            assertTrue(events.stream().anyMatch(e -> e.eventType().equals("onboarded") && e.medium().equals("disk")));
            assertTrue(events.stream().anyMatch(e -> e.eventType().equals("stored") && e.medium().equals("disk")
                    && e.blockHashes()[0] == 40 && e.parentBlockHash() == 39L), "the NVMe copy keeps the chain: " + events);
            assertEquals(2, events.stream().filter(e -> e.eventType().equals("stored") && e.medium().equals("cpu")
                    && e.blockHashes()[0] == 40 && e.blockHashes().length == 8 && Long.valueOf(39).equals(e.parentBlockHash()))
                    .count(), "saved, then promoted back from NVMe with the parents the NVMe tier kept: " + events);
        }
    }

    @Test
    void aBlockRemovedWhileItsNvmeWriteIsPendingDoesNotComeBack() throws Exception {
        List<BlockEvent> events = new CopyOnWriteArrayList<>();
        PooledTier host = host();
        DeviceWorker w = nvmeWorker(16);
        PooledTier nvme = nvme(w);
        try (Arena a = Arena.ofShared(); BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, events::add)) {
            w.read(new long[] {15}, TestBlocks.empty(a, 1, BLOCK)).join(); // the idle window starts now
            long[] keys = TestBlocks.keys(70, 4);
            store.save(keys, TestBlocks.random(a, 4, BLOCK, 8), null);
            assertTrue(w.pendingDeferredOps() > 0, "the NVMe copy is still on its way");
            boolean[] removed = store.remove(keys, false);
            for (boolean b : removed) {
                assertTrue(b);
            }
            store.awaitWriteBehind();
            for (long k : keys) {
                assertFalse(nvme.contains(k), "block " + k + " was removed; its late write must not bring it back");
            }
            assertEquals(nvme.capacity(), nvme.freeSlots(), "the slots written meanwhile are free again");
            assertFalse(events.stream().anyMatch(e -> e.eventType().equals("stored") && e.medium().equals("disk")));
        }
    }
}
