package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.kvcm.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.sim.TraceSimulation;
import dev.kvpool.meta.storage.Slots;
import dev.kvpool.meta.store.redis.RedisStore;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
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
        String prefix = "kvp-plru-" + UUID.randomUUID().toString().substring(0, 8);
        Path cfg = dir.resolve("startup.json");
        // 100 blocks of 1000 bytes; soft level 50 %, 5 blocks per round (a round takes whole seconds)
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_p",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":8}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_p"],"global_quota_group_name":"q",
                   "quota":{"capacity":100000},
                   "cache_config":{"reclaim_strategy":%s,
                     "meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs"),
                new ReclaimConfig(ReclaimPolicy.PREFIX_LRU, 0.5, 0, 0, 5, 0, 0, 0, 60).toJson()));
        TraceSimulation.TraceClock clock = new TraceSimulation.TraceClock();
        try (RedisStore store = RedisStore.connect("redis://127.0.0.1:6379/0",
                RedisStore.Options.defaults().withPrefix(prefix))) {
            Registry registry = new Registry(store, StartupConfig.load(cfg), store::index);
            QuotaLedger ledger = QuotaLedger.inMemory();
            try (WritePath write = new WritePath(registry, ledger, new WritePath.Settings(30, 3600), clock)) {
                Instance inst = registry.register(RegisterInstanceRequest.newBuilder().setInstanceGroup("g")
                        .setInstanceId("i").setBlockSize(16)
                        .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                        .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1000)).build())
                        .instance();
                // 30 chains of 2 blocks (prefix 100 + c, extension 200 + c), chain c written at second c: 60 blocks
                for (int c = 0; c < 30; c++) {
                    clock.set(T0 + c * 1000L);
                    var o = write.start(inst, new long[]{100 + c, 200 + c}, List.of(), 30, 1);
                    write.finish(inst, o.sessionId(), Mask.of(BlockMask.newBuilder().setOffset(2).build()),
                            store::sessionOwner);
                }
                Reclaimer r = new Reclaimer(registry, ledger, write, () -> true, (i, p, re, k, b, y) -> { },
                        Reclaimer.Settings.DEFAULT);
                GroupConfig g = registry.group("g");
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
            } finally {
                for (String id : store.instanceIds()) {
                    store.drop(id);
                }
            }
        } finally {
            new ProcessBuilder("sh", "-c", "redis-cli --scan --pattern '" + prefix + "*' | xargs -r redis-cli del")
                    .inheritIO().start().waitFor();
        }
    }
}
