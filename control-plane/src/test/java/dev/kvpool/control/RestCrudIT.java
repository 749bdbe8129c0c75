package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.control.testing.Api;
import io.quarkus.test.junit.QuarkusTest;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** CRUD, filtering, paging, ETags and validation through the REST API, against PostgreSQL. */
@QuarkusTest
class RestCrudIT {

    @Test
    void storageLifecycle() {
        admin().body(Map.of("name", "crud_nfs", "type", "nfs", "spec", Map.of("root_path", "/mnt/a/")))
                .post("/api/v1/storages").then().statusCode(201).header("ETag", "\"1\"")
                .body("name", is("crud_nfs")).body("type", is("nfs")).body("enabled", is(true))
                .body("spec.root_path", is("/mnt/a/"));
        admin().get("/api/v1/storages/crud_nfs").then().statusCode(200).header("ETag", "\"1\"");
        admin().queryParam("type", "nfs").get("/api/v1/storages").then().statusCode(200)
                .body("items.name", hasItem("crud_nfs"));
        admin().queryParam("type", "mooncake").get("/api/v1/storages").then().statusCode(200)
                .body("items.name", not(hasItem("crud_nfs")));
        // update needs If-Match
        admin().body(Map.of("type", "nfs", "spec", Map.of("root_path", "/mnt/b/"), "enabled", false))
                .put("/api/v1/storages/crud_nfs").then().statusCode(428).contentType("application/problem+json")
                .body("field", is("If-Match"));
        admin().header("If-Match", "\"1\"").body(Map.of("type", "nfs", "spec", Map.of("root_path", "/mnt/b/"),
                "enabled", false)).put("/api/v1/storages/crud_nfs").then().statusCode(200).header("ETag", "\"2\"")
                .body("spec.root_path", is("/mnt/b/")).body("enabled", is(false));
        // GET, edit, PUT: the read-only fields sent back (version, createdAt, updatedAt) are not unknown fields
        Map<String, Object> got = new java.util.HashMap<>(admin().get("/api/v1/storages/crud_nfs").then()
                .statusCode(200).extract().jsonPath().getMap(""));
        assertTrue(got.keySet().containsAll(List.of("version", "createdAt", "updatedAt")), got.toString());
        got.put("enabled", true);
        admin().header("If-Match", "\"2\"").body(got).put("/api/v1/storages/crud_nfs").then().statusCode(200)
                .header("ETag", "\"3\"").body("enabled", is(true));
        admin().delete("/api/v1/storages/crud_nfs").then().statusCode(204);
        admin().get("/api/v1/storages/crud_nfs").then().statusCode(404).contentType("application/problem+json");
    }

    @Test
    void storageValidation() {
        admin().body(Map.of("name", "bad", "type", "floppy")).post("/api/v1/storages").then().statusCode(400)
                .body("field", is("type")).body("detail", containsString("floppy"));
        admin().body(Map.of("name", "bad", "type", "nfs", "spec", Map.of())).post("/api/v1/storages").then()
                .statusCode(400).body("field", is("nfs.root_path"));
        admin().body(Map.of("name", "dup_nfs", "type", "nfs", "spec", Map.of("root_path", "/x/")))
                .post("/api/v1/storages").then().statusCode(201);
        admin().body(Map.of("name", "dup_nfs", "type", "nfs", "spec", Map.of("root_path", "/x/")))
                .post("/api/v1/storages").then().statusCode(409).body("field", is("name"))
                .body("detail", containsString("already exists"));
        admin().body("{\"name\": \"x\", ").post("/api/v1/storages").then().statusCode(400)
                .contentType("application/problem+json").body("detail", startsWith("request body: malformed JSON at line 1"));
        // a value of the wrong kind names its field (Quarkus alone answered an empty 400); 1.5 is not read as 1
        admin().body("{\"name\":\"g\",\"quotaBytes\":\"x\"}").post("/api/v1/instance-groups").then().statusCode(400)
                .body("field", is("quotaBytes"))
                .body("detail", is("request body: quotaBytes: expected an integer, got the string \"x\""));
        admin().body("{\"name\":\"g\",\"quotaBytes\":100,\"eviction\":{\"stepSize\":1.5}}")
                .post("/api/v1/instance-groups").then().statusCode(400).body("field", is("eviction.stepSize"))
                .body("detail", is("request body: eviction.stepSize: expected an integer, got 1.5"));
        // a misspelt field is refused, not taken for its default
        admin().body("{\"name\":\"g\",\"quotaBytes\":100,\"waterLevels\":{\"softPercnt\":50}}")
                .post("/api/v1/instance-groups").then().statusCode(400).body("field", is("waterLevels.softPercnt"))
                .body("detail", startsWith("request body: waterLevels.softPercnt: unknown field; known fields: hardPercent, softPercent"));
    }

