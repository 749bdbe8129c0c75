package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.StorageKind;
import dev.kvpool.meta.store.redis.RedisStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The first replica of a cold cluster rebuilds usage from a real Redis index. */
class ColdStartTest {
    @TempDir
    Path dir;
    private final String prefix = "kvp-cold-" + UUID.randomUUID().toString().substring(0, 8);

    @AfterEach
    void wipe() throws Exception {
        new ProcessBuilder("sh", "-c", "redis-cli --scan --pattern '" + prefix + "*' | xargs -r redis-cli del")
                .start().waitFor();
    }

    @Test
    void usageIsRebuiltInOneUpdatePerGroupAndTypeNotOnePerBlock() throws Exception {
        Path cfg = dir.resolve("startup.json");
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_c",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":64}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_c"],"global_quota_group_name":"q",
                   "quota":{"capacity":100000000000},
                   "cache_config":{"meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs")));
        StartupConfig startup = StartupConfig.load(cfg);
        int blocks = 10_000, deleting = 500;
        List<String> ids = List.of("c1", "c2");
        try (RedisStore store = RedisStore.connect("redis://127.0.0.1:6379/0",
                RedisStore.Options.defaults().withPrefix(prefix))) {
            Registry reg = new Registry(store, startup, store::index);
            try (WritePath w = new WritePath(reg, QuotaLedger.inMemory(), new WritePath.Settings(30, 3600))) {
                for (String id : ids) {
                    Instance inst = reg.register(RegisterInstanceRequest.newBuilder().setInstanceGroup("g")
                            .setInstanceId(id).setBlockSize(16)
                            .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                            .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1000)).build())
                            .instance();
                    for (int k = 0; k < blocks; k += 500) {
                        var o = w.start(inst, LongStream.range(k, k + 500).toArray(), List.of(), 30, 1);
                        w.finish(inst, o.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(500).build()),
                                store::sessionOwner);
                    }
                    // the cluster dies while evicting some of them: DELETING in the index, their purge never ran
                    long[] evicting = LongStream.range(0, deleting).toArray();
                    assertEquals(deleting, inst.index.markDeleting(evicting, 0, deleting, null).size());
                }
            }
        }
        try (RedisStore store = RedisStore.connect("redis://127.0.0.1:6379/0",
                RedisStore.Options.defaults().withPrefix(prefix))) {
            Registry reg = new Registry(store, startup, store::index);
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
            };
            try (WritePath w = new WritePath(reg, counting, new WritePath.Settings(30, 3600))) {
                w.recover(true);
                w.drain(); // the resumed purges release the usage and slots of what was being evicted
            }
            // an instance's deletions resume while the next one is scanned: its usage must be in by then, or the
            // purge subtracts from nothing (usage never goes below zero) and the later add over-counts for good
            int left = blocks - deleting;
            assertEquals(ids.size() * left * 1000L, mem.usage("g").total(), "bytes per key x keys left");
            assertEquals(ids.size() * left * 1000L, mem.usage("g").byType(StorageKind.FILE));
            for (String id : ids) {
                Instance inst = reg.lookup(id);
                assertEquals(left, inst.index.keyCount());
                assertEquals(left, inst.allocator(reg.storages().iterator().next()).usedSlots(),
                        "one file slot per block left, rebuilt from the index");
            }
            // per instance: one update for the total and one per storage type, not one per block
            assertTrue(adds.get() <= 2 * ids.size(), "updates while rebuilding: " + adds.get() + " for "
                    + ids.size() * blocks + " blocks");
        }
    }
}
