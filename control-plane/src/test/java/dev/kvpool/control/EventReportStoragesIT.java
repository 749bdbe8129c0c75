package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static org.hamcrest.Matchers.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.admin.AddStorageRequest;
import dev.kvpool.api.proto.admin.AdminServiceGrpc;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.EventReportStorageSpec;
import dev.kvpool.api.proto.admin.GetInstanceGroupRequest;
import dev.kvpool.api.proto.admin.ListStorageRequest;
import dev.kvpool.api.proto.admin.StorageConfig;
import dev.kvpool.api.proto.admin.StorageType;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Event-report storages (kvcm-engine-events.md §6.1): two REST types with five durations and KVCM's defaults, no bytes
 * (no quotas, never placement candidates), listed in a group's eventReportStorageCandidates; the same through KVCM's
 * admin API (storage_type 11 + event_report oneof 14, InstanceGroup field 10).
 */
@QuarkusTest
class EventReportStoragesIT {
    @Inject
    OutboxRepository outbox;

    static ValidatableResponse kvcm(String rpc, String body) {
        return admin().body(body).post("/api/" + rpc).then().statusCode(200);
    }

    static Map<String, Object> storage(String name, String type, Map<String, Object> spec) {
        Map<String, Object> m = new HashMap<>();
        m.put("name", name);
        m.put("type", type);
        if (spec != null) {
            m.put("spec", spec);
        }
        return m;
    }

    JsonNode lastEvent(String kind, String name) {
        List<OutboxEvent> es = QuarkusTransaction.requiringNew().call(() -> outbox.list(
                "kind = ?1 and name = ?2 order by position", kind, name));
        return Json.read(es.get(es.size() - 1).payload);
    }

    @Test
    void restTypesDefaultsAndBounds() {
        // absent spec: KVCM's five defaults, shown as numbers
        admin().body(storage("er_l1", "event_report_l1p5", null)).post("/api/v1/storages").then().statusCode(201)
                .body("type", is("event_report_l1p5")).body("spec.heartbeat_timeout_ms", is(30000))
                .body("spec.cleanup_grace_ms", is(300000)).body("spec.liveness_check_interval_ms", is(5000))
                .body("spec.snapshot_min_interval_ms", is(30000))
                .body("spec.snapshot_delta_drain_timeout_ms", is(10000));
        // aliases: the enum name, the number, the legacy RTP-LLM name (→ L1P5)
        admin().body(storage("er_l2", "ST_EVENT_REPORT_L2", Map.of("heartbeat_timeout_ms", 1000,
                        "snapshot_delta_drain_timeout_ms", 0))).post("/api/v1/storages").then().statusCode(201)
                .body("type", is("event_report_l2")).body("spec.heartbeat_timeout_ms", is(1000))
                .body("spec.snapshot_delta_drain_timeout_ms", is(0)).body("spec.cleanup_grace_ms", is(300000));
        admin().body(storage("er_seven", "7", Map.of())).post("/api/v1/storages").then().statusCode(201)
                .body("type", is("event_report_l1p5"));
        admin().body(storage("er_legacy", "st_event_report", Map.of())).post("/api/v1/storages").then()
                .statusCode(201).body("type", is("event_report_l1p5"));
        admin().body(storage("er_eight", "8", Map.of())).post("/api/v1/storages").then().statusCode(201)
                .body("type", is("event_report_l2"));
        admin().get("/api/v1/storages?type=event_report_l2").then().statusCode(200)
                .body("items.name", hasItems("er_l2", "er_eight")).body("items.name", not(hasItem("er_l1")));

        // bounds → 400 naming the field; nothing stored
        for (var bad : List.of(
                Map.entry("snapshot_min_interval_ms", 0L), Map.entry("snapshot_min_interval_ms", -5L),
                Map.entry("snapshot_delta_drain_timeout_ms", -1L), Map.entry("heartbeat_timeout_ms", 0L),
                Map.entry("liveness_check_interval_ms", 0L), Map.entry("cleanup_grace_ms", -1L),
                Map.entry("cleanup_grace_ms", 86_400_001L), Map.entry("heartbeat_timeout_ms", Long.MAX_VALUE))) {
            admin().body(storage("er_bad", "event_report_l1p5", Map.of(bad.getKey(), bad.getValue())))
                    .post("/api/v1/storages").then().statusCode(400)
                    .body("field", is("event_report." + bad.getKey()))
                    .body("detail", containsString(bad.getKey()));
        }
        admin().body(storage("er_bad", "event_report_l2", Map.of("heartbeat_timeout_ms", "soon")))
                .post("/api/v1/storages").then().statusCode(400).body("field", is("spec"));
        admin().body(storage("er_bad", "event_report_l2", Map.of("root_path", "/x/")))
                .post("/api/v1/storages").then().statusCode(400).body("field", is("spec"));
        admin().get("/api/v1/storages/er_bad").then().statusCode(404);

        // update: ETag, the new value, the other fields as given (absent → default again)
        String etag = admin().get("/api/v1/storages/er_l1").then().statusCode(200).extract().header("ETag");
        admin().header("If-Match", etag).body(storage("er_l1", "event_report_l1p5", Map.of("cleanup_grace_ms", 0)))
                .put("/api/v1/storages/er_l1").then().statusCode(200).body("spec.cleanup_grace_ms", is(0))
                .body("spec.heartbeat_timeout_ms", is(30000));
        JsonNode ev = lastEvent(ConfigEvent.STORAGE, "er_l1").path("object");
        assertEquals("event_report_l1p5", ev.path("type").asText(), ev.toString());
        assertEquals(0, ev.path("spec").path("cleanup_grace_ms").asLong(-1), ev.toString());
        // the control plane's snapshot (what metadata planes load) carries them like any storage
        admin().get("/api/v1/config/snapshot").then().statusCode(200)
                .body("storages.find { it.name == 'er_l2' }.type", is("event_report_l2"))
                .body("storages.find { it.name == 'er_l2' }.spec.heartbeat_timeout_ms", is(1000));
    }

