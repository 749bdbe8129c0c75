package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.is;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.limits.Limits;
import dev.kvpool.control.testing.Api;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The identifier rule and the documented bounds, field by field: each refusal is a 400 naming the field (REST) or
 * INVALID_ARGUMENT naming it (KVCM admin), never a 500, INTERNAL_ERROR or a silent coercion; values at the bounds
 * pass.
 */
@QuarkusTest
class InputBoundsIT {
    static boolean ready;

    @BeforeEach
    void fixtures() {
        if (!ready) {
            Api.nfsStorage("ib_nfs");
            Api.group("ib-g", "ib_nfs");
            ready = true;
        }
    }

    /** REST: 400 problem with this field. */
    static void rest400(String method, String path, Object body, String field) {
        Response r = admin().body(body == null ? "{}" : body).request(method, path);
        assertEquals(400, r.statusCode(), method + " " + path + " " + body + ": " + r.asString());
        assertEquals("application/problem+json", r.contentType(), r.asString());
        assertEquals(field, r.jsonPath().getString("field"), method + " " + path + ": " + r.asString());
    }

    /** KVCM: 200 with INVALID_ARGUMENT, the message naming {@code field}. */
    static void kvcm5(String rpc, String body, String field) {
        Response r = admin().body(body).post("/api/" + rpc);
        assertEquals(200, r.statusCode(), rpc + " " + body + ": " + r.asString());
        assertEquals("INVALID_ARGUMENT", r.jsonPath().getString("header.status.code"), rpc + " " + body + ": " + r.asString());
        String m = r.jsonPath().getString("header.status.message");
        assertTrue(m.contains(field), rpc + ": message should name " + field + ": " + m);
    }

    static final List<String> BAD_NAMES = List.of("", "a\u0000b", "a/b", "..", ".hidden", "-opt", "a:b", "a b", "a%2Fb",
            "x".repeat(129), "tab\there", "new\nline", "ünï", "a\u202eb", "{tag}");

    @Test
    void namesFollowTheIdentifierRuleEverywhere() {
        for (String bad : BAD_NAMES) {
            String j = com.fasterxml.jackson.databind.node.TextNode.valueOf(bad).toString();
            rest400("POST", "/api/v1/storages", Map.of("name", bad, "type", "nfs", "spec", Map.of("root_path", "/x/")),
                    "name");
            rest400("POST", "/api/v1/instance-groups", Map.of("name", bad, "quotaBytes", 1000,
                    "storageCandidates", List.of("ib_nfs")), "name");
            rest400("POST", "/api/v1/instance-groups", Map.of("name", "ib-ok", "quotaBytes", 1000,
                    "storageCandidates", List.of(bad)), "storageCandidates[0]");
            if (!bad.isEmpty()) { // an empty quota group name means "the group's own name"
                rest400("POST", "/api/v1/instance-groups", Map.of("name", "ib-ok", "quotaBytes", 1000,
                        "storageCandidates", List.of("ib_nfs"), "quotaGroupName", bad), "quotaGroupName");
            }
            rest400("POST", "/api/v1/instances", Api.instanceBody(bad, "ib-g"), "instanceId");
            rest400("POST", "/api/v1/instances", Api.instanceBody("ib-i", bad), "group");
            Map<String, Object> spec = new HashMap<>(Api.instanceBody("ib-i", "ib-g"));
            spec.put("locationSpecInfos", List.of(Map.of("name", bad, "size", 4096)));
            rest400("POST", "/api/v1/instances", spec, "locationSpecInfos[0].name");
            rest400("POST", "/api/v1/accounts", Map.of("name", bad, "password", "Zq-Secret-Pass-9", "role", "operator"),
                    "name");
            rest400("POST", "/api/v1/usage", Map.of("samples", List.of(Map.of("group", bad, "storageType", "nfs",
                    "usedBytes", 1))), "samples[0].group");
            // KVCM admin, with its field names
            kvcm5("addStorage", "{\"storage\":{\"global_unique_name\":" + j + ",\"nfs\":{\"root_path\":\"/x/\"}}}",
                    "global_unique_name");
            kvcm5("enableStorage", "{\"storage_unique_name\":" + j + "}", "storage_unique_name");
            kvcm5("getInstanceGroup", "{\"name\":" + j + "}", "name");
            kvcm5("registerInstance", DeletionIT.REG.formatted("ib-g", "X", 4).replace("\"X\"", j), "instance_id");
            kvcm5("getInstanceInfo", "{\"instance_id\":" + j + "}", "instance_id");
            kvcm5("addAccount", "{\"user_name\":" + j + ",\"password\":\"Zq-Secret-Pass-9\"}", "user_name");
            kvcm5("createInstanceGroup", DeletionIT.GROUP.formatted("X", "ib_nfs", "q", 1000, "ib_nfs")
                    .replace("\"X\"", j), "instance_group.name");
        }
        // path parameters: a name the rule refuses is a 400, not a lookup
        for (String p : List.of("/api/v1/storages/a%00b", "/api/v1/instance-groups/a%00b", "/api/v1/instances/a%00b",
                "/api/v1/accounts/a%00b", "/api/v1/instances/a%2Fb", "/api/v1/instances/a:b",
                "/api/v1/storages/" + "x".repeat(200))) {
            Response r = admin().urlEncodingEnabled(false).get(p);
            assertEquals(400, r.statusCode(), p + ": " + r.asString());
        }
        // ids that KVCM connectors use pass
        for (String ok : List.of("instance1", "tp_3", "nfs_01", "Qwen3-32B.v2", "a".repeat(128))) {
            admin().body(Api.instanceBody(ok, "ib-g")).post("/api/v1/instances").then().statusCode(201);
            admin().delete("/api/v1/instances/" + ok).then().statusCode(204);
        }
    }

