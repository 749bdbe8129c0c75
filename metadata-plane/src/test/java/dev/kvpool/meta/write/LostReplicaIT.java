package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.ha.LostReplicas;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.reclaim.Reclaimer;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicas that leave and die over a real Redis: what a lost one left DELETING is purged by the leader's sweep after
 * the reader lease; a clean stop finishes its own purges.
 */
class LostReplicaIT {
    private static final long LEASE_MS = 2_000;

    @TempDir
    Path dir;

    private static RedisGroup group(Path dir) throws Exception {
        return new RedisGroup(dir, 100_000_000_000L, new ReclaimConfig(ReclaimPolicy.LRU, 0, 0, 0, 0, 0, LEASE_MS, 0, 60),
                o -> o);
    }

    /** A cluster that has lost {@code lost} replicas; records what the sweeps settled. */
    private static final class Lost implements LostReplicas {
        long lost = 1, swept;

        @Override
        public long replicasLost() {
            return lost;
        }

        @Override
        public long lostSwept() {
            return swept;
        }

        @Override
        public void lostSwept(long n) {
            swept = Math.max(swept, n);
        }
    }

    @Test
    void whatALostReplicaLeftDeletingIsPurgedByTheLeadersSweepAfterTheReaderLease() throws Exception {
        try (RedisGroup rg = group(dir);
             Deletions da = new Deletions(rg.registry, rg.ledger)) {
            WritePath a = new WritePath(rg.registry, rg.ledger, da, new WritePath.Settings(30, 3600));
            Instance inst = rg.inst;
            rg.save(a, inst, 0, 2_000, 500);
            // replica A, alive, evicts keys 0..99: readers may hold them until its lease ends
            da.submitDelete(inst, inst.index.markDeleting(LongStream.range(0, 100).toArray(), 0, 100, null),
                    LEASE_MS);
            // a replica that died had marked keys 100..199; its purges died with it
            inst.index.markDeleting(LongStream.range(100, 200).toArray(), 0, 100, null);

            Registry reg = rg.restarted();
            Lost lost = new Lost();
            try (Deletions db = new Deletions(reg, rg.ledger)) {
                Reclaimer leader = new Reclaimer(reg, rg.ledger, db, new Recovery(reg, rg.ledger, db), () -> true,
                        (i, p, re, k, by, y) -> { },
                        new Reclaimer.Settings(262_144, 4096, 3600));
                leader.sweepAfterLostReplicas(lost);
                for (int round = 0; round < 10 && lost.swept < lost.lost; round++) {
                    leader.tick(System.currentTimeMillis());
                }
                assertEquals(1, lost.swept, "the sweep is recorded as covering the lost replica");
                assertEquals(200, leader.leftoversResumed.get());
                Instance seen = reg.lookup(inst.id);
                for (long k = 0; k < 200; k++) {
                    Block bl = seen.index.get(k);
                    assertNotNull(bl, "key " + k + " was purged before its reader lease ended");
                    assertEquals(Loc.DELETING, Loc.status(bl.a(0)));
                }
                db.drain();
                da.drain();
                for (long k = 0; k < 200; k++) {
                    assertNull(seen.index.get(k), "key " + k + " is still in the index after the lease");
                }
                assertEquals(1_800, seen.index.keyCount());
                // both replicas purged keys 0..99; only the one that removed a location released its usage
                assertEquals(1_800 * 1000L, rg.ledger.usage("g").total());
                leader.tick(System.currentTimeMillis());
                assertEquals(200, leader.leftoversResumed.get(), "no new sweep until another replica is lost");
            }
        }
    }

    @Test
    void aCleanStopFinishesThePurgesWhoseReaderLeaseIsRunning() throws Exception {
        try (RedisGroup rg = group(dir);
             Deletions da = new Deletions(rg.registry, rg.ledger)) {
            WritePath a = new WritePath(rg.registry, rg.ledger, da, new WritePath.Settings(30, 3600));
            Instance inst = rg.inst;
            rg.save(a, inst, 0, 1_000, 500);
            da.submitDelete(inst, inst.index.markDeleting(LongStream.range(0, 100).toArray(), 0, 100, null), 300);
            assertTrue(da.finishDeletions(10_000));
            assertNull(inst.index.get(0), "purged before the stop returned");
            assertEquals(900, inst.index.keyCount());
            try (Deletions dc = new Deletions(rg.registry, rg.ledger)) {
                dc.submitDelete(inst, inst.index.markDeleting(new long[] {500}, 0, 1, null), 60_000);
                assertFalse(dc.finishDeletions(200), "a lease longer than the stop may wait is reported");
            }
        }
    }
}
