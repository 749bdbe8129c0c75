package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * RemoveCache of keys still being written, on a real Redis index: they leave at once (KVCM: any status →
 * DELETING; the session's finish then fails them), but their slots stay taken until the session's deadline, since
 * the writer may still be writing to them.
 */
class RemoveWhileWritingTest {
    @TempDir
    Path dir;

    @Test
    void aRemovedKeyBeingWrittenKeepsItsSlotUntilItsWriterIsDone() throws Exception {
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            Instance a = rg.inst;
            Storage st = rg.registry.storages().iterator().next();
            try (WritePath w = new WritePath(rg.registry, rg.ledger, new WritePath.Settings(30, 3600))) {
                long[] served = LongStream.range(0, 4).toArray();
                var done = w.start(a, served, List.of(), 30, 1);
                w.finish(a, done.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(4).build()), rg.store::sessionOwner);
                long[] keys = LongStream.range(100, 104).toArray();
                var inFlight = w.start(a, keys, List.of(), 2, 1); // deadline in 2 s
                Set<String> writing = new HashSet<>();
                inFlight.locations().forEach(l -> writing.add(l.getLocationSpecs(0).getUri()));
                long deadline = System.currentTimeMillis() + 2_000;

                w.remove(a, LongStream.concat(LongStream.of(served), LongStream.of(keys)).toArray(), Mask.EMPTY);
                for (long k : keys) {
                    assertEquals(Loc.DELETING, Loc.status(a.index.get(k).a(0)), "out of service at once");
                }
                // (no drain here: it would wait for the delayed purge)
                while (a.allocator(st).usedSlots() > 4) {
                    assertTrue(System.currentTimeMillis() < deadline - 1_000, "the served blocks' slots not freed at once");
                    Thread.sleep(20);
                }
                assertEquals(4, a.allocator(st).usedSlots(), "the served blocks' slots are free, the writer's are not");
                var next = w.start(a, LongStream.range(200, 208).toArray(), List.of(), 30, 1);
                next.locations().forEach(l -> assertFalse(writing.contains(l.getLocationSpecs(0).getUri()),
                        "a slot its writer may still write to was handed out: " + l));
                w.finish(a, inFlight.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(4).build()), rg.store::sessionOwner);
                for (long k : keys) {
                    assertEquals(Loc.DELETING, Loc.status(a.index.get(k).a(0)), "the finish does not serve it");
                }

                while (a.index.get(keys[0]) != null) { // purged after the deadline (and a second's grace)
                    assertTrue(System.currentTimeMillis() < deadline + 10_000, "never purged");
                    Thread.sleep(100);
                }
                assertTrue(System.currentTimeMillis() >= deadline, "purged before the writer's deadline");
                w.drain();
                assertEquals(8, a.allocator(st).usedSlots(), "only the next write's slots are taken");
            }
        }
    }
}
