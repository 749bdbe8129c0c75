package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.admin.AdminServiceGrpc;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.ListStorageRequest;
import dev.kvpool.control.testing.Api;
import dev.kvpool.testing.Await;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** KVCM admin routes: HTTP (POST /api/<rpc>, proto3 JSON, KVCM envelope) and gRPC AdminService, same services. */
@QuarkusTest
class KvcmAdminRoutesIT {

    static ValidatableResponse kvcm(String rpc, String body) {
        return admin().body(body).post("/api/" + rpc).then().statusCode(200).contentType("application/json");
    }

    static final String GROUP = """
            {"trace_id":"t","instance_group":{"name":"%s","storage_candidates":["kv_nfs"],
             "global_quota_group_name":"q","max_instance_count":"10",
             "quota":{"capacity":"30000","quota_config":[{"storage_type":4,"capacity":"10000"}]},
             "cache_config":{"reclaim_strategy":{"storage_unique_name":"kv_nfs","reclaim_policy":1,
               "trigger_strategy":{"used_percentage":0.8},"delay_before_delete_ms":1000},
               "data_storage_strategy":"CPS_PREFER_3FS",
               "meta_indexer_config":{"max_key_count":"1000","mutex_shard_num":"16",
                 "meta_storage_backend_config":{"storage_type":"local"},"meta_cache_policy_config":{"type":"LRU"}}},
             "user_data":"u","version":"%d"}%s}""";