    @Test
    void numbersAreRangeCheckedAtTheInput() {
        long max = Limits.MAX_QUOTA_BYTES;
        Map<String, Object> g = Map.of("name", "ib-n", "storageCandidates", List.of("ib_nfs"));
        List<Object[]> restCases = new ArrayList<>();
        restCases.add(new Object[] {with(g, "quotaBytes", max + 1), "quotaBytes"});
        restCases.add(new Object[] {with(g, "quotaBytes", Long.MAX_VALUE), "quotaBytes"});
        restCases.add(new Object[] {with(g, "quotaBytes", -1), "quotaBytes"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "storageTypeQuotas", Map.of("nfs", Long.MAX_VALUE)),
                "storageTypeQuotas.nfs"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "maxInstanceCount", Limits.MAX_INSTANCES_PER_GROUP + 1),
                "maxInstanceCount"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "eviction", Map.of("stepSize", Integer.MAX_VALUE)),
                "eviction.stepSize"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "eviction", Map.of("ttlSeconds", Long.MAX_VALUE)),
                "eviction.ttlSeconds"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "eviction", Map.of("readerLeaseMs", Long.MAX_VALUE)),
                "eviction.readerLeaseMs"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "eviction", Map.of("triggerPeriodSeconds", -1)),
                "eviction.triggerPeriodSeconds"});
        restCases.add(new Object[] {with(with(g, "quotaBytes", 1000), "waterLevels", Map.of("softPercent", -1)),
                "waterLevels.softPercent"});
        for (Object[] c : restCases) {
            rest400("POST", "/api/v1/instance-groups", c[0], (String) c[1]);
        }
        Map<String, Object> inst = new HashMap<>(Api.instanceBody("ib-num", "ib-g"));
        rest400("POST", "/api/v1/instances", with(inst, "blockSize", Limits.MAX_BLOCK_TOKENS + 1), "blockSize");
        rest400("POST", "/api/v1/instances", with(inst, "locationSpecInfos",
                List.of(Map.of("name", "tp0", "size", Limits.MAX_SPEC_BYTES + 1))), "locationSpecInfos[0].size");
        rest400("POST", "/api/v1/instances", with(inst, "locationSpecInfos",
                List.of(Map.of("name", "tp0", "size", -1))), "locationSpecInfos[0].size");
        List<Map<String, Object>> many = new ArrayList<>();
        for (int i = 0; i <= Limits.MAX_SPECS; i++) {
            many.add(Map.of("name", "tp" + i, "size", 1));
        }
        rest400("POST", "/api/v1/instances", with(inst, "locationSpecInfos", many), "locationSpecInfos");
        rest400("POST", "/api/v1/usage", Map.of("samples", List.of(Map.of("group", "ib-g", "storageType", "nfs",
                "usedBytes", -1))), "samples[0].usedBytes");
        rest400("POST", "/api/v1/usage", Map.of("samples", List.of(Map.of("group", "ib-g", "storageType", "nfs",
                "usedBytes", Long.MAX_VALUE))), "samples[0].usedBytes");
        // a sample dated far ahead would stay the "latest" one and hide every later report
        rest400("POST", "/api/v1/usage", Map.of("samples", List.of(Map.of("group", "ib-g", "storageType", "nfs",
                "usedBytes", 1, "timestamp", "2999-01-01T00:00:00Z"))), "samples[0].timestamp");
        admin().queryParam("since", "+1000000000-01-01T00:00:00Z").get("/api/v1/usage").then().statusCode(400)
                .body("field", is("since"));
        // query parameters JAX-RS would turn into a bare 404 or a silent false
        for (String[] q : new String[][] {{"page", "1e400"}, {"page", "-1"}, {"size", "abc"}, {"size", "501"},
                {"size", "18446744073709551616"}}) {
            admin().queryParam(q[0], q[1]).get("/api/v1/instances").then().statusCode(400).body("field", is(q[0]));
        }
        admin().queryParam("enabled", "maybe").get("/api/v1/storages").then().statusCode(400).body("field", is("enabled"));
        // nothing above was created
        admin().get("/api/v1/instance-groups/ib-n").then().statusCode(404);
        admin().get("/api/v1/instances/ib-num").then().statusCode(404);

        // KVCM admin
        String grp = DeletionIT.GROUP.formatted("ib-k", "ib_nfs", "q", 1000, "ib_nfs");
        kvcm5("createInstanceGroup", grp.replace("\"capacity\":\"1000\"", "\"capacity\":\"" + Long.MAX_VALUE + "\""),
                "instance_group.quota.capacity");
        // two entries of one type used to be summed: Long.MAX_VALUE twice wrapped to -2
        kvcm5("createInstanceGroup", grp.replace("\"capacity\":\"1000\"", "\"capacity\":\"1000\",\"quota_config\":["
                + "{\"storage_type\":4,\"capacity\":\"500\"},{\"storage_type\":4,\"capacity\":\"500\"}]"),
                "instance_group.quota.quota_config[1].storage_type");
        kvcm5("createInstanceGroup", grp.replace("\"reclaim_policy\":1", "\"reclaim_policy\":1,"
                + "\"trigger_strategy\":{\"used_percentage\":\"NaN\"}"), "used_percentage");
        kvcm5("createInstanceGroup", grp.replace("\"reclaim_policy\":1", "\"reclaim_policy\":1,"
                + "\"trigger_strategy\":{\"used_size\":\"-1\"}"), "used_size");
        kvcm5("createInstanceGroup", grp.replace("\"reclaim_policy\":1", "\"reclaim_policy\":1,\"delay_before_delete_ms\":-5"),
                "delay_before_delete_ms");
        kvcm5("createInstanceGroup", grp.replace("\"reclaim_policy\":1", "\"reclaim_policy\":1,\"reclaim_step_percentage\":500"),
                "reclaim_step_percentage");
        kvcm5("createInstanceGroup", grp.replace("\"max_key_count\":\"1000\",\"mutex_shard_num\":\"16\"",
                "\"max_key_count\":\"1099511627776\",\"mutex_shard_num\":\"1099511627776\""), "mutex_shard_num");
        kvcm5("createInstanceGroup", grp.replace("\"max_key_count\":\"1000\"", "\"max_key_count\":\"9223372036854775807\""),
                "max_key_count");
        kvcm5("createInstanceGroup", grp.replace("\"version\":\"1\"", "\"version\":\"9223372036854775807\""),
                "instance_group.version");
        kvcm5("createInstanceGroup", grp.replace("\"version\":\"1\"", "\"version\":\"1\",\"max_instance_count\":\"-1\""),
                "max_instance_count");
        kvcm5("registerInstance", DeletionIT.REG.formatted("ib-g", "ib-k", -1), "blockSize");
        kvcm5("registerInstance", DeletionIT.REG.formatted("ib-g", "ib-k", 4).replace("\"4096\"",
                "\"" + Long.MAX_VALUE + "\""), "locationSpecInfos[0].size");
        kvcm5("updateLeaderElectorConfig", "{\"campaign_delay_time_ms\":\"-1\"}", "campaign_delay_time_ms");
        kvcm5("addStorage", "{\"storage\":{\"global_unique_name\":\"ib_v\",\"vcnsthreefs\":{\"mountpoint\":\"/m\","
                + "\"root_dir\":\"/r\",\"remote_host\":\"h\",\"remote_port\":70000,\"meta_storage_uri\":\"u\"}}}",
                "remote_port");
        kvcm5("addStorage", "{\"storage\":{\"global_unique_name\":\"ib_n2\",\"nfs\":{\"root_path\":\"/x/\","
                + "\"key_count_per_file\":-3}}}", "key_count_per_file");
        admin().get("/api/v1/instance-groups/ib-k").then().statusCode(404);
        admin().get("/api/v1/storages/ib_v").then().statusCode(404);

        // at the bounds: accepted
        admin().body(with(with(g, "quotaBytes", max), "storageTypeQuotas", Map.of("nfs", max)))
                .post("/api/v1/instance-groups").then().statusCode(201);
        admin().body(Map.of("samples", List.of(Map.of("group", "ib-n", "storageType", "nfs", "usedBytes", max))))
                .post("/api/v1/usage").then().statusCode(202);
        admin().get("/api/v1/instance-groups/ib-n").then().statusCode(200).body("usage.level", is("hard"))
                .body("usage.usedPercent", is(100.0f));
    }

    @Test
    void opaqueTextIsBoundedAndFreeOfControlCharacters() {
        kvcm5("listStorage", "{\"trace_id\":\"" + "t".repeat(Limits.MAX_TEXT + 1) + "\"}", "trace_id");
        kvcm5("listStorage", "{\"trace_id\":\"a\\u0000b\"}", "trace_id");
        Map<String, Object> inst = new HashMap<>(Api.instanceBody("ib-t", "ib-g"));
        inst.put("modelDeployment", Map.of("model_name", "m\u0001", "dtype", "bf16"));
        rest400("POST", "/api/v1/instances", inst, "model_deployment.model_name");
        inst.put("modelDeployment", Map.of("model_name", "m", "dtype", "bf16", "extra", "x".repeat(Limits.MAX_BLOB + 1)));
        rest400("POST", "/api/v1/instances", inst, "model_deployment.extra");
        // blobs may hold newlines (pretty-printed JSON), not NUL
        inst.put("modelDeployment", Map.of("model_name", "m", "dtype", "bf16", "extra", "{\n  \"a\": 1\n}"));
        admin().body(inst).post("/api/v1/instances").then().statusCode(201);
        admin().body(Map.of("name", "ib-u", "quotaBytes", 1000, "storageCandidates", List.of("ib_nfs"),
                "userData", "nul\u0000here")).post("/api/v1/instance-groups").then().statusCode(400)
                .body("field", is("userData")).body("detail", containsString("U+0000"));
        admin().body(Map.of("name", "ib-s", "type", "nfs", "spec", Map.of("root_path", "/x\u0000/")))
                .post("/api/v1/storages").then().statusCode(400).body("field", is("nfs.root_path"));
    }

    static Map<String, Object> with(Map<String, Object> m, String k, Object v) {
        Map<String, Object> c = new HashMap<>(m);
        c.put(k, v);
        return c;
    }
}
