package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.reclaim.ReclaimConfig;
import dev.kvpool.meta.reclaim.ReclaimPolicy;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.store.redis.RedisStore;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A replica that joins running ones over a real Redis: it serves at once and still finishes a dead one's deletions. */
class JoiningReplicaTest {
    private static final long LEASE_MS = 2_000;

    @TempDir
    Path dir;

    @Test
    void readsNoIndexBeforeServingAndResumesLeftoverDeletionsOnlyAfterTheReaderLease() throws Exception {
        var reclaim = new ReclaimConfig(ReclaimPolicy.LRU, 0, 0, 0, 0, 0, LEASE_MS, 0, 60);
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, reclaim, o -> o);
             WritePath a = new WritePath(rg.registry, rg.ledger, new WritePath.Settings(30, 3600))) {
            Instance inst = rg.inst;
            for (int k = 0; k < 2_000; k += 500) {
                var o = a.start(inst, LongStream.range(k, k + 500).toArray(), List.of(), 30, 1);
                a.finish(inst, o.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(500).build()), rg.store::sessionOwner);
            }
            // replica A, alive, evicts keys 0..99: readers may hold them until its lease ends
            a.submitDelete(inst, inst.index.markDeleting(LongStream.range(0, 100).toArray(), 0, 100, null), LEASE_MS);
            // a replica that died had marked keys 100..199 and never purged them
            inst.index.markDeleting(LongStream.range(100, 200).toArray(), 0, 100, null);

            RedisStore store = rg.connect();
            Registry reg = rg.registry(store);
            long before = store.roundTrips();
            try (WritePath b = new WritePath(reg, rg.ledger, new WritePath.Settings(30, 3600))) {
                b.recover(false, 2);
                assertEquals(0, store.roundTrips() - before, "a joining replica reads no index before it serves");

                assertEquals(200, b.resumeDeletions(() -> false));
                Instance seen = reg.lookup(inst.id);
                for (long k = 0; k < 200; k++) {
                    Block bl = seen.index.get(k);
                    assertNotNull(bl, "key " + k + " was purged before its reader lease ended");
                    assertEquals(Loc.DELETING, Loc.status(bl.a(0)));
                }
                b.drain();
                a.drain();
                for (long k = 0; k < 200; k++) {
                    assertNull(seen.index.get(k), "key " + k + " is still in the index after the lease");
                }
                assertNotNull(seen.index.get(200));
                assertEquals(1_800, seen.index.keyCount());
                // both replicas purged keys 0..99; only the one that removed a location released its usage
                assertEquals(1_800 * 1000L, rg.ledger.usage("g").total());
            }
        }
    }
}
