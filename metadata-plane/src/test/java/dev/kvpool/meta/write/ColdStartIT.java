package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.ForwardingIndex;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.index.StorageKind;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The first replica of a cold cluster rebuilds usage from a real Redis index. */
class ColdStartIT {
    @TempDir
    Path dir;

    @Test
    void usageIsRebuiltInOneUpdatePerInstanceAndTypeNotOnePerBlock() throws Exception {
        int blocks = 10_000, deleting = 500;
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            List<Instance> before = List.of(rg.inst, RedisGroup.register(rg.registry, "i2"));
            try (Deletions d = new Deletions(rg.registry, rg.ledger)) {
                WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600));
                for (Instance inst : before) {
                    rg.save(w, inst, 0, blocks, 500);
                    // the cluster dies while evicting some of them: DELETING in the index, their purge never ran
                    long[] evicting = LongStream.range(0, deleting).toArray();
                    assertEquals(deleting, inst.index.markDeleting(evicting, 0, deleting, null).size());
                }
            }
            Registry reg = rg.restarted();
            QuotaLedger mem = QuotaLedger.inMemory();
            AtomicInteger adds = new AtomicInteger();
            QuotaLedger counting = new QuotaLedger() { // on a shared ledger each add is a Redis round trip
                @Override
                public Usage usage(String group) {
                    return mem.usage(group);
                }

                @Override
                public boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind,
                                          long typeBytes, Long typeCapacity) {
                    return mem.tryReserve(group, totalBytes, capacity, kind, typeBytes, typeCapacity);
                }

                @Override
                public void add(String group, long totalBytes, StorageKind kind, long typeBytes) {
                    if (totalBytes > 0 || typeBytes > 0) { // the rebuild's; the purges' releases are negative
                        adds.incrementAndGet();
                    }
                    mem.add(group, totalBytes, kind, typeBytes);
                }

                @Override
                public void reset(String group) {
                    mem.reset(group);
                }

                @Override
                public DriftLog drift() {
                    return mem.drift();
                }
            };
            try (Deletions d = new Deletions(reg, counting)) {
                new Recovery(reg, counting, d).recover(2);
                d.drain(); // the resumed purges release the usage and slots of what was being evicted
            }
            // an instance's deletions resume while the next one is scanned: its usage must be in by then, or the
            // purge subtracts from nothing (usage never goes below zero) and the later add over-counts for good
            int left = blocks - deleting;
            assertEquals(before.size() * left * 1000L, mem.usage("g").total(), "bytes per key x keys left");
            assertEquals(before.size() * left * 1000L, mem.usage("g").byType(StorageKind.FILE));
            assertEquals(0, mem.drift().events(), "no release took usage below zero");
            for (Instance old : before) {
                Instance inst = reg.lookup(old.id);
                assertEquals(left, inst.index.keyCount());
                assertEquals(left, inst.allocator(reg.storages().iterator().next()).usedSlots(),
                        "one file slot per block left, rebuilt from the index");
            }
            // per instance: one update for the total and one per storage type, not one per block
            assertTrue(adds.get() <= 2 * before.size(), "updates while rebuilding: " + adds.get() + " for "
                    + before.size() * blocks + " blocks");
        }
    }

    @Test
    void instancesAreReadAtOnceWithinTheHeapBudget() throws Exception {
        int blocks = 2_000;
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o)) {
            List<Instance> insts = List.of(rg.inst, RedisGroup.register(rg.registry, "i2"),
                    RedisGroup.register(rg.registry, "i3"), RedisGroup.register(rg.registry, "i4"));
            try (Deletions d = new Deletions(rg.registry, rg.ledger)) {
                WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600));
                for (Instance inst : insts) {
                    rg.save(w, inst, 0, blocks, blocks);
                }
            }
            AtomicInteger reading = new AtomicInteger(), most = new AtomicInteger();
            Registry reg = rg.registry(rg.connect(), idx -> new ForwardingIndex(idx) {
                @Override
                public void forEach(Consumer<Block> visitor) {
                    most.accumulateAndGet(reading.incrementAndGet(), Math::max);
                    try {
                        Thread.sleep(300); // long enough for the others to start if they may
                        delegate.forEach(visitor);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    } finally {
                        reading.decrementAndGet();
                    }
                }
            });
            QuotaLedger fresh = QuotaLedger.inMemory();
            try (Deletions d = new Deletions(reg, fresh)) {
                Recovery w = new Recovery(reg, fresh, d);
                assertEquals(null, w.recoveryProgress(), "no progress before a rebuild began");
                w.recover(4, 1L << 30);
                assertEquals(4, most.get(), "four instances read at once");
                // what /q/health/started shows: every key counted once, against the count taken when it began
                var pr = w.recoveryProgress();
                assertEquals(4L * blocks, pr.totalKeys());
                assertEquals(4L * blocks, pr.keys());
                assertEquals(4, pr.instancesDone());
                assertEquals(4, pr.instances());
                most.set(0);
                w.recover(4, blocks * 24L); // room for one instance's slot addresses
                assertEquals(1, most.get(), "one at a time when the heap allows no more");
                for (Instance old : insts) {
                    assertEquals(blocks, reg.lookup(old.id).allocator(reg.storages().iterator().next()).usedSlots());
                }
            }
        }
    }
}
