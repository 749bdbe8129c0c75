package dev.kvpool.meta.kvcm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationLenRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheMetaRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoRequest;
import dev.kvpool.api.proto.meta.GetInstanceInfoRequest;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RemoveCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.events.CacheEvents;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import dev.kvpool.meta.query.QueryPath;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.stats.StatsCounters;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.WritePath;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replica whose index is loaded but whose usage and slots are still being rebuilt answers lookups and refuses
 * everything that writes; before its index is loaded it refuses lookups too (issue 39).
 */
class StartingReplicaTest {
    boolean ready = true, lookups = true;

    @Test
    void lookupsAreAnsweredWhileUsageIsRebuiltAndWritesWait(@TempDir Path dir) {
        EmbeddedStore store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
        Registry registry = new Registry(store, StartupConfig.defaults(dir), store::index);
        QuotaLedger ledger = QuotaLedger.inMemory();
        Deletions deletions = new Deletions(registry, ledger);
        KvcmMeta meta = new KvcmMeta(registry, new QueryPath(registry),
                new WritePath(registry, ledger, deletions, new WritePath.Settings(30, 3600)), deletions,
                store::sessionOwner, () -> ready, () -> lookups, new KvcmMeta.Node("n1", "localhost", 6381, 6382),
                new SimpleMeterRegistry(), () -> CacheEvents.OFF, new StatsCounters());
        RegisterInstanceRequest reg = RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup("default")
                .setInstanceId("i").setBlockSize(16).setModelDeployment(ModelDeployment.newBuilder()
                        .setModelName("m").setDtype("bf16")).addLocationSpecInfos(LocationSpecInfo.newBuilder()
                        .setName("tp0").setSize(4096)).build();
        assertEquals(ErrorCode.OK, meta.registerInstance(reg).getHeader().getStatus().getCode());
        StartWriteCacheResponse sw = meta.startWriteCache(StartWriteCacheRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").addBlockKeys(1).addBlockKeys(2).setWriteTimeoutSeconds(30).build());
        assertEquals(ErrorCode.OK, sw.getHeader().getStatus().getCode());
        assertEquals(ErrorCode.OK, meta.finishWriteCache(FinishWriteCacheRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").setWriteSessionId(sw.getWriteSessionId()).setSuccessBlocks(BlockMask.newBuilder()
                        .setBoolMasks(BoolMasksType.newBuilder().addValues(true).addValues(true))).build())
                .getHeader().getStatus().getCode());

        ready = false; // the index is loaded, usage and slots are being rebuilt
        GetCacheLocationRequest prefix = GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId("i")
                .setQueryType(QueryType.QT_PREFIX_MATCH).addBlockKeys(1).addBlockKeys(2).build();
        var located = meta.getCacheLocation(prefix);
        assertEquals(ErrorCode.OK, located.getHeader().getStatus().getCode());
        assertEquals(2, located.getLocationsCount(), "both written blocks found");
        byte[] json = meta.getCacheLocationJson(prefix);
        assertTrue(new String(json, java.nio.charset.StandardCharsets.UTF_8).contains("\"locations\""));
        assertEquals(ErrorCode.OK, meta.getCacheLocationAsync(prefix).toCompletableFuture().join().getHeader()
                .getStatus().getCode());
        assertEquals(2, meta.getCacheLocationLen(GetCacheLocationLenRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").setQueryType(QueryType.QT_PREFIX_MATCH).addBlockKeys(1).addBlockKeys(2)
                .build()).getCacheLocationLen());
        assertEquals(ErrorCode.OK, meta.getCacheMeta(GetCacheMetaRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").addBlockKeys(1).build()).getHeader().getStatus().getCode());
        assertEquals(ErrorCode.OK, meta.getInstanceInfo(GetInstanceInfoRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").build()).getHeader().getStatus().getCode());
        assertEquals(ErrorCode.OK, meta.getClusterInfo(GetClusterInfoRequest.newBuilder().setTraceId("t").build())
                .getHeader().getStatus().getCode());
        // what needs usage, slots or the registry's writes waits for the rebuild
        assertEquals(ErrorCode.SERVER_NOT_LEADER, meta.startWriteCache(StartWriteCacheRequest.newBuilder()
                .setTraceId("t").setInstanceId("i").addBlockKeys(3).setWriteTimeoutSeconds(30).build())
                .getHeader().getStatus().getCode());
        assertEquals(ErrorCode.SERVER_NOT_LEADER, meta.removeCache(RemoveCacheRequest.newBuilder().setTraceId("t")
                .setInstanceId("i").addBlockKeys(1).build()).getHeader().getStatus().getCode());
        assertEquals(ErrorCode.SERVER_NOT_LEADER, meta.registerInstance(reg.toBuilder().setInstanceId("j").build())
                .getHeader().getStatus().getCode());

        lookups = false; // the index is not loaded yet
        assertEquals(ErrorCode.SERVER_NOT_LEADER, meta.getCacheLocation(prefix).getHeader().getStatus().getCode());
        assertEquals(ErrorCode.SERVER_NOT_LEADER, meta.getCacheLocationAsync(prefix).toCompletableFuture().join()
                .getHeader().getStatus().getCode());

        assertTrue(KvcmMeta.isLookup(prefix));
        assertFalse(KvcmMeta.isLookup(reg));
        store.close();
    }
}
