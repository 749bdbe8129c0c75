package dev.kvpool.agent.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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
            System.out.printf("[GpuDeviceTest] D2H %.1f GB/s (unpinned host buffers)%n", gbs);
        }
    }
}
