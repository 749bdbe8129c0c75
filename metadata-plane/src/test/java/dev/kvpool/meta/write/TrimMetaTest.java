package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.TrimStrategy;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.ForwardingIndex;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.StorageKind;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TrimCache TS_REMOVE_ALL_META on a real Redis index: only this instance's usage leaves, only its index is read. */
class TrimMetaTest {
    @TempDir
    Path dir;

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
            try (WritePath w = new WritePath(reg, rg.ledger, new WritePath.Settings(30, 3600))) {
                for (Instance inst : List.of(a, b)) {
                    int n = inst == a ? 1_500 : 700;
                    var o = w.start(inst, LongStream.range(0, n).toArray(), List.of(), 30, 1);
                    w.finish(inst, o.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(n).build()), rg.store::sessionOwner);
                }
                assertEquals(2_200 * 1000L, rg.ledger.usage("g").total());

                w.trim(a, TrimStrategy.TS_REMOVE_ALL_META, 0, 0);
                assertEquals(0, a.index.keyCount());
                assertEquals(700 * 1000L, rg.ledger.usage("g").total(), "the other instance's usage stays");
                assertEquals(700 * 1000L, rg.ledger.usage("g").byType(StorageKind.FILE));
                assertEquals(null, reads.get("i2"), "the other instance's index is not read");
                assertEquals(0, a.allocator(reg.storages().iterator().next()).usedSlots());
            }
        }
    }
}