    @Test
    void groupsKeepDataAndEventReportCandidatesApart() {
        Api.nfsStorage("erg_nfs");
        admin().body(storage("erg_ev", "event_report_l1p5", null)).post("/api/v1/storages").then().statusCode(201);
        // no quota for a type that holds no bytes
        admin().body(Map.of("name", "erg-q", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs"),
                        "storageTypeQuotas", Map.of("event_report_l2", 10))).post("/api/v1/instance-groups").then()
                .statusCode(400).body("field", is("storageTypeQuotas.event_report_l2"));
        // an existing event-report storage is no placement candidate, an existing data storage no event-report one
        admin().body(Map.of("name", "erg-x", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs", "erg_ev")))
                .post("/api/v1/instance-groups").then().statusCode(400).body("field", is("storageCandidates[1]"))
                .body("detail", containsString("eventReportStorageCandidates"));
        admin().body(Map.of("name", "erg-x", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs"),
                        "eventReportStorageCandidates", List.of("erg_ev", "erg_nfs"))).post("/api/v1/instance-groups")
                .then().statusCode(400).body("field", is("eventReportStorageCandidates[1]"));
        admin().body(Map.of("name", "erg-x", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs"),
                        "eventReportStorageCandidates", List.of("erg_ev", "erg_ev"))).post("/api/v1/instance-groups")
                .then().statusCode(400).body("field", is("eventReportStorageCandidates[1]"));
        admin().body(Map.of("name", "erg-x", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs"),
                        "eventReportStorageCandidates", List.of("a/b"))).post("/api/v1/instance-groups")
                .then().statusCode(400).body("field", is("eventReportStorageCandidates[0]"));
        admin().get("/api/v1/instance-groups/erg-x").then().statusCode(404);
        // pending names stay allowed and show as missing
        admin().body(Map.of("name", "erg", "quotaBytes", 1000, "storageCandidates", List.of("erg_nfs"),
                        "eventReportStorageCandidates", List.of("erg_ev", "erg_later"))).post("/api/v1/instance-groups")
                .then().statusCode(201).body("eventReportStorageCandidates", contains("erg_ev", "erg_later"))
                .body("missingStorages", contains("erg_later"));
        JsonNode ev = lastEvent(ConfigEvent.INSTANCE_GROUP, "erg").path("object");
        assertEquals("[\"erg_ev\",\"erg_later\"]", ev.path("eventReportStorageCandidates").toString(), ev.toString());
        assertEquals("[\"erg_ev\",\"erg_later\"]", ev.path("kvcm").path("event_report_storage_candidates").toString());
        admin().get("/api/v1/config/snapshot").then().statusCode(200)
                .body("instanceGroups.find { it.name == 'erg' }.eventReportStorageCandidates", contains("erg_ev", "erg_later"));
        // the storage that later appears under the pending name must be an event-report one to be used; once a group
        // lists a storage its kind cannot flip, and it cannot be removed
        admin().body(storage("erg_later", "event_report_l2", null)).post("/api/v1/storages").then().statusCode(201);
        admin().get("/api/v1/instance-groups/erg").then().body("missingStorages", empty());
        admin().body(Map.of("name", "erg_ev", "type", "nfs", "spec", Map.of("root_path", "/mnt/x/")))
                .header("If-Match", "1").put("/api/v1/storages/erg_ev").then().statusCode(409).body("field", is("type"));
        admin().delete("/api/v1/storages/erg_ev").then().statusCode(409)
                .body("detail", containsString("eventReportStorageCandidates"));
        // an update without the field keeps the list; an empty list clears it
        String etag = admin().get("/api/v1/instance-groups/erg").then().extract().header("ETag");
        etag = admin().header("If-Match", etag).body(Map.of("quotaBytes", 2000)).put("/api/v1/instance-groups/erg")
                .then().statusCode(200).body("eventReportStorageCandidates", contains("erg_ev", "erg_later"))
                .extract().header("ETag");
        admin().header("If-Match", etag).body(Map.of("eventReportStorageCandidates", List.of()))
                .put("/api/v1/instance-groups/erg").then().statusCode(200).body("eventReportStorageCandidates", empty());
        admin().delete("/api/v1/storages/erg_ev").then().statusCode(204);
        admin().get("/api/v1/instance-groups?storage=erg_nfs").then().body("items.name", hasItem("erg"));
    }

    static final String GROUP = """
            {"trace_id":"t","instance_group":{"name":"%s","storage_candidates":["ek_nfs"],%s
             "global_quota_group_name":"q","quota":{"capacity":"30000"%s},
             "cache_config":{"reclaim_strategy":{"storage_unique_name":"ek_nfs","reclaim_policy":1,
               "trigger_strategy":{"used_percentage":0.8}},
               "data_storage_strategy":"CPS_PREFER_3FS",
               "meta_indexer_config":{"max_key_count":"1000","mutex_shard_num":"16",
                 "meta_storage_backend_config":{"storage_type":"local"},"meta_cache_policy_config":{"type":"LRU"}}},
             "version":"1"}}""";

    @Test
    void kvcmAdminStorageTypeAndGroupField() throws Exception {
        Api.nfsStorage("ek_nfs");
        // storage_type with the event_report spec; zeros take KVCM's defaults (proto3 cannot tell absent from 0)
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"ek_l2","storage_type":"ST_EVENT_REPORT_L2",
                 "event_report":{"heartbeat_timeout_ms":"2000","snapshot_min_interval_ms":"60000"}}}""")
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/storages/ek_l2").then().statusCode(200).body("type", is("event_report_l2"))
                .body("spec.heartbeat_timeout_ms", is(2000)).body("spec.snapshot_min_interval_ms", is(60000))
                .body("spec.liveness_check_interval_ms", is(5000));
        // storage_type missing, mismatching or naming a data type → INVALID_ARGUMENT naming storage_type
        for (String bad : List.of("", "\"storage_type\":\"ST_NFS\",", "\"storage_type\":\"ST_DUMMY\",")) {
            kvcm("addStorage", "{\"trace_id\":\"t\",\"storage\":{\"global_unique_name\":\"ek_bad\"," + bad
                    + "\"event_report\":{}}}").body("header.status.code", is("INVALID_ARGUMENT"))
                    .body("header.status.message", containsString("storage_type"));
        }
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"ek_bad","storage_type":"ST_EVENT_REPORT_L1P5",
                 "nfs":{"root_path":"/x/"}}}""").body("header.status.code", is("INVALID_ARGUMENT"))
                .body("header.status.message", containsString("storage_type"));
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"ek_bad","storage_type":"ST_EVENT_REPORT_L1P5",
                 "event_report":{"snapshot_min_interval_ms":"-1"}}}""").body("header.status.code", is("INVALID_ARGUMENT"))
                .body("header.status.message", containsString("snapshot_min_interval_ms"));
        // a data storage may carry its (matching) type
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"ek_nfs2","storage_type":"ST_NFS",
                 "nfs":{"root_path":"/x/"}}}""").body("header.status.code", is("OK"));
        admin().get("/api/v1/storages/ek_bad").then().statusCode(404);
        kvcm("updateStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"ek_l2","storage_type":"ST_EVENT_REPORT_L2",
                 "event_report":{"cleanup_grace_ms":"1000"}}}""").body("header.status.code", is("OK"));
        kvcm("listStorage", "{\"trace_id\":\"t\"}").body("header.status.code", is("OK"))
                .body("storage.find { it.global_unique_name == 'ek_l2' }.storage_type", is("ST_EVENT_REPORT_L2"))
                .body("storage.find { it.global_unique_name == 'ek_l2' }.event_report.cleanup_grace_ms", is("1000"))
                .body("storage.find { it.global_unique_name == 'ek_l2' }.event_report.heartbeat_timeout_ms", is("30000"));

        // InstanceGroup field 10: K7 spelling and admin @0368fbf's spelling; GetInstanceGroup answers in K7's
        kvcm("createInstanceGroup", GROUP.formatted("ek-g", "\"event_report_storage_candidates\":[\"ek_l2\"],", ""))
                .body("header.status.code", is("OK"));
        kvcm("getInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"ek-g\"}")
                .body("instance_group.event_report_storage_candidates", contains("ek_l2"));
        kvcm("createInstanceGroup", GROUP.formatted("ek-old", "\"event_reporting_storage_candidates\":[\"ek_l2\",\"ek_later\"],", ""))
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/instance-groups/ek-old").then().statusCode(200)
                .body("eventReportStorageCandidates", contains("ek_l2", "ek_later"))
                .body("missingStorages", contains("ek_later"));
        // refused: an event-report storage as a data candidate, a data storage as an event-report one, a quota
        kvcm("createInstanceGroup", GROUP.formatted("ek-x", "\"event_report_storage_candidates\":[\"ek_nfs\"],", ""))
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("createInstanceGroup", GROUP.formatted("ek-x", "", "").replace("[\"ek_nfs\"]", "[\"ek_nfs\",\"ek_l2\"]"))
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("createInstanceGroup", GROUP.formatted("ek-x", "",
                        ",\"quota_config\":[{\"storage_type\":\"ST_EVENT_REPORT_L1P5\",\"capacity\":\"10\"}]"))
                .body("header.status.code", is("INVALID_ARGUMENT"))
                .body("header.status.message", containsString("quota_config[0].storage_type"));
        admin().get("/api/v1/instance-groups/ek-x").then().statusCode(404);

        // gRPC: the same messages
        ManagedChannel ch = ManagedChannelBuilder.forAddress("localhost", 16491).usePlaintext().build();
        try {
            Metadata md = new Metadata();
            md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + Api.adminToken());
            var stub = AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
            var r = stub.addStorage(AddStorageRequest.newBuilder().setTraceId("t").setStorage(StorageConfig.newBuilder()
                    .setGlobalUniqueName("ek_grpc").setStorageType(StorageType.ST_EVENT_REPORT_L1P5)
                    .setEventReport(EventReportStorageSpec.newBuilder().setHeartbeatTimeoutMs(7000))).build());
            assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r.toString());
            StorageConfig got = stub.listStorage(ListStorageRequest.newBuilder().setTraceId("t").build()).getStorageList()
                    .stream().filter(s -> s.getGlobalUniqueName().equals("ek_grpc")).findFirst().orElseThrow();
            assertEquals(StorageType.ST_EVENT_REPORT_L1P5, got.getStorageType());
            assertEquals(7000, got.getEventReport().getHeartbeatTimeoutMs());
            assertEquals(30_000, got.getEventReport().getSnapshotMinIntervalMs());
            r = stub.addStorage(AddStorageRequest.newBuilder().setTraceId("t").setStorage(StorageConfig.newBuilder()
                    .setGlobalUniqueName("ek_grpc2").setStorageType(StorageType.ST_EVENT_REPORT_L2)
                    .setNfs(dev.kvpool.api.proto.admin.NfsStorageSpec.newBuilder().setRootPath("/x/"))).build());
            assertEquals(ErrorCode.INVALID_ARGUMENT, r.getHeader().getStatus().getCode(), r.toString());
            assertTrue(r.getHeader().getStatus().getMessage().contains("storage_type"), r.toString());
            assertEquals(List.of("ek_l2"), stub.getInstanceGroup(GetInstanceGroupRequest.newBuilder().setName("ek-g")
                    .build()).getInstanceGroup().getEventReportStorageCandidatesList());
        } finally {
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        // GenConfigSnapshot → LoadConfigSnapshot keeps both
        String snap = kvcm("genConfigSnapshot", "{\"trace_id\":\"t\"}").extract().asString();
        assertTrue(snap.contains("ST_EVENT_REPORT_L2") && snap.contains("event_report_storage_candidates"), snap);
    }
}
