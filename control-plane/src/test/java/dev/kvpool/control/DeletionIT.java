package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.is;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.outbox.OutboxEvent;
import dev.kvpool.control.outbox.OutboxRepository;
import dev.kvpool.control.testing.Api;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;
import jakarta.inject.Inject;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Deletions through REST and the KVCM admin API: each writes a {@code deleted} outbox event a metadata plane can act on
 * (kind, name, a version above the last one, no object; ordered after the creation by position), the snapshot no
 * longer lists the object, and the same name created again behaves like a first creation: a different KV config is
 * accepted, the version starts over, no usage history is inherited.
 */
@QuarkusTest
class DeletionIT {
    @Inject
    OutboxRepository outbox;

    List<OutboxEvent> events(String kind, String name) {
        return QuarkusTransaction.requiringNew().call(() -> outbox.list("kind = ?1 and name = ?2 order by position",
                kind, name));
    }

    /** The last event for the object; asserts it is a delete the metadata plane can apply. */
    OutboxEvent lastIsDelete(String kind, String name, long lastVersion) {
        List<OutboxEvent> es = events(kind, name);
        OutboxEvent last = es.get(es.size() - 1);
        assertEquals(ConfigEvent.DELETED, last.action, es.toString());
        ConfigEvent e = Json.read(last.payload, ConfigEvent.class);
        assertEquals(kind, e.kind());
        assertEquals(name, e.name());
        assertEquals(ConfigEvent.DELETED, e.action());
        assertTrue(e.version() > lastVersion, "a delete's version is above the object's last: " + e.version());
        assertNull(e.object(), "a delete carries no object");
        assertTrue(es.stream().filter(x -> x != last).allMatch(x -> x.position < last.position), "ordered after");
        return last;
    }

    JsonNode snapshot() {
        return Json.read(admin().get("/api/v1/config/snapshot").then().statusCode(200).extract().asString());
    }

    static boolean lists(JsonNode snap, String section, String field, String name) {
        for (JsonNode n : snap.path(section)) {
            if (name.equals(n.path(field).asText())) {
                return true;
            }
        }
        return false;
    }

    static ValidatableResponse kvcm(String rpc, String body) {
        return admin().body(body).post("/api/" + rpc).then().statusCode(200);
    }

    @Test
    void restDeletesReachTheOutboxAndRecreationIsAFirstCreation() {
        Api.nfsStorage("del_nfs");
        Api.group("del-g", "del_nfs");
        admin().body(Api.instanceBody("del-i", "del-g")).post("/api/v1/instances").then().statusCode(201);
        admin().body(Map.of("samples", List.of(Map.of("group", "del-g", "storageType", "nfs", "usedBytes", 900_000_000L))))
                .post("/api/v1/usage").then().statusCode(202);

        admin().delete("/api/v1/instances/del-i").then().statusCode(204);
        lastIsDelete(ConfigEvent.INSTANCE, "del-i", 1);
        assertTrue(!lists(snapshot(), "instances", "instanceId", "del-i"));
        admin().get("/api/v1/instances/del-i").then().statusCode(404);
        // the same id with another KV config: a first registration, not a conflict with the deleted one
        Map<String, Object> other = new HashMap<>(Api.instanceBody("del-i", "del-g"));
        other.put("blockSize", 64);
        admin().body(other).post("/api/v1/instances").then().statusCode(201).body("version", is(1))
                .body("blockSize", is(64));
        List<OutboxEvent> es = events(ConfigEvent.INSTANCE, "del-i");
        assertEquals(List.of("created", "deleted", "created"), es.stream().map(e -> e.action).toList());
        assertTrue(lists(snapshot(), "instances", "instanceId", "del-i"));
        admin().delete("/api/v1/instances/del-i").then().statusCode(204);

        admin().delete("/api/v1/instance-groups/del-g").then().statusCode(204);
        lastIsDelete(ConfigEvent.INSTANCE_GROUP, "del-g", 1);
        assertTrue(!lists(snapshot(), "instanceGroups", "name", "del-g"));
        // re-created with a quota below the deleted group's last usage: it has none of that history
        admin().body(Map.of("name", "del-g", "quotaBytes", 1000L, "storageCandidates", List.of("del_nfs")))
                .post("/api/v1/instance-groups").then().statusCode(201).body("version", is(1))
                .body("usage.usedBytes", is(0));
        admin().queryParam("group", "del-g").get("/api/v1/usage").then().statusCode(200).body("total", is(0));
        admin().delete("/api/v1/instance-groups/del-g").then().statusCode(204);

        admin().delete("/api/v1/storages/del_nfs").then().statusCode(204);
        lastIsDelete(ConfigEvent.STORAGE, "del_nfs", 1);
        assertTrue(!lists(snapshot(), "storages", "name", "del_nfs"));
        admin().body(Map.of("name", "del_nfs", "type", "nfs", "spec", Map.of("root_path", "/elsewhere/")))
                .post("/api/v1/storages").then().statusCode(201).body("version", is(1))
                .body("spec.root_path", is("/elsewhere/"));
    }