    @Test
    void groupLifecycleAndValidation() {
        Api.nfsStorage("g_nfs");
        Map<String, Object> g = Map.of("name", "g1", "quotaBytes", 1000L, "storageTypeQuotas", Map.of("nfs", 500L),
                "waterLevels", Map.of("softPercent", 70, "hardPercent", 90),
                "eviction", Map.of("policy", "PREFIX_LRU", "stepSize", 10), "storageCandidates", List.of("g_nfs"),
                "allowAnonymousMeta", true);
        admin().body(g).post("/api/v1/instance-groups").then().statusCode(201).header("ETag", "\"1\"")
                .body("waterLevels.softPercent", is(70)).body("eviction.policy", is("PREFIX_LRU"))
                .body("storageTypeQuotas.nfs", is(500)).body("allowAnonymousMeta", is(true))
                .body("kvcm.cache_config.reclaim_strategy.trigger_strategy.used_percentage", is(0.7f));
        admin().body(g).post("/api/v1/instance-groups").then().statusCode(409).body("field", is("name"));

        // water level outside 0-100 and soft > hard
        admin().header("If-Match", "1").body(Map.of("waterLevels", Map.of("softPercent", 120)))
                .put("/api/v1/instance-groups/g1").then().statusCode(400).body("field", is("waterLevels.softPercent"))
                .body("detail", containsString("between 0 and 100"));
        admin().header("If-Match", "1").body(Map.of("waterLevels", Map.of("softPercent", 95, "hardPercent", 90)))
                .put("/api/v1/instance-groups/g1").then().statusCode(400).body("detail", containsString("must not exceed"));
        // a candidate listed twice, unknown policy (an unknown candidate is accepted as pending: PendingCandidatesIT)
        admin().header("If-Match", "1").body(Map.of("storageCandidates", List.of("g_nfs", "g_nfs")))
                .put("/api/v1/instance-groups/g1").then().statusCode(400).body("field", is("storageCandidates[1]"))
                .body("detail", containsString("listed twice"));
        admin().header("If-Match", "1").body(Map.of("eviction", Map.of("policy", "RANDOM")))
                .put("/api/v1/instance-groups/g1").then().statusCode(400).body("field", is("eviction.policy"));
        // nothing was applied by the refusals
        admin().get("/api/v1/instance-groups/g1").then().statusCode(200).header("ETag", "\"1\"")
                .body("waterLevels.softPercent", is(70)).body("storageCandidates", contains("g_nfs"));

        // quota below current usage
        admin().body(Map.of("samples", List.of(Map.of("group", "g1", "storageType", "nfs", "usedBytes", 400))))
                .post("/api/v1/usage").then().statusCode(202);
        admin().get("/api/v1/instance-groups/g1").then().body("usage.usedBytes", is(400))
                .body("usage.usedPercent", is(40.0f)).body("usage.level", is("ok"));
        admin().header("If-Match", "1").body(Map.of("quotaBytes", 300)).put("/api/v1/instance-groups/g1").then()
                .statusCode(409).body("field", is("quotaBytes")).body("detail", containsString("current usage of 400"));
        admin().header("If-Match", "1").body(Map.of("storageTypeQuotas", Map.of("nfs", 100)))
                .put("/api/v1/instance-groups/g1").then().statusCode(409).body("field", is("storageTypeQuotas.nfs"));
        admin().header("If-Match", "1").body(Map.of("quotaBytes", 2000)).put("/api/v1/instance-groups/g1").then()
                .statusCode(200).header("ETag", "\"2\"").body("quotaBytes", is(2000));

        // storage still referenced; group that still has instances
        admin().delete("/api/v1/storages/g_nfs").then().statusCode(409).body("detail", containsString("g1"));
        admin().body(Api.instanceBody("g1-inst", "g1")).post("/api/v1/instances").then().statusCode(201);
        admin().delete("/api/v1/instance-groups/g1").then().statusCode(409)
                .body("detail", containsString("still has instances [g1-inst]"));
        admin().delete("/api/v1/instances/g1-inst").then().statusCode(204);
        admin().delete("/api/v1/instance-groups/g1").then().statusCode(204);
        admin().delete("/api/v1/storages/g_nfs").then().statusCode(204);
    }

