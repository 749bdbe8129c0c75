package dev.kvpool.meta.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.index.IndexDroppedException;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.store.redis.RedisStore;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two replicas' registries over one real Redis (a key prefix of their own): each brings its instances in line
 * with the store, telling an instance another replica removed from one the store lost with its data.
 */
class RegistryReconcileIT {
    @TempDir
    Path dir;
    private final String prefix = "kvp-reconcile-" + UUID.randomUUID().toString().substring(0, 8);
    private RedisStore storeA, storeB;
    private Registry a, b;
    private Deletions deletionsA, deletionsB;
    private WritePath writeA, writeB;

    @BeforeEach
    void replicas() throws Exception {
        Path cfg = dir.resolve("startup.json");
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_r",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":4}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_r"],"global_quota_group_name":"q",
                   "quota":{"capacity":1000000000},
                   "cache_config":{"meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs")));
        StartupConfig startup = StartupConfig.load(cfg);
        storeA = RedisStore.connect("redis://127.0.0.1:6379/0", RedisStore.Options.defaults().withPrefix(prefix));
        storeB = RedisStore.connect("redis://127.0.0.1:6379/0", RedisStore.Options.defaults().withPrefix(prefix));
        a = new Registry(storeA, startup, storeA::index);
        a.register(request("i"));
        b = new Registry(storeB, startup, storeB::index);
        QuotaLedger ledger = QuotaLedger.inMemory();
        deletionsA = new Deletions(a, ledger);
        deletionsB = new Deletions(b, ledger);
        writeA = new WritePath(a, ledger, deletionsA, new WritePath.Settings(30, 3600));
        writeB = new WritePath(b, ledger, deletionsB, new WritePath.Settings(30, 3600));
    }

    @AfterEach
    void close() throws Exception {
        try {
            deletionsA.close();
            deletionsB.close();
            storeA.close();
            storeB.close();
        } finally {
            wipe();
        }
    }

    private void wipe() throws Exception {
        new ProcessBuilder("sh", "-c", "redis-cli --scan --pattern '" + prefix + "*' | xargs -r redis-cli del")
                .start().waitFor();
    }

    private static RegisterInstanceRequest request(String id) {
        return RegisterInstanceRequest.newBuilder().setInstanceGroup("g").setInstanceId(id).setBlockSize(16)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1000)).build();
    }

    private void save(WritePath w, Instance inst, long... keys) {
        var o = w.start(inst, keys, List.of(), 30, 1);
        w.finish(inst, o.sessionId(), Mask.prefix(keys.length),
                (w == writeA ? storeA : storeB)::sessionOwner);
    }

    @Test
    void anInstanceRemovedByAnotherReplicaIsForgottenAndItsReRegistrationAdopted() {
        Instance seenByB = b.lookup("i");
        assertNotNull(seenByB, "b picks up what a registered");
        save(writeB, seenByB, 1, 2);
        assertNotNull(a.remove("i"));

        assertThrows(IndexDroppedException.class, () -> writeB.start(seenByB, new long[]{3}, List.of(), 30, 1),
                "b's index object of the removed instance refuses writes");
        b.reconcile(null);
        assertNull(b.instance("i"), "b forgets it: its calls now answer INSTANCE_NOT_EXIST");
        assertNull(b.lookup("i"));

        a.register(request("i"));
        b.refresh(); // as b's next lookup miss or reconciliation does
        Instance again = b.lookup("i");
        assertNotNull(again, "registered again on a: b adopts the new registration");
        assertNotSame(seenByB, again);
        save(writeB, again, 5);
        assertEquals(1, a.instance("i").index.keyCount(), "the new index is shared, the old blocks are gone");
        b.reconcile(null);
        assertSame(again, b.instance("i"), "a live instance is left alone");
    }

    @Test
    void anInstanceLostWithTheStoresDataGetsItsRecordAndANewIndexBack() throws Exception {
        Instance onA = a.instance("i");
        Instance onB = b.lookup("i");
        save(writeA, onA, 1, 2, 3);
        var lfu = dev.kvpool.meta.registry.ReclaimConfig.fromJson(new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree("{\"reclaim_policy\":\"POLICY_LFU\",\"trigger_strategy\":{\"used_percentage\":0.5}}"));
        a.updateReclaim("g", lfu, 0); // a runtime change: version 2
        assertEquals(3, onB.index.keyCount());

        wipe(); // a Redis restarted without persistence
        assertThrows(IndexDroppedException.class, () -> writeA.start(onA, new long[]{4}, List.of(), 30, 1));
        a.reconcile("i");
        Instance renewed = a.instance("i");
        assertNotSame(onA, renewed, "a new index for the same registration");
        assertEquals(onA.info, renewed.info);
        assertTrue(renewed.index.alive());
        save(writeA, renewed, 4);

        b.reconcile(null);
        assertSame(onB, b.instance("i"), "lost data is not a removal: b keeps the instance");
        // b's index object is the old one: its first write finds that out, and the plane reconciles and retries
        assertThrows(IndexDroppedException.class, () -> writeB.start(onB, new long[]{5}, List.of(), 30, 1));
        b.reconcile("i");
        Instance onB2 = b.instance("i");
        assertNotSame(onB, onB2);
        save(writeB, onB2, 5);
        assertEquals(2, renewed.index.keyCount(), "both replicas write into the one new index");
        assertFalse(onB.index.alive(), "b's old index object knows it is gone");

        // the records come back: a replica started now sees the instance and the storage's number
        Registry c = new Registry(storeA, StartupConfig.load(dir.resolve("startup.json")), storeA::index);
        assertNotNull(c.instance("i"));
        assertEquals(a.storage("nfs_r").number, c.storage("nfs_r").number);
        assertEquals(2, c.group("g").version(), "the runtime reclaim change is written back too");
        assertEquals(lfu, c.group("g").reclaim());
    }
}
