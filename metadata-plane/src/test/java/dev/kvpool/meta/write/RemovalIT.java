package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.ForwardingIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import dev.kvpool.meta.support.RedisGroup;
import dev.kvpool.testing.Await;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Removal on a real Redis index. TrimCache TS_REMOVE_ALL_META: only this instance's usage leaves, only its index is
 * read, and a write in flight is left to its session. RemoveCache of keys still being written: they leave at once
 * (KVCM: any status → DELETING; the session's finish then fails them), but their slots stay taken until the
 * session's deadline, since the writer may still be writing to them.
 */
class RemovalIT {
    @TempDir
    Path dir;

    private static Set<String> uris(WritePath.StartOutcome o) {
        return new HashSet<>(o.locations().stream().map(l -> l.getLocationSpecs(0).getUri()).toList());
    }

    @Test
    void removingOneInstancesMetadataReadsNoOtherInstanceAndReleasesExactlyItsUsage() throws Exception {
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            Map<String, AtomicInteger> reads = new ConcurrentHashMap<>();
            Registry reg = rg.registry(rg.connect(), idx -> new ForwardingIndex(idx) {
                @Override
                public void forEach(Consumer<Block> visitor) {
                    reads.computeIfAbsent(instanceId(), k -> new AtomicInteger()).incrementAndGet();
                    delegate.forEach(visitor);
                }
            });
            Instance a = reg.lookup("i"), b = RedisGroup.register(reg, "i2");
            try (Deletions d = new Deletions(reg, rg.ledger)) {
                WritePath w = new WritePath(reg, rg.ledger, d, new WritePath.Settings(30, 3600));
                for (Instance inst : List.of(a, b)) {
                    int n = inst == a ? 1_500 : 700;
                    rg.save(w, inst, 0, n, n);
                }
                assertEquals(2_200 * 1000L, rg.ledger.usage("g").total());

                d.trim(a, Trim.REMOVE_ALL_META, 0, 0);
                d.drain();
                assertEquals(0, a.index.keyCount());
                assertEquals(700 * 1000L, rg.ledger.usage("g").total(), "the other instance's usage stays");
                assertEquals(700 * 1000L, rg.ledger.usage("g").byType(StorageKind.FILE));
                assertEquals(null, reads.get("i2"), "the other instance's index is not read");
                assertEquals(0, a.allocator(reg.storages().iterator().next()).usedSlots());
            }
        }
    }

    /**
     * A write in flight (its session may be on another replica) keeps its locations, slots and reserved usage
     * through a TS_REMOVE_ALL_META: clearing the index dropped them and freed every slot, so the next write was
     * handed the slots the first one was still writing to, and the usage the session reserved stayed counted.
     */
    @Test
    void aWriteInFlightKeepsItsSlotsAndUsageThroughTheTrim() throws Exception {
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            Instance a = rg.inst;
            Storage st = rg.registry.storages().iterator().next();
            try (Deletions d = new Deletions(rg.registry, rg.ledger)) {
                WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600));
                rg.save(w, a, 0, 100, 100);
                var inFlight = w.start(a, LongStream.range(1_000, 1_010).toArray(), List.of(), 30, 1);
                Set<String> writing = uris(inFlight);

                d.trim(a, Trim.REMOVE_ALL_META, 0, 0);
                d.drain();
                assertEquals(10, a.index.keyCount(), "only the blocks being written are left");
                assertEquals(10, a.allocator(st).usedSlots(), "their slots are still theirs");
                assertEquals(10 * 1000L, rg.ledger.usage("g").total(), "the usage their session reserved");

                var next = w.start(a, LongStream.range(2_000, 2_050).toArray(), List.of(), 30, 1);
                assertTrue(java.util.Collections.disjoint(writing, uris(next)), "a slot handed out twice");
                rg.finishAll(w, a, inFlight);
                assertEquals(10, LongStream.range(1_000, 1_010).mapToObj(a.index::get)
                        .filter(b -> b != null && Loc.status(b.a(0)) == Loc.SERVING).count(), "the session finishes");
                assertEquals(60 * 1000L, rg.ledger.usage("g").total());
            }
        }
    }

    @Test
    void aRemovedKeyBeingWrittenKeepsItsSlotUntilItsWriterIsDone() throws Exception {
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            Instance a = rg.inst;
            Storage st = rg.registry.storages().iterator().next();
            try (Deletions d = new Deletions(rg.registry, rg.ledger)) {
                WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600));
                long[] served = LongStream.range(0, 4).toArray();
                rg.save(w, a, 0, 4, 4);
                long[] keys = LongStream.range(100, 104).toArray();
                var inFlight = w.start(a, keys, List.of(), 2, 1); // deadline in 2 s
                Set<String> writing = uris(inFlight);
                long deadline = System.currentTimeMillis() + 2_000;

                d.remove(a, LongStream.concat(LongStream.of(served), LongStream.of(keys)).toArray(), Mask.EMPTY);
                for (long k : keys) {
                    assertEquals(Loc.DELETING, Loc.status(a.index.get(k).a(0)), "out of service at once");
                }
                // (no drain here: it would wait for the delayed purge)
                Await.until("the served blocks' slots freed at once", Duration.ofMillis(deadline - 1_000
                        - System.currentTimeMillis()), () -> a.allocator(st).usedSlots() <= 4);
                assertEquals(4, a.allocator(st).usedSlots(), "the served blocks' slots are free, the writer's are not");
                var next = w.start(a, LongStream.range(200, 208).toArray(), List.of(), 30, 1);
                assertTrue(java.util.Collections.disjoint(writing, uris(next)), "a slot its writer may still write to was handed out");
                rg.finishAll(w, a, inFlight);
                for (long k : keys) {
                    assertEquals(Loc.DELETING, Loc.status(a.index.get(k).a(0)), "the finish does not serve it");
                }

                // purged after the deadline (and a second's grace)
                Await.until("purged", Duration.ofMillis(deadline + 10_000 - System.currentTimeMillis()),
                        () -> a.index.get(keys[0]) == null);
                assertTrue(System.currentTimeMillis() >= deadline, "purged before the writer's deadline");
                d.drain();
                assertEquals(8, a.allocator(st).usedSlots(), "only the next write's slots are taken");
            }
        }
    }
}