    @Test
    void optimisticConcurrency() throws Exception {
        Api.nfsStorage("occ_nfs");
        Api.group("occ", "occ_nfs");
        String etag = admin().get("/api/v1/instance-groups/occ").then().statusCode(200).extract().header("ETag");
        // two writers with the same ETag, concurrently: exactly one wins, the other gets 412
        var pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        var a = pool.submit(() -> admin().header("If-Match", etag).body(Map.of("quotaBytes", 2_000_000_000L))
                .put("/api/v1/instance-groups/occ").statusCode());
        var b = pool.submit(() -> admin().header("If-Match", etag).body(Map.of("quotaBytes", 3_000_000_000L))
                .put("/api/v1/instance-groups/occ").statusCode());
        List<Integer> codes = List.of(a.get(), b.get()).stream().sorted().toList();
        pool.shutdown();
        assertEquals(List.of(200, 412), codes);
        admin().header("If-Match", etag).body(Map.of("quotaBytes", 5)).put("/api/v1/instance-groups/occ").then()
                .statusCode(412).contentType("application/problem+json").body("field", is("If-Match"));
        admin().get("/api/v1/instance-groups/occ").then().header("ETag", "\"2\"");
    }

    @Test
    void instancesAreIdempotentAndFixed() {
        Api.nfsStorage("i_nfs");
        Api.group("ig", "i_nfs");
        admin().body(Api.instanceBody("inst-a", "ig")).post("/api/v1/instances").then().statusCode(201)
                .body("hashScheme", is("kvcm")).body("quotaGroupName", is("ig"));
        admin().body(Api.instanceBody("inst-a", "ig")).post("/api/v1/instances").then().statusCode(200);
        Map<String, Object> other = new java.util.HashMap<>(Api.instanceBody("inst-a", "ig"));
        other.put("blockSize", 32);
        admin().body(other).post("/api/v1/instances").then().statusCode(409).body("field", is("instanceId"));
        Map<String, Object> vllm = new java.util.HashMap<>(Api.instanceBody("inst-v", "ig"));
        vllm.put("hashScheme", "vllm-sha256-cbor");
        admin().body(vllm).post("/api/v1/instances").then().statusCode(201).body("hashScheme", is("vllm-sha256-cbor"));
        admin().body(Api.instanceBody("inst-v", "ig")).post("/api/v1/instances").then().statusCode(200); // no scheme named
        vllm.put("hashScheme", "kvcm");
        admin().body(vllm).post("/api/v1/instances").then().statusCode(409);
        vllm.put("hashScheme", "md5");
        admin().body(vllm).post("/api/v1/instances").then().statusCode(400).body("field", is("hashScheme"));
        admin().body(Api.instanceBody("inst-b", "no-such-group")).post("/api/v1/instances").then().statusCode(400)
                .body("field", is("group"));
        admin().queryParam("group", "ig").queryParam("size", 1).get("/api/v1/instances").then().statusCode(200)
                .body("total", is(2)).body("items[0].instanceId", is("inst-a"));
        admin().queryParam("size", 0).get("/api/v1/instances").then().statusCode(400).body("field", is("size"));
        // max instance count
        admin().header("If-Match", "1").body(Map.of("maxInstanceCount", 2)).put("/api/v1/instance-groups/ig").then()
                .statusCode(200);
        admin().body(Api.instanceBody("inst-c", "ig")).post("/api/v1/instances").then().statusCode(409)
                .body("detail", containsString("maxInstanceCount"));
    }

    @Test
    void concurrentIdenticalRegistrationsCreateOneInstance() throws Exception {
        Api.nfsStorage("cc_nfs");
        Api.group("ccg", "cc_nfs");
        var pool = java.util.concurrent.Executors.newFixedThreadPool(8);
        List<java.util.concurrent.Future<Integer>> fs = new java.util.ArrayList<>();
        for (int i = 0; i < 8; i++) {
            fs.add(pool.submit(() -> admin().body(Api.instanceBody("cc-inst", "ccg")).post("/api/v1/instances")
                    .statusCode()));
        }
        List<Integer> codes = new java.util.ArrayList<>();
        for (var f : fs) {
            codes.add(f.get());
        }
        pool.shutdown();
        assertEquals(1, codes.stream().filter(c -> c == 201).count(), codes.toString());
        assertEquals(7, codes.stream().filter(c -> c == 200).count(), codes.toString());
        admin().queryParam("group", "ccg").get("/api/v1/instances").then().body("total", is(1));
    }

