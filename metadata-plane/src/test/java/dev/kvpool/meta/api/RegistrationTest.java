package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.2 Registration (items 21–34, and 126), over HTTP and gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class RegistrationTest extends KvcmTestBase {
    /** §3.1.4, byte-exact for the default startup config. */
    static final String DEFAULT_STORAGE_CONFIGS = "[{\"type\":\"file\",\"is_available\":true,\"global_unique_name\":"
            + "\"nfs_01\",\"storage_spec\":{\"root_path\":\"/tmp/nfs/\",\"key_count_per_file\":8}}]";

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items21to23_storageConfigs(Transport t) {
        RegisterInstanceResponse r = api(t).register(reg(uid("reg")).build());
        assertOk(r);
        JsonNode arr = MetaApi.tree(r.getStorageConfigs());
        assertTrue(arr.isArray() && arr.size() >= 1, r.getStorageConfigs());                  // 21
        assertEquals(DEFAULT_STORAGE_CONFIGS, r.getStorageConfigs());                          // 22
        for (JsonNode e : arr) {                                                                // 23
            List<String> keys = new ArrayList<>();
            e.fieldNames().forEachRemaining(keys::add);
            assertEquals(List.of("type", "is_available", "global_unique_name", "storage_spec"), keys);
        }
        assertEquals("", r.getExtraInfo());                                                     // 126
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item126_extraInfoPrintedOverHttp(Transport t) {
        String raw = MetaApi.post("registerInstance", dev.kvpool.api.json.ProtoJson.printToString(reg(uid("xi")).build()));
        assertTrue(raw.contains("\"extra_info\":\"\""), raw);
    }

    private RegisterInstanceRequest.Builder twoSpecs(String id) {
        return reg(id, 128, "tp0", 1024, "tp1", 2048);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items24to28_identity(Transport t) {
        MetaApi a = api(t);
        String id = uid("ident");
        RegisterInstanceRequest base = twoSpecs(id).setModelDeployment(twoSpecs(id).getModelDeployment().toBuilder()
                .setUserData("original")).build();
        assertOk(a.register(base));
        assertOk(a.register(base));                                                             // 24
        assertOk(a.register(base.toBuilder().setTraceId("other").build()));

        List<UnaryOperator<RegisterInstanceRequest.Builder>> different = List.of(
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().setModelName("other_model")), // 25
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().setDtype("BF16")),
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().setTpSize(2)),
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().setExtra("e")),
                b -> b.setLocationSpecInfos(1, LocationSpecInfo.newBuilder().setName("tp1").setSize(4096)), // 26
                b -> b.clearLocationSpecInfos().addLocationSpecInfos(base.getLocationSpecInfos(1))
                        .addLocationSpecInfos(base.getLocationSpecInfos(0)),
                b -> b.setBlockSize(64),
                b -> b.removeLocationSpecInfos(1),
                b -> b.addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("g").addSpecNames("tp0")));
        for (int i = 0; i < different.size(); i++) {
            RegisterInstanceResponse r = a.register(different.get(i).apply(base.toBuilder()).build());
            assertCode(ErrorCode.DUPLICATE_ENTITY, r);
            assertEquals("", r.getStorageConfigs(), "case " + i);
        }

        // 27: user_data is not part of the identity, and the stored copy keeps the original
        assertOk(a.register(base.toBuilder().setModelDeployment(base.getModelDeployment().toBuilder()
                .setUserData("changed")).build()));
        // 28: the request's group is ignored for an existing id, even a group that does not exist
        RegisterInstanceResponse other = a.register(base.toBuilder().setInstanceGroup("no-such-group").build());
        assertOk(other);
        assertTrue(other.getStorageConfigs().startsWith("[{"), other.getStorageConfigs());
        GetInstanceInfoResponse info = a.info(GetInstanceInfoRequest.newBuilder().setTraceId("t").setInstanceId(id).build());
        assertOk(info);
        assertEquals("original", info.getInstanceInfo().getModelDeployment().getUserData());
        assertEquals("default", info.getInstanceGroup());
        assertEquals("default", info.getInstanceInfo().getInstanceGroupName());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items29and30_validation(Transport t) {
        MetaApi a = api(t);
        RegisterInstanceResponse noGroup = a.register(reg(uid("nogroup")).setInstanceGroup("no-such-group").build());
        assertNotOk(noGroup);                                                                    // 29
        assertEquals("", noGroup.getStorageConfigs());
        String id = uid("invalid");
        List<UnaryOperator<RegisterInstanceRequest.Builder>> invalid = List.of(
                RegisterInstanceRequest.Builder::clearInstanceGroup,
                RegisterInstanceRequest.Builder::clearInstanceId,
                RegisterInstanceRequest.Builder::clearModelDeployment,
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().clearModelName()),
                b -> b.setModelDeployment(b.getModelDeployment().toBuilder().clearDtype()),
                RegisterInstanceRequest.Builder::clearLocationSpecInfos,
                b -> b.addLocationSpecInfos(LocationSpecInfo.newBuilder().setSize(10)),
                // KVPool's SHOULDs of §3.1.1
                b -> b.addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(10)),
                b -> b.setLocationSpecInfos(0, LocationSpecInfo.newBuilder().setName("tp0").setSize(-1)),
                b -> b.addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("g").addSpecNames("tp9")));
        for (int i = 0; i < invalid.size(); i++) {
            assertCode(ErrorCode.INVALID_ARGUMENT, a.register(invalid.get(i).apply(reg(id)).build()));
        }
        // none of them registered anything
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.info(GetInstanceInfoRequest.newBuilder().setInstanceId(id).build()));
        // block_size 0 is accepted (key-only clients)
        assertOk(a.register(reg(uid("bs0"), 0, "tp0", 1024).build()));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item31_concurrentIdenticalRegistrations(Transport t) throws Exception {
        MetaApi a = api(t);
        String id = uid("conc");
        RegisterInstanceRequest req = reg(id).build();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<RegisterInstanceResponse>> fs = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                fs.add(pool.submit(() -> {
                    go.await(10, TimeUnit.SECONDS);
                    return a.register(req);
                }));
            }
            go.countDown();
            for (Future<RegisterInstanceResponse> f : fs) {
                assertOk(f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        long listed = runtime.registry().instances().stream().filter(i -> i.id.equals(id)).count();
        assertEquals(1, listed);
        // KVPool's instance listing shows it once
        JsonNode all = MetaApi.tree(io.restassured.RestAssured.get("/api/v1/instances").asString());
        int seen = 0;
        for (JsonNode n : all) {
            if (n.path("instance_id").asText().equals(id)) {
                seen++;
            }
        }
        assertEquals(1, seen);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items32to34_getInstanceInfo(Transport t) {
        MetaApi a = api(t);
        String id = uid("info");
        RegisterInstanceRequest req = reg(id, 128, "tp1", 2048, "tp0", 1024).setModelDeployment(ModelDeployment.newBuilder()
                        .setModelName("test_model").setDtype("FP8").setUseMla(true).setTpSize(2).setDpSize(3)
                        .setLoraName("lora").setPpSize(1).setExtra("x").setUserData("u"))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("zeta").addSpecNames("tp1").addSpecNames("tp0"))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("alpha").addSpecNames("tp1"))
                .build();
        assertOk(a.register(req));
        GetInstanceInfoResponse r = a.info(GetInstanceInfoRequest.newBuilder().setTraceId("t").setInstanceId(id).build());
        assertOk(r);
        assertEquals("default", r.getInstanceGroup());                                           // 32
        InstanceInfo info = r.getInstanceInfo();
        assertEquals(req.getModelDeployment(), info.getModelDeployment());
        assertEquals(id, info.getInstanceId());
        assertEquals(128, info.getBlockSize());
        assertEquals("default_quota_group", info.getQuotaGroupName());
        assertEquals(req.getLocationSpecInfosList(), info.getLocationSpecInfosList());          // registration order
        assertEquals(List.of("alpha", "zeta"), info.getLocationSpecGroupsList().stream()
                .map(LocationSpecGroup::getName).toList());                                     // 34
        assertEquals(List.of("tp0", "tp1"), info.getLocationSpecGroups(1).getSpecNamesList());
        // the same groups listed in another order are the same identity
        assertOk(a.register(req.toBuilder().clearLocationSpecGroups()
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("alpha").addSpecNames("tp1"))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("zeta").addSpecNames("tp0").addSpecNames("tp1"))
                .build()));

        assertCode(ErrorCode.INSTANCE_NOT_EXIST,                                                 // 33
                a.info(GetInstanceInfoRequest.newBuilder().setInstanceId(uid("unknown")).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.info(GetInstanceInfoRequest.newBuilder().setInstanceId("").build()));
    }
}
