package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.io.gds.AutoGpuFileIo;
import dev.kvpool.agent.io.gds.FakeCuFile;
import dev.kvpool.agent.io.gds.Gds;
import dev.kvpool.agent.pool.Layout;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.tier.GpuDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A promotion whose cuFile read timed out (its batch cancelled at the deadline: the read may still land later, in a
 * GPU slot reused by then) fails, turns checked loads on for the GPU tier for good and sends that GPU's path to the
 * bounce path, through which later promotions work. cuFile is faked (io.gds.FakeCuFile) over the GPU tier's
 * host-memory stand-in, so this runs without a GPU.
 */
class GpuPromotionTimeoutTest {
    static final int BLOCK = GpuPromotionTest.BLOCK;
    static final long DEADLINE = 200_000_000L; // 200 ms, as kvpool.agent.gds.timeout-ms=200

    @TempDir
    Path dir;

    @Test
    void aTimedOutCuFileReadFailsThePromotionChecksGpuLoadsFromThenOnAndFallsBackToTheBouncePath() {
        // the fake moves bytes with the CPU: the GPU tier must be its host-memory stand-in, not CUDA memory
        Assumptions.assumeTrue(GpuDevice.deviceCount() == 0, "needs the GPU tier's host-memory stand-in");
        FakeCuFile cu = new FakeCuFile();
        GdsSettings gds = new GdsSettings(Gds.Mode.AUTO, "libcufile.so.0", 8, 8L << 20);
        GpuPromoter.PathChooser fake = (m, bounce) -> Gds.choose(Gds.Mode.AUTO, FakeCuFile.claimingDevice0(m),
                cu.env(DEADLINE), bounce, gds.maxBatch());
        try (Arena a = Arena.ofShared();
             BlockStore store = AgentSetup.build(GpuPromotionTest.settings(dir, true, true), null,
                     Layout.CONTIGUOUS, gds, fake).store()) {
            long[] first = {100, 101, 102, 103}, second = {200, 201, 202, 203};
            MemorySegment[] src1 = blocks(a, first), src2 = blocks(a, second);
            for (long[] keys : new long[][] {first, second}) {
                for (boolean b : store.save(keys, keys == first ? src1 : src2, null)) {
                    assertTrue(b);
                }
            }
            store.awaitWriteBehind();
            PooledTier gpu = (PooledTier) GpuPromotionTest.tier(store, "gpu");
            for (long k : concat(first, second)) { // only the NVMe tier keeps them
                assertTrue(gpu.remove(k));
                assertTrue(store.host().remove(k));
            }
            GpuPromoter p = store.gpuPromoter();
            AutoGpuFileIo path = p.paths().get(0);
            assertEquals("compat", path.mode(), path.reason());

            // a promotion through the (faked) cuFile path: its bytes are served from the GPU tier
            loadFrom(store, a, first, src1, "nvme");
            assertEquals(first.length, p.promoted(), "promoted " + p.promoted() + ", failed " + p.failed());
            assertTrue(path.verified());
            assertFalse(gpu.verifiesLoads(), "unchecked GPU-tier loads by default");
            loadFrom(store, a, first, src1, "gpu");

            // cuFile's reads stop completing: the batch is cancelled at its deadline, the promotion fails
            cu.stall = true;
            loadFrom(store, a, second, src2, "nvme"); // the load itself is served from NVMe, right bytes
            assertEquals(second.length, p.failed(), "failed " + p.failed());
            assertEquals(first.length, p.promoted());
            for (long k : second) {
                assertFalse(gpu.contains(k), "key " + k + " in the GPU tier after a timed-out read");
            }
            assertTrue(cu.cancels() >= 1, "the batch was cancelled");
            assertTrue(gpu.verifiesLoads(), "GPU-tier loads checked from now on");
            assertEquals("bounce", path.mode());
            assertEquals(1, path.fallbacks());
            assertTrue(path.reason().contains("deadline"), path.reason());

            // the next promotion goes the bounce path (cuFile not called again) and is served from the GPU tier
            int submissions = cu.submissions();
            loadFrom(store, a, second, src2, "nvme");
            assertEquals(first.length + second.length, p.promoted(), "failed " + p.failed());
            assertEquals(submissions, cu.submissions(), "no cuFile submission after the fallback");
            loadFrom(store, a, second, src2, "gpu");
            loadFrom(store, a, first, src1, "gpu"); // the blocks cuFile moved pass the checked loads too
            assertTrue(gpu.verifiesLoads(), "for good");
            assertEquals(0, gpu.checksumFailures());
        }
    }

    /** Loads keys (none in the host pool), expecting every hit from {@code tier} byte for byte; then awaits promotions. */
    static void loadFrom(BlockStore store, Arena a, long[] keys, MemorySegment[] src, String tier) {
        for (long k : keys) {
            store.host().remove(k);
        }
        MemorySegment[] dst = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            dst[i] = a.allocate(BLOCK, 4096);
        }
        BlockStore.LoadResult r = store.load(keys, dst);
        assertEquals(keys.length, r.hits());
        assertTrue(Arrays.stream(r.tier()).allMatch(tier::equals), "want " + tier + ": " + Arrays.toString(r.tier()));
        for (int i = 0; i < keys.length; i++) {
            assertEquals(-1, dst[i].mismatch(src[i]), "key " + keys[i]);
        }
        store.awaitWriteBehind(); // promotions run after the load answered
    }

    static MemorySegment[] blocks(Arena a, long[] keys) {
        MemorySegment[] m = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            m[i] = a.allocate(BLOCK, 4096);
            GpuPromotionTest.fill(m[i], keys[i]);
        }
        return m;
    }

    static long[] concat(long[] x, long[] y) {
        long[] r = Arrays.copyOf(x, x.length + y.length);
        System.arraycopy(y, 0, r, x.length, y.length);
        return r;
    }
}
