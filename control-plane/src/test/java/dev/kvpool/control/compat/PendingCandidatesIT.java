package dev.kvpool.control.compat;

import static dev.kvpool.control.testing.Api.admin;
import static org.hamcrest.Matchers.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.admin.AdminServiceGrpc;
import dev.kvpool.api.proto.admin.CreateInstanceGroupRequest;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.GetInstanceGroupRequest;
import dev.kvpool.api.proto.admin.RegisterInstanceRequest;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.outbox.OutboxEvent;
import dev.kvpool.control.outbox.OutboxRepository;
import dev.kvpool.control.testing.Api;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;
import jakarta.inject.Inject;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * KVCM §3.11 CreateInstanceGroup: "stored as given; candidate names need not exist yet". The same holds for REST. A
 * candidate that names no storage is shown as missing in the REST view, recomputed on every read; events and
 * snapshots carry the group as given (no missing list: each reader decides from its own storages).
 */
@QuarkusTest
class PendingCandidatesIT {
    @Inject
    OutboxRepository outbox;

    static final String GROUP = """
            {"trace_id":"t","instance_group":{"name":"%s","storage_candidates":%s,
             "global_quota_group_name":"q","quota":{"capacity":"30000"},
             "cache_config":{"reclaim_strategy":{"storage_unique_name":"pc_later","reclaim_policy":1,
               "trigger_strategy":{"used_percentage":0.8}},
               "data_storage_strategy":"CPS_PREFER_3FS",
               "meta_indexer_config":{"max_key_count":"1000","mutex_shard_num":"16",
                 "meta_storage_backend_config":{"storage_type":"local"},"meta_cache_policy_config":{"type":"LRU"}}},
             "version":"1"}}""";

    static ValidatableResponse kvcm(String rpc, String body) {
        return admin().body(body).post("/api/" + rpc).then().statusCode(200);
    }

    static ValidatableResponse group(String name) {
        return admin().get("/api/v1/instance-groups/" + name).then().statusCode(200);
    }

    JsonNode lastEvent(String kind, String name) {
        List<OutboxEvent> es = QuarkusTransaction.requiringNew().call(() -> outbox.list(
                "kind = ?1 and name = ?2 order by position", kind, name));
        return Json.read(es.get(es.size() - 1).payload);
    }

