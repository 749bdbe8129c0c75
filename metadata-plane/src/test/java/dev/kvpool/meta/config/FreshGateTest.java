package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoRequest;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import dev.kvpool.meta.kvcm.FreshGate;
import dev.kvpool.meta.registry.Registry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a KVCM call naming something unknown is answered after the fetch (FreshGate over a real registry on the
 * embedded store): the codes and messages of issue 34 part 3, and no fetch where none is needed.
 */
class FreshGateTest {
    private static final ObjectMapper M = new ObjectMapper();
    @TempDir
    Path dir;
    private EmbeddedStore store;
    private Registry registry;
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final AtomicInteger fetches = new AtomicInteger();

    @BeforeEach
    void registry() throws Exception {
        Path cfg = dir.resolve("startup.json");
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_f",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":4}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_f"],"global_quota_group_name":"q",
                   "quota":{"capacity":1000000000},
                   "cache_config":{"meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs")));
        store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
        registry = new Registry(store, StartupConfig.load(cfg), store::index);
        registry.register(register("known", "g"));
    }

    @AfterEach
    void close() throws Exception {
        pool.shutdownNow();
        store.close();
    }

    private static RegisterInstanceRequest register(String id, String group) {
        return RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup(group).setInstanceId(id)
                .setBlockSize(4).setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096)).build();
    }

    private static GetCacheLocationRequest locate(String id) {
        return GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId(id).addBlockKeys(1).build();
    }

    private FreshConfig fresh(FreshConfig.Fetcher f, long waitMs) {
        return new FreshConfig(() -> {
            fetches.incrementAndGet();
            return f.fetch();
        }, new FreshConfig.Settings(Duration.ofMillis(waitMs), Duration.ZERO, Duration.ofSeconds(1), 100),
                System::currentTimeMillis, pool);
    }

    private void addGroup(String name) {
        ObjectNode v = M.createObjectNode().put("name", name).put("quotaBytes", 1_000_000);
        v.putArray("storageCandidates").add("nfs_f");
        registry.putGroup(ConfigViews.groupConfig(v));
    }

    @Test
    void nothingUnknownOrNoControlPlaneGoesOnAtOnce() {
        FreshConfig f = fresh(() -> true, 1000);
        assertNull(FreshGate.check(f, registry, register("new-one", "g")), "known group: no fetch");
        assertNull(FreshGate.check(f, registry, locate("known")));
        assertNull(FreshGate.check(f, registry, GetClusterInfoRequest.newBuilder().setTraceId("t").build()));
        assertNull(FreshGate.check(f, registry, locate("")), "empty id: §1.9 answers it");
        assertNull(FreshGate.check(f, registry, locate("bad id/with slash")), "invalid id: validation answers it");
        assertNull(FreshGate.check(f, registry, register("known", "other")), "a known instance: the identity check");
        assertNull(FreshGate.check(null, registry, locate("unknown")), "standalone: never fetches");
        assertNull(FreshGate.check(null, registry, register("x", "unknown-group")));
        assertEquals(0, fetches.get());
    }

    @Test
    void aGroupTheFetchBringsGoesOnToTheTokenCheck() throws Exception {
        FreshConfig f = fresh(() -> {
            addGroup("g2");
            return true;
        }, 1000);
        var r = FreshGate.check(f, registry, register("i2", "g2"));
        assertNotNull(r);
        assertNull(r.get(5, TimeUnit.SECONDS));
        assertEquals(1, fetches.get());
        assertNotNull(registry.group("g2"));
    }

    @Test
    void aGroupThatDoesNotExistIsSaidSo() throws Exception {
        FreshConfig f = fresh(() -> true, 1000);
        MetaAuth.Refusal r = FreshGate.check(f, registry, register("i3", "nope")).get(5, TimeUnit.SECONDS);
        assertEquals(ErrorCode.INTERNAL_ERROR, r.code());
        assertEquals("instance group 'nope' does not exist", r.message());
        assertTrue(!r.unauthenticated());
    }

    @Test
    void anInstanceThatDoesNotExistGoesOnToInstanceNotExist() throws Exception {
        FreshConfig f = fresh(() -> true, 1000);
        assertNull(FreshGate.check(f, registry, locate("ghost")).get(5, TimeUnit.SECONDS),
                "the call answers INSTANCE_NOT_EXIST itself (§1.9), the token check lets it through");
        assertEquals(1, fetches.get());
    }

    @Test
    void aSilentControlPlaneIsServiceNotReadyAfterTheWait() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        FreshConfig f = fresh(() -> {
            try {
                never.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return true;
        }, 200);
        long t0 = System.nanoTime();
        MetaAuth.Refusal r = FreshGate.check(f, registry, locate("late")).get(5, TimeUnit.SECONDS);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(ErrorCode.SERVICE_NOT_READY, r.code());
        assertTrue(r.message().contains("instance 'late'") && r.message().contains("did not answer within 200 ms"),
                r.message());
        assertTrue(ms >= 190 && ms < 3000, "waited " + ms);
        never.countDown();
    }

    @Test
    void anUnreachableControlPlaneIsServiceNotReadyAtOnce() throws Exception {
        FreshConfig f = fresh(() -> false, 5000);
        long t0 = System.nanoTime();
        MetaAuth.Refusal r = FreshGate.check(f, registry, register("i4", "maybe")).get(5, TimeUnit.SECONDS);
        assertEquals(ErrorCode.SERVICE_NOT_READY, r.code());
        assertTrue(r.message().contains("instance group 'maybe'") && r.message().contains("unreachable"), r.message());
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 2000);
    }
}
