package dev.kvpool.agent.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.tier.MemoryDevice;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Several throttled devices pooled: placement by measured bandwidth, loads issued on all devices at once. */
class PoolingTest {
    static final int BLOCK = 64 * 1024;

    @Test
    void probeMeasuresThrottledBandwidth() {
        Device d = new ThrottledDevice(new MemoryDevice("m", 64, BLOCK), 50e6);
        BandwidthProbe.Result r = BandwidthProbe.probe(d, 4L << 20);
        assertTrue(r.readBps() > 35e6 && r.readBps() < 60e6, "read " + r.readBps());
    }

    @Test
    void placementFollowsProbedBandwidthAndLoadsRunInParallel() {
        double[] limits = {40e6, 80e6, 120e6};
        List<Device> ds = List.of(new ThrottledDevice(new MemoryDevice("a", 256, BLOCK), limits[0]),
                new ThrottledDevice(new MemoryDevice("b", 256, BLOCK), limits[1]),
                new ThrottledDevice(new MemoryDevice("c", 256, BLOCK), limits[2]));
        double[] bw = new double[3];
        for (int i = 0; i < 3; i++) {
            bw[i] = BandwidthProbe.probe(ds.get(i), 2L << 20).readBps();
        }
        try (Arena a = Arena.ofShared(); PooledTier t = PooledTier.of("nvme", BlockEvent.DISK, BLOCK, ds, bw)) {
            int n = 180;
            long[] keys = TestBlocks.keys(1, n);
            MemorySegment[] src = TestBlocks.random(a, n, BLOCK, 9);
            t.put(keys, src, false).join();
            long[] per = t.blocksPerDevice();
            assertEquals(n, per[0] + per[1] + per[2]);
            // 1:2:3 within the probe's noise
            assertTrue(Math.abs(per[0] - 30) <= 8 && Math.abs(per[1] - 60) <= 10 && Math.abs(per[2] - 90) <= 10,
                    java.util.Arrays.toString(per));
            MemorySegment[] dst = TestBlocks.empty(a, n, BLOCK);
            long t0 = System.nanoTime();
            boolean[] hit = t.get(keys, dst).join();
            double secs = (System.nanoTime() - t0) / 1e9;
            for (int i = 0; i < n; i++) {
                assertTrue(hit[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            double pooled = n * (double) BLOCK / secs;
            double sum = limits[0] + limits[1] + limits[2];
            // serial over the devices would give ~ 1/3 of the sum; parallel and proportional gives close to the sum
            assertTrue(pooled > 0.75 * sum, String.format("pooled %.0f MB/s vs sum %.0f MB/s", pooled / 1e6, sum / 1e6));
        }
    }
}