    @Test
    void accountsAndTokens() {
        admin().body(Map.of("name", "weakling", "password", "short", "role", "operator")).post("/api/v1/accounts")
                .then().statusCode(400).body("field", is("password"));
        admin().body(Map.of("name", "op1", "password", "Operator-Pass-1", "role", "operator"))
                .post("/api/v1/accounts").then().statusCode(201).body("role", is("operator"))
                .body("$", not(hasKey("password"))).body("$", not(hasKey("passwordHash")));
        admin().body(Map.of("name", "t9", "password", "Tenant-Pass-99", "role", "tenant", "groups", List.of("nope")))
                .post("/api/v1/accounts").then().statusCode(400).body("field", is("groups"));
        given().contentType("application/json").body(Map.of("user", "op1", "password", "wrong-Password-1"))
                .post("/api/v1/tokens").then().statusCode(401);
        String tok = given().contentType("application/json").body(Map.of("user", "op1", "password", "Operator-Pass-1"))
                .post("/api/v1/tokens").then().statusCode(200).body("role", is("operator")).extract().path("token");
        Api.as(tok).get("/api/v1/storages").then().statusCode(200);
        Api.as(tok + "x").get("/api/v1/storages").then().statusCode(401);
        given().auth().preemptive().basic("op1", "Operator-Pass-1").get("/api/v1/storages").then().statusCode(200);
        given().get("/api/v1/auth/public-key").then().statusCode(200).body("algorithm", is("Ed25519"));
        admin().queryParam("role", "operator").get("/api/v1/accounts").then().body("items.name", hasItem("op1"));
        admin().header("If-Match", "1").body(Map.of("role", "admin")).put("/api/v1/accounts/op1").then()
                .statusCode(200).body("role", is("admin")).header("ETag", "\"2\"");
    }

    @Test
    void snapshotCarriesEverythingAndThePosition() {
        Api.nfsStorage("snap_nfs");
        Api.group("snapg", "snap_nfs");
        admin().body(Api.instanceBody("snap-inst", "snapg")).post("/api/v1/instances");
        admin().get("/api/v1/config/snapshot").then().statusCode(200).body("format", is("kvpool-config-v1"))
                .body("position", greaterThan(0)).body("storages.name", hasItem("snap_nfs"))
                .body("instanceGroups.name", hasItem("snapg"))
                .body("instanceGroups.find { it.name == 'snapg' }.waterLevels.hardPercent", is(95))
                .body("instances.instanceId", hasItem("snap-inst"));
    }

    @jakarta.inject.Inject
    dev.kvpool.control.retention.Retention retention;

    @Test
    void retentionDropsOldUsageButKeepsTheCurrentOne() {
        Api.nfsStorage("ret_nfs");
        Api.group("retg", "ret_nfs");
        admin().body(Map.of("samples", List.of(
                Map.of("group", "retg", "storageType", "nfs", "usedBytes", 7, "timestamp", "2020-01-01T00:00:00Z"),
                Map.of("group", "retg", "storageType", "nfs", "usedBytes", 9)))).post("/api/v1/usage").then().statusCode(202);
        admin().queryParam("group", "retg").get("/api/v1/usage").then().body("total", is(2));
        retention.purge(java.time.Instant.now());
        admin().queryParam("group", "retg").get("/api/v1/usage").then().body("total", is(1))
                .body("items[0].usedBytes", is(9));
        admin().get("/api/v1/instance-groups/retg").then().body("usage.usedBytes", is(9));
    }

    @Test
    void openApiAndSwaggerAndHealth() {
        given().get("/q/openapi?format=json").then().statusCode(200).body("paths", hasKey("/api/v1/instance-groups"));
        given().get("/q/swagger-ui/").then().statusCode(200);
        given().get("/q/health").then().statusCode(200);
        given().get("/q/metrics").then().statusCode(200).body(containsString("kvpool_control_outbox_pending"))
                .body(containsString("kvpool_control_outbox_published_total"));
    }
}