    @Test
    void pendingCandidatesAreStoredAsGivenAndShownMissingUntilTheStorageExists() throws Exception {
        Api.nfsStorage("pc_have");
        // REST: accepted, the unknown name shown as missing, in list order
        admin().body(Map.of("name", "pc-rest", "quotaBytes", 1_000_000, "storageCandidates",
                        List.of("pc_later", "pc_have"))).post("/api/v1/instance-groups").then().statusCode(201)
                .body("storageCandidates", contains("pc_later", "pc_have")).body("missingStorages", contains("pc_later"));
        // the name syntax and the count are still checked
        admin().body(Map.of("name", "pc-bad", "quotaBytes", 1000, "storageCandidates", List.of("pc_have", "a/b")))
                .post("/api/v1/instance-groups").then().statusCode(400).body("field", is("storageCandidates[1]"));
        admin().body(Map.of("name", "pc-bad", "quotaBytes", 1000, "storageCandidates",
                java.util.stream.IntStream.range(0, 1000).mapToObj(i -> "s" + i).toList()))
                .post("/api/v1/instance-groups").then().statusCode(400).body("field", is("storageCandidates"));
        admin().get("/api/v1/instance-groups/pc-bad").then().statusCode(404);

        // KVCM over HTTP: OK, stored as given
        kvcm("createInstanceGroup", GROUP.formatted("pc-kvcm", "[\"pc_later\",\"pc_other\"]"))
                .body("header.status.code", is("OK"));
        kvcm("getInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"pc-kvcm\"}")
                .body("instance_group.storage_candidates", contains("pc_later", "pc_other"));
        group("pc-kvcm").body("missingStorages", contains("pc_later", "pc_other"));
        // an update keeps naming a missing storage
        kvcm("updateInstanceGroup", GROUP.formatted("pc-kvcm", "[\"pc_later\",\"pc_other\"]")
                .replace("\"version\":\"1\"}", "\"version\":\"2\"},\"current_version\":\"1\""))
                .body("header.status.code", is("OK"));
        group("pc-kvcm").header("ETag", "\"2\"").body("missingStorages", contains("pc_later", "pc_other"));

        // the outbox event and the snapshot carry the group as given, without the (per-reader) missing list
        JsonNode ev = lastEvent(ConfigEvent.INSTANCE_GROUP, "pc-kvcm").path("object");
        assertEquals("[\"pc_later\",\"pc_other\"]", ev.path("storageCandidates").toString(), ev.toString());
        assertFalse(ev.has("missingStorages"), ev.toString());
        String snap = admin().get("/api/v1/config/snapshot").then().statusCode(200).extract().asString();
        assertTrue(snap.contains("pc-kvcm") && !snap.contains("missingStorages"), snap);

        ManagedChannel ch = ManagedChannelBuilder.forAddress("localhost", 16491).usePlaintext().build();
        try {
            Metadata md = new Metadata();
            md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + Api.adminToken());
            var stub = AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
            // KVCM over gRPC: the same
            var created = stub.createInstanceGroup(ProtoJson.merge(GROUP.formatted("pc-grpc", "[\"pc_grpc_later\"]"),
                    CreateInstanceGroupRequest.newBuilder()).build());
            assertEquals(ErrorCode.OK, created.getHeader().getStatus().getCode(), created.toString());
            assertEquals(List.of("pc_grpc_later"), stub.getInstanceGroup(GetInstanceGroupRequest.newBuilder()
                    .setName("pc-grpc").build()).getInstanceGroup().getStorageCandidatesList());
            group("pc-grpc").body("missingStorages", contains("pc_grpc_later"));
            // an instance may register into a group none of whose candidates exists yet (KVCM does; writes wait)
            var reg = stub.registerInstance(ProtoJson.merge("""
                    {"trace_id":"t","instance_group":"pc-grpc","instance_id":"pc-inst","block_size":4,
                     "model_deployment":{"model_name":"m","dtype":"bf16"},
                     "location_spec_infos":[{"name":"tp0","size":"4096"}]}""", RegisterInstanceRequest.newBuilder()).build());
            assertEquals(ErrorCode.OK, reg.getHeader().getStatus().getCode(), reg.toString());
        } finally {
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }

        // the storage added later (KVCM AddStorage): present at the next read, for every group naming it
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"pc_later","nfs":{"root_path":"/tmp/pc_later/"}}}""")
                .body("header.status.code", is("OK"));
        group("pc-rest").body("missingStorages", empty());
        group("pc-kvcm").body("missingStorages", contains("pc_other"));
        admin().get("/api/v1/instance-groups?storage=pc_later").then().statusCode(200)
                .body("items.name", hasItems("pc-rest", "pc-kvcm"))
                .body("items.find { it.name == 'pc-kvcm' }.missingStorages", contains("pc_other"));
        Api.nfsStorage("pc_grpc_later");
        group("pc-grpc").body("missingStorages", empty());
        // what a GET returns may be PUT back as it is (missingStorages is read-only, like usage and version)
        io.restassured.response.Response got = admin().get("/api/v1/instance-groups/pc-kvcm");
        admin().header("If-Match", got.header("ETag").replace("\"", "")).body(got.asString())
                .put("/api/v1/instance-groups/pc-kvcm").then().statusCode(200)
                .body("missingStorages", contains("pc_other"));
        // a storage named by a group is not deleted from under it (so a candidate turns missing only by a group
        // update naming a new storage, never by a delete)
        admin().delete("/api/v1/storages/pc_later").then().statusCode(409).body("detail", containsString("pc-rest"));
        kvcm("removeStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"pc_later\"}")
                .body("header.status.code", is("INTERNAL_ERROR")).body("header.status.message", containsString("pc-kvcm"));
        group("pc-rest").body("missingStorages", empty());
    }
}