    static final String GROUP = """
            {"trace_id":"t","instance_group":{"name":"%s","storage_candidates":["%s"],"global_quota_group_name":"%s",
             "quota":{"capacity":"%d"},
             "cache_config":{"reclaim_strategy":{"storage_unique_name":"%s","reclaim_policy":1},
               "data_storage_strategy":"CPS_PREFER_3FS",
               "meta_indexer_config":{"max_key_count":"1000","mutex_shard_num":"16",
                 "meta_storage_backend_config":{"storage_type":"local"},"meta_cache_policy_config":{"type":"LRU"}}},
             "version":"1"}}""";

    static final String REG = """
            {"trace_id":"t","instance_group":"%s","instance_id":"%s","block_size":%d,
             "model_deployment":{"model_name":"m","dtype":"bf16"},"location_spec_infos":[{"name":"tp0","size":"4096"}]}""";

    @Test
    void kvcmRemovesReachTheOutboxAndRegisteringAgainWorks() {
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"kdel_nfs","nfs":{"root_path":"/tmp/kdel/"}}}""")
                .body("header.status.code", is("OK"));
        kvcm("createInstanceGroup", GROUP.formatted("kdel-g", "kdel_nfs", "kdel-g", 10_000, "kdel_nfs"))
                .body("header.status.code", is("OK"));
        kvcm("registerInstance", REG.formatted("kdel-g", "kdel-i", 4)).body("header.status.code", is("OK"));

        kvcm("removeInstance", "{\"trace_id\":\"t\",\"instance_group\":\"kdel-g\",\"instance_id\":\"kdel-i\"}")
                .body("header.status.code", is("OK"));
        lastIsDelete(ConfigEvent.INSTANCE, "kdel-i", 1);
        assertTrue(!lists(snapshot(), "instances", "instanceId", "kdel-i"));
        kvcm("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"kdel-i\"}")
                .body("header.status.code", not(is("OK")));
        // registerInstance with the same id and a different block size: accepted as new (a conflict while registered)
        kvcm("registerInstance", REG.formatted("kdel-g", "kdel-i", 8)).body("header.status.code", is("OK"));
        kvcm("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"kdel-i\"}")
                .body("instance_info.block_size", is(8));
        kvcm("registerInstance", REG.formatted("kdel-g", "kdel-i", 4)).body("header.status.code", is("INTERNAL_ERROR"));
        kvcm("removeInstance", "{\"trace_id\":\"t\",\"instance_id\":\"kdel-i\"}").body("header.status.code", is("OK"));

        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kdel-g\"}").body("header.status.code", is("OK"));
        lastIsDelete(ConfigEvent.INSTANCE_GROUP, "kdel-g", 1);
        assertTrue(!lists(snapshot(), "instanceGroups", "name", "kdel-g"));
        kvcm("createInstanceGroup", GROUP.formatted("kdel-g", "kdel_nfs", "other-q", 20_000, "kdel_nfs"))
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/instance-groups/kdel-g").then().statusCode(200).body("quotaBytes", is(20_000))
                .body("quotaGroupName", is("other-q"));
        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"kdel-g\"}").body("header.status.code", is("OK"));

        kvcm("removeStorage", "{\"trace_id\":\"t\",\"storage_unique_name\":\"kdel_nfs\"}")
                .body("header.status.code", is("OK"));
        lastIsDelete(ConfigEvent.STORAGE, "kdel_nfs", 1);
        kvcm("listStorage", "{\"trace_id\":\"t\"}").body("storage.global_unique_name", not(hasItem("kdel_nfs")));
        kvcm("addStorage", """
                {"trace_id":"t","storage":{"global_unique_name":"kdel_nfs","nfs":{"root_path":"/tmp/kdel2/"}}}""")
                .body("header.status.code", is("OK"));
        admin().get("/api/v1/storages/kdel_nfs").then().statusCode(200).body("spec.root_path", is("/tmp/kdel2/"));
    }

    @Test
    void aGroupBoundToATenantIsNotRemovedUnderIt() {
        Api.nfsStorage("bound_nfs");
        Api.group("bound-g", "bound_nfs");
        Api.account("bound-tenant", "tenant", "bound-g");
        // removing it would leave the binding, which a later group of the same name would inherit
        admin().delete("/api/v1/instance-groups/bound-g").then().statusCode(409).body("field", is("name"))
                .body("detail", containsString("bound-tenant"));
        kvcm("removeInstanceGroup", "{\"trace_id\":\"t\",\"name\":\"bound-g\"}")
                .body("header.status.code", is("INTERNAL_ERROR"))
                .body("header.status.message", containsString("bound-tenant"));
        admin().get("/api/v1/instance-groups/bound-g").then().statusCode(200);
        admin().header("If-Match", "1").body(Map.of("groups", List.of())).put("/api/v1/accounts/bound-tenant").then()
                .statusCode(200);
        admin().delete("/api/v1/instance-groups/bound-g").then().statusCode(204);
    }
}