    @Test
    void storagesGroupsInstancesThroughKvcmHttp() {
        kvcm("addStorage", """
                {"trace_id":"t1","storage":{"global_unique_name":"kv_nfs","nfs":{"root_path":"/tmp/nfs/","key_count_per_file":8}}}""")
                .body("header.status.code", is("OK")).body("header.request_id", startsWith("t1_"));
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"kv_nfs","nfs":{"root_path":"/tmp/nfs/"}}}""")
                .body("header.status.code", not(is("OK")));
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"kv_bad","nfs":{}}}""")
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"kv_local","local":{}}}""")
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("listStorage", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"))
                .body("storage.global_unique_name", hasItem("kv_nfs"))
                .body("storage.find { it.global_unique_name == 'kv_nfs' }.nfs.key_count_per_file", is(8));
        kvcm("disableStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"kv_nfs\"}").body("header.status.code", is("OK"));
        admin().get("/api/v1/storages/kv_nfs").then().body("enabled", is(false));
        kvcm("enableStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"kv_nfs\"}").body("header.status.code", is("OK"));
        kvcm("enableStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"nope\"}")
                .body("header.status.code", is("INTERNAL_ERROR"));

        kvcm("createInstanceGroup", GROUP.formatted("kvg", 1, "")).body("header.status.code", is("OK"));
        kvcm("createInstanceGroup", GROUP.formatted("kvg", 1, "")).body("header.status.code", not(is("OK")));
        kvcm("getInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kvg\"}").body("header.status.code", is("OK"))
                .body("instance_group.version", is("1")).body("instance_group.quota.capacity", is("30000"))
                .body("instance_group.cache_config.data_storage_strategy", is("CPS_PREFER_3FS"))
                .body("instance_group.quota.quota_config[0].storage_type", is("ST_NFS"));
        admin().get("/api/v1/instance-groups/kvg").then().body("waterLevels.softPercent", is(80))
                .body("allowAnonymousMeta", is(true))
                .body("storageTypeQuotas.nfs", is(10000)).body("quotaGroupName", is("q"));
        // current_version must match; the new version must grow
        kvcm("updateInstanceGroup", GROUP.formatted("kvg", 2, ",\"current_version\":\"7\""))
                .body("header.status.code", is("INTERNAL_ERROR"));
        kvcm("updateInstanceGroup", GROUP.formatted("kvg", 1, ",\"current_version\":\"1\""))
                .body("header.status.code", is("INTERNAL_ERROR"));
        kvcm("updateInstanceGroup", GROUP.formatted("kvg", 2, ",\"current_version\":\"1\"").replace("0.8", "0.5"))
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/instance-groups/kvg").then().header("ETag", "\"2\"").body("waterLevels.softPercent", is(50));
        // missing required cache_config fields → 5; a candidate that is not a storage name → 5; an unknown candidate
        // is stored as given (§3.11) and shown as missing
        kvcm("createInstanceGroup", GROUP.formatted("kvg2", 1, "").replace("\"CPS_PREFER_3FS\"", "0"))
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("createInstanceGroup", GROUP.formatted("kvg3", 1, "").replace("[\"kv_nfs\"]", "[\"no such/storage\"]"))
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("createInstanceGroup", GROUP.formatted("kvg3", 1, "").replace("[\"kv_nfs\"]", "[\"ghost\"]"))
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/instance-groups/kvg3").then().body("storageCandidates", contains("ghost"))
                .body("missingStorages", contains("ghost"));
        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kvg3\"}").body("header.status.code", is("OK"));

        String reg = """
                {"trace_id":"t","instance_group":"kvg","instance_id":"kv-inst","block_size":4,
                 "model_deployment":{"model_name":"m","dtype":"bf16"},"location_spec_infos":[{"name":"tp0","size":"4096"}]}""";
        kvcm("registerInstance", reg).body("header.status.code", is("OK"));
        kvcm("registerInstance", reg).body("header.status.code", is("OK"));
        kvcm("registerInstance", reg.replace("\"block_size\":4", "\"block_size\":8")).body("header.status.code", is("INTERNAL_ERROR"));
        kvcm("registerInstance", reg.replace("\"bf16\"", "\"\"")).body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"kv-inst\"}").body("header.status.code", is("OK"))
                .body("header.status.message", is("")).body("instance_info.instance_group_name", is("kvg"))
                .body("instance_info.quota_group_name", is("q")).body("instance_info.location_spec_infos[0].size", is("4096"));
        kvcm("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"ghost\"}").body("header.status.code", is("INTERNAL_ERROR"));
        kvcm("listInstanceInfo", "{\"trace_id\":\"t\",\"instance_group_name\":\"kvg\"}")
                .body("instance_info.instance_id", contains("kv-inst"));
        kvcm("listInstanceInfo", "{\"trace_id\":\"t\",\"instance_group_name\":\"unknown\"}")
                .body("header.status.code", is("OK")).body("instance_info", empty());
        // refusals KVCM's baseline lacks: storage referenced by a group, group with instances
        kvcm("removeStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"kv_nfs\"}")
                .body("header.status.code", is("INTERNAL_ERROR")).body("header.status.message", containsString("kvg"));
        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kvg\"}")
                .body("header.status.code", is("INTERNAL_ERROR")).body("header.status.message", containsString("kv-inst"));
        kvcm("getCacheMeta", "{\"trace_id\":\"t\",\"instance_id\":\"kv-inst\",\"block_keys\":[1]}")
                .body("header.status.code", is("UNSUPPORTED"));
        kvcm("removeInstance", "{\"trace_id\":\"t\",\"instance_id\":\"kv-inst\"}").body("header.status.code", is("OK"));
        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kvg\"}").body("header.status.code", is("OK"));
        kvcm("removeStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"kv_nfs\"}").body("header.status.code", is("OK"));
    }

    @Test
    void accountsSnapshotsAndServiceRoutes() throws Exception {
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvuser\",\"password\":\"Kv-User-Passw0rd\",\"role\":0}")
                .body("header.status.code", is("OK"));
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"\",\"password\":\"x\"}")
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"weak\",\"password\":\"123\"}")
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("listAccount", "{\"trace_id\":\"t\"}").body("accounts.find { it.user_name == 'kvuser' }.role", is("ROLE_USER"))
                .body("accounts.find { it.user_name == 'admin' }.role", is("ROLE_ADMIN"))
                .body(not(containsString("pbkdf2")));
        String snap = kvcm("genConfigSnapshot", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"))
                .extract().path("config_snapshot");
        assertTrue(snap.contains("\"format\":\"kvpool-config-v1\""), snap);
        // by default no account and no hash leaves the control plane (kvpool.control.snapshot.include-accounts)
        assertTrue(!snap.contains("pbkdf2") && !snap.contains("password_hash") && !snap.contains("\"accounts\""), snap);
        kvcm("deleteAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvuser\"}").body("header.status.code", is("OK"));
        kvcm("deleteAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvuser\"}").body("header.status.code", is("INTERNAL_ERROR"));
        // loading the snapshot applies what it holds (no accounts: kvuser stays deleted); a broken one applies nothing
        kvcm("loadConfigSnapshot", "{\"trace_id\":\"t\",\"config_snapshot\":" + com.fasterxml.jackson.databind.node
                .TextNode.valueOf(snap) + "}").body("header.status.code", is("OK"));
        given().contentType("application/json").body(java.util.Map.of("user", "kvuser", "password", "Kv-User-Passw0rd"))
                .post("/api/v1/tokens").then().statusCode(401);
        String broken = snap.substring(0, snap.length() - 1)
                + ",\"accounts\":[{\"user_name\":\"x\",\"role\":\"tenant\",\"password_hash\":\"plain\"}]}";
        kvcm("loadConfigSnapshot", "{\"trace_id\":\"t\",\"config_snapshot\":" + com.fasterxml.jackson.databind.node
                .TextNode.valueOf(broken) + "}").body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("loadConfigSnapshot", "{\"trace_id\":\"t\",\"config_snapshot\":\"nope\"}")
                .body("header.status.code", is("INVALID_ARGUMENT"));

        kvcm("listStorage", "{\"trace_id\":\"t\"}");
        kvcm("getMetrics", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"))
                .body("metrics.find { it.metric_name == 'service.query_counter' && it.metric_tags[0].tag_value == 'ListStorage' }"
                        + ".metric_value.int_value", notNullValue());
        // a lone replica leads within a few seconds (another test class may just have demoted it: KVCM's tests wait too)
        Await.within(Duration.ofSeconds(10), () -> Boolean.TRUE.equals(given().body("{}").post("/api/checkHealth")
                .then().extract().path("is_leader")));
        given().body("{\"trace_id\":\"h\"}").post("/api/checkHealth").then().statusCode(200)
                .body("is_leader", is(true)).body("is_health", is(true));
        String self = given().body("{}").post("/api/getManagerClusterInfo").then().statusCode(200)
                .body("self_node_id", not(emptyString())).extract().path("self_node_id");
        given().body("{}").post("/api/getManagerClusterInfo").then().body("leader_node_id", is(self));
        kvcm("updateLogger", "{\"trace_id\":\"t\",\"log_level\":\"verbose\"}").body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("updateLogger", "{\"trace_id\":\"t\",\"log_level\":\"info\"}").body("header.status.code", is("OK"));
        kvcm("updateLeaderElectorConfig", "{\"trace_id\":\"t\",\"campaign_delay_time_ms\":\"500\"}");
        kvcm("getLeaderElectorConfig", "{\"trace_id\":\"t\"}").body("campaign_delay_time_ms", is("500"));
        kvcm("leaderDemote", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"));
        // demoted: no longer leader, and a second demote is KVCM's SERVER_NOT_LEADER; it leads again after the delay
        given().body("{}").post("/api/checkHealth").then().body("is_leader", is(false));
        kvcm("leaderDemote", "{\"trace_id\":\"t\"}").body("header.status.code", is("SERVER_NOT_LEADER"))
                .body("header.status.message", is("Server is not leader")).body("header.request_id", startsWith("t_"));
        // a leader-only route on the lone replica waits for it to lead again (KVCM's clients would retry on 9)
        kvcm("listStorage", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"));
        given().body("{}").post("/api/checkHealth").then().body("is_leader", is(true));
        // malformed JSON → 400 {}; unknown route → 404
        admin().body("{\"trace_id\": [").post("/api/listStorage").then().statusCode(400).body(is("{}"));
        admin().body("{}").post("/api/noSuchRpc").then().statusCode(404);
    }

    @Test
    void grpcAdminServiceWithCredentials() throws Exception {
        Api.nfsStorage("grpc_nfs");
        ManagedChannel ch = ManagedChannelBuilder.forAddress("localhost", 16491).usePlaintext().build();
        try {
            var anonymous = AdminServiceGrpc.newBlockingStub(ch);
            try {
                anonymous.listStorage(ListStorageRequest.newBuilder().setTraceId("g").build());
                throw new AssertionError("anonymous ListStorage must fail");
            } catch (StatusRuntimeException e) {
                assertEquals(io.grpc.Status.Code.UNAUTHENTICATED, e.getStatus().getCode());
            }
            Metadata md = new Metadata();
            md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + Api.adminToken());
            var stub = AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
            var r = stub.listStorage(ListStorageRequest.newBuilder().setTraceId("g").build());
            assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode());
            assertTrue(r.getStorageList().stream().anyMatch(s -> s.getGlobalUniqueName().equals("grpc_nfs")));
            // the default password policy (strict) refuses a KVCM script's short password over gRPC as over HTTP
            var weak = stub.addAccount(dev.kvpool.api.proto.admin.AddAccountRequest.newBuilder().setTraceId("g")
                    .setUserName("grpc-weak").setPassword("123").build());
            assertEquals(ErrorCode.INVALID_ARGUMENT, weak.getHeader().getStatus().getCode());
            assertTrue(weak.getHeader().getStatus().getMessage().contains("at least 12 characters"),
                    weak.getHeader().getStatus().getMessage());
            Metadata tmd = new Metadata();
            tmd.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER),
                    "Bearer " + Api.account("grpc-tenant", "tenant"));
            try {
                AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(tmd))
                        .listStorage(ListStorageRequest.newBuilder().build());
                throw new AssertionError("a tenant may not list storages");
            } catch (StatusRuntimeException e) {
                assertEquals(io.grpc.Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
            }
        } finally {
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
