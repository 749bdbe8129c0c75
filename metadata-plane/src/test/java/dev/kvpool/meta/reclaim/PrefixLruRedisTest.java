package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.sim.TraceSimulation;
import dev.kvpool.meta.storage.Slots;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PREFIX_LRU on a real Redis: the rounds after the first are served from the access queue (no further HSCAN), a
 * chain touched after the pass survives, whole seconds go, and no cached block is left without its prefix.
 */
class PrefixLruRedisTest {
    private static final long T0 = 1_763_800_000_000L;

    @TempDir
    Path dir;

    @Test
    void roundsAfterTheFirstPassComeFromTheQueueAndSpareTouchedChains() throws Exception {
        TraceSimulation.TraceClock clock = new TraceSimulation.TraceClock();
        // 100 blocks of 1000 bytes; soft level 50 %, 5 blocks per round (a round takes whole seconds)
        var reclaim = new ReclaimConfig(ReclaimPolicy.PREFIX_LRU, 0.5, 0, 0, 5, 0, 0, 0, 60);
        try (RedisGroup rg = new RedisGroup(dir, 100_000, reclaim, o -> o);
             WritePath write = new WritePath(rg.registry, rg.ledger, new WritePath.Settings(30, 3600), clock)) {
            Instance inst = rg.inst;
            // 30 chains of 2 blocks (prefix 100 + c, extension 200 + c), chain c written at second c: 60 blocks
            for (int c = 0; c < 30; c++) {
                clock.set(T0 + c * 1000L);
                var o = write.start(inst, new long[]{100 + c, 200 + c}, List.of(), 30, 1);
                write.finish(inst, o.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(2).build()),
                        rg.store::sessionOwner);
            }
            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, write, () -> true, (i, p, re, k, b, y) -> { },
                    Reclaimer.Settings.DEFAULT);
            GroupConfig g = rg.registry.group("g");
            long now = T0 + 100_000;
            assertEquals(4, r.runGroup(g, now), "first round: seconds 0 and 1 (4 blocks; a third would make 6)");
            assertEquals(1, r.scans.get());
            // a prefix hit on chain 3 after the pass: the read path touches the whole prefix
            inst.index.touch(new long[]{103, 203}, 0, 2, (int) (now / 1000) + 1);
            int rounds = 0;
            while (r.runGroup(g, now + 2000) > 0) {
                rounds++;
                write.drain();
            }
            write.drain();
            assertEquals(1, r.scans.get(), "every later round was served by the access queue");
            assertEquals(2, rounds, "60 → 56 → 52 → 48 blocks");
            for (int c = 0; c < 30; c++) {
                boolean gone = c <= 6 && c != 3; // chains 0-2 and 4-6, oldest first; 3 was touched since
                for (long k : new long[]{100 + c, 200 + c}) {
                    if (gone) {
                        assertNull(inst.index.get(k), "key " + k + " should be evicted");
                    } else {
                        assertNotNull(inst.index.get(k), "key " + k + " should be cached");
                    }
                }
            }
            assertEquals(48, inst.index.keyCount());
            assertEquals(48, inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum(),
                    "evicted slots went back to the allocator");
        }
    }
}
