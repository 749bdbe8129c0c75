package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Slots;
import dev.kvpool.meta.store.redis.RedisStore;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write session that Redis expired by itself (no replica alive to close it within the grace) leaves WRITING
 * locations nobody names; the leader's sweep removes them and returns their slots and quota. Real Redis.
 */
class OrphanSweepTest {
    @TempDir
    Path dir;

    @Test
    void writingLocationsOfAnExpiredUnclosedSessionAreRemoved() throws Exception {
        String prefix = "kvp-orphan-" + UUID.randomUUID().toString().substring(0, 8);
        Path cfg = dir.resolve("startup.json");
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_o",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":4}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_o"],"global_quota_group_name":"q",
                   "quota":{"capacity":1000000000},
                   "cache_config":{"meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs")));
        // grace 0: Redis drops the session at its deadline, as it would after the grace with every replica down
        try (RedisStore store = RedisStore.connect("redis://127.0.0.1:6379/0",
                RedisStore.Options.defaults().withPrefix(prefix).withSessionGrace(Duration.ZERO))) {
            Registry registry = new Registry(store, StartupConfig.load(cfg), store::index);
            QuotaLedger ledger = QuotaLedger.inMemory();
            try (WritePath write = new WritePath(registry, ledger, new WritePath.Settings(30, 3600))) {
                Instance inst = registry.register(RegisterInstanceRequest.newBuilder().setInstanceGroup("g")
                        .setInstanceId("i").setBlockSize(16)
                        .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                        .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1000)).build())
                        .instance();
                var served = write.start(inst, new long[]{1, 2}, List.of(), 30, 1);
                write.finish(inst, served.sessionId(), dev.kvpool.meta.kvcm.Mask.of(
                        dev.kvpool.api.proto.meta.BlockMask.newBuilder().setOffset(2).build()), store::sessionOwner);
                write.start(inst, new long[]{3, 4, 5}, List.of(), 1, 1); // never finished
                Thread.sleep(1500);
                assertTrue(inst.index.sessions().isEmpty(), "Redis expired the session by itself");
                assertEquals(Loc.WRITING, Loc.status(inst.index.get(3).a(0)));
                assertEquals(5000, ledger.usage("g").total());

                Reclaimer r = new Reclaimer(registry, ledger, write, () -> true, (i, p, re, k, b, y) -> { },
                        new Reclaimer.Settings(262_144, 4096, 10));
                assertEquals(0, r.sweepOrphans(System.currentTimeMillis()), "too young to be an orphan yet");
                assertEquals(3, r.sweepOrphans(System.currentTimeMillis() + 15_000));
                write.drain();
                assertNull(inst.index.get(3));
                assertNull(inst.index.get(5));
                assertEquals(Loc.SERVING, Loc.status(inst.index.get(1).a(0)), "served blocks untouched");
                assertEquals(2000, ledger.usage("g").total(), "the orphans' quota is back");
                long slots = inst.allocators().values().stream().mapToLong(Slots::usedSlots).sum();
                assertEquals(2, slots, "the orphans' slots are back");
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
