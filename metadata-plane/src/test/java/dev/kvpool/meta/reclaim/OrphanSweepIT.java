package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.slots.Slots;
import dev.kvpool.meta.support.RedisGroup;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write session that Redis expired by itself (no replica alive to close it within the grace) leaves WRITING
 * locations nobody names; the leader's sweep removes them and returns their slots and quota. Real Redis.
 */
class OrphanSweepIT {
    @TempDir
    Path dir;

    @Test
    void writingLocationsOfAnExpiredUnclosedSessionAreRemoved() throws Exception {
        // grace 0: Redis drops the session at its deadline, as it would after the grace with every replica down
        try (RedisGroup rg = new RedisGroup(dir, 1_000_000_000L, null, o -> o.withSessionGrace(Duration.ZERO));
             Deletions deletions = new Deletions(rg.registry, rg.ledger)) {
            WritePath write = new WritePath(rg.registry, rg.ledger, deletions, new WritePath.Settings(30, 3600));
            Instance inst = rg.inst;
            var served = write.start(inst, new long[]{1, 2}, List.of(), 30, 1);
            write.finish(inst, served.sessionId(), dev.kvpool.meta.core.Mask.prefix(2), rg.store::sessionOwner);
            write.start(inst, new long[]{3, 4, 5}, List.of(), 1, 1); // never finished
            Thread.sleep(1500);
            assertTrue(inst.index.sessions().isEmpty(), "Redis expired the session by itself");
            assertEquals(Loc.WRITING, Loc.status(inst.index.get(3).a(0)));
            assertEquals(5000, rg.ledger.usage("g").total());

            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, deletions,
                    new Recovery(rg.registry, rg.ledger, deletions), () -> true, (i, p, re, k, b, y) -> { },
                    new Reclaimer.Settings(262_144, 4096, 10));
            assertEquals(0, r.sweepOrphans(System.currentTimeMillis()), "too young to be an orphan yet");
            assertEquals(3, r.sweepOrphans(System.currentTimeMillis() + 15_000));
            deletions.drain();
            assertNull(inst.index.get(3));
            assertNull(inst.index.get(5));
            assertEquals(Loc.SERVING, Loc.status(inst.index.get(1).a(0)), "served blocks untouched");
            assertEquals(2000, rg.ledger.usage("g").total(), "the orphans' quota is back");
            long slots = inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum();
            assertEquals(2, slots, "the orphans' slots are back");

            // the leader's rounds sweep just the instances whose sessions the store expired unclosed, one orphan
            // age after first seeing them, and then stop seeing them
            write.start(inst, new long[]{6, 7}, List.of(), 1, 1); // never finished either
            Thread.sleep(1500);
            write.expire(System.currentTimeMillis()); // the leader's session expiry finds the session gone
            assertEquals(2, inst.index.expiredUnclosed().size(), "both abandoned sessions are listed");
            long before = r.orphansRemoved.get();
            long t0 = System.currentTimeMillis();
            r.tick(t0);
            assertEquals(2, r.unclosedPending());
            r.tick(t0 + 9_000); // not an orphan age since first seen
            deletions.drain();
            assertEquals(before, r.orphansRemoved.get());
            assertEquals(Loc.WRITING, Loc.status(inst.index.get(6).a(0)));
            r.tick(t0 + 10_000);
            deletions.drain();
            assertEquals(before + 2, r.orphansRemoved.get());
            assertNull(inst.index.get(6));
            assertEquals(2000, rg.ledger.usage("g").total());
            assertEquals(List.of(), inst.index.expiredUnclosed(), "swept: no longer listed");
            assertEquals(0, r.unclosedPending());

            // an orphan nothing lists (its id lost, say by a store that forgot it) waits for the safety net: a sweep
            // of every index an hour after becoming leader
            write.start(inst, new long[]{8}, List.of(), 1, 1);
            Thread.sleep(1500);
            write.expire(System.currentTimeMillis());
            inst.index.forgetExpiredUnclosed(inst.index.expiredUnclosed());
            r.tick(t0 + 600_000);
            deletions.drain();
            assertEquals(Loc.WRITING, Loc.status(inst.index.get(8).a(0)), "no sweep without a listed session");
            r.tick(t0 + OrphanSweeper.FIRST_FULL_SWEEP_MS);
            deletions.drain();
            assertNull(inst.index.get(8));
            assertEquals(2000, rg.ledger.usage("g").total());
        }
    }
}
