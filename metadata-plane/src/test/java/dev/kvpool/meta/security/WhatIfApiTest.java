package dev.kvpool.meta.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.testing.Await;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The what-if REST API (admin and operator only) and the prompt-miss routes a tenant may use on its own groups'
 * instances, with tokens checked (the tenants' boot).
 */
@QuarkusTest
@TestProfile(TenantsProfile.class)
class WhatIfApiTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    record R(int status, String body, String type) {
        JsonNode json() throws Exception {
            return JSON.readTree(body);
        }
    }

    static R call(String method, String path, String token, String contentType, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(MetaApi.base() + path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new R(r.statusCode(), r.body(), r.headers().firstValue("Content-Type").orElse(""));
    }

    static R json(String method, String path, String token, String body) throws Exception {
        return call(method, path, token, "application/json", body == null ? null : body.getBytes());
    }

    private static void register(String group, String id) throws Exception {
        R r = json("POST", "/api/registerInstance", TenantsProfile.ADMIN, """
                {"trace_id": "t", "instance_group": "%s", "instance_id": "%s", "block_size": 4,
                 "model_deployment": {"model_name": "m", "dtype": "bf16"},
                 "location_spec_infos": [{"name": "tp0", "size": 4096}]}""".formatted(group, id));
        assertEquals(200, r.status(), r.body());
        assertEquals("OK", JSON.readTree(r.body()).path("header").path("status").path("code").asText(), r.body());
    }

    @Test
    void aTenantAsksWhyAPromptMissesOnlyOnItsOwnInstances() throws Exception {
        register("team-a", "wi-a");
        register("team-b", "wi-b");
        String keys = "{\"token_ids\": [1,2,3,4,5,6,7,8,9]}";
        R own = json("GET", "/api/v1/instances/wi-a", TenantsProfile.TENANT_A, null);
        assertEquals(200, own.status(), own.body());
        assertEquals("team-a", own.json().path("instance_group").asText());
        R miss = json("POST", "/api/v1/instances/wi-a/block-keys", TenantsProfile.TENANT_A, keys);
        assertEquals(200, miss.status(), miss.body());
        assertEquals(2, miss.json().path("blocks").size(), miss.body());
        assertEquals(0, miss.json().path("prefix_hit_blocks").asInt());
        assertTrue(!miss.json().path("blocks").get(0).path("cached").asBoolean());
        // another group's instance: 403, as the control plane answers; an unknown one 404, as there
        for (R r : List.of(json("GET", "/api/v1/instances/wi-b", TenantsProfile.TENANT_A, null),
                json("POST", "/api/v1/instances/wi-b/block-keys", TenantsProfile.TENANT_A, keys))) {
            assertEquals(403, r.status(), r.body());
            assertTrue(r.type().startsWith("application/problem+json"), r.type());
            assertTrue(!r.body().contains("team-b"), "the other instance's group is not named: " + r.body());
        }
        assertEquals(404, json("GET", "/api/v1/instances/nope", TenantsProfile.TENANT_A, null).status());
        assertEquals(200, json("GET", "/api/v1/instances/wi-b", TenantsProfile.TENANT_B, null).status());
        // the rest stays admin and operator only
        assertEquals(403, json("GET", "/api/v1/instances", TenantsProfile.TENANT_A, null).status());
        assertEquals(403, json("GET", "/api/v1/whatif/traces", TenantsProfile.TENANT_A, null).status());
        assertEquals(403, json("POST", "/api/v1/whatif/runs", TenantsProfile.TENANT_A, "{}").status());
        assertEquals(401, json("GET", "/api/v1/instances/wi-a", null, null).status());
        assertEquals(401, json("POST", "/api/v1/instances/wi-a/block-keys", null, keys).status());
        assertEquals(200, json("POST", "/api/v1/instances/wi-b/block-keys", TenantsProfile.ADMIN, keys).status());
    }

    @Test
    void tracesAreCheckedAndRunsReplayThem() throws Exception {
        R list = json("GET", "/api/v1/whatif/traces", TenantsProfile.ADMIN, null);
        assertEquals(200, list.status(), list.body());
        assertEquals("conversation", list.json().get(0).path("name").asText(), list.body());
        assertEquals("example", list.json().get(0).path("kind").asText());
        assertTrue(list.json().get(0).path("blocks").asLong() > 100_000, list.body());

        List<String> lines = Files.readAllLines(MooncakeTrace.conversation()).subList(0, 300);
        byte[] good = (String.join("\n", lines) + "\n").getBytes();
        R up = call("POST", "/api/v1/whatif/traces?name=conv300", TenantsProfile.ADMIN, "application/x-ndjson", good);
        assertEquals(201, up.status(), up.body());
        assertEquals(300, up.json().path("requests").asInt(), up.body());
        assertEquals("uploaded", up.json().path("kind").asText());
        assertEquals(409, call("POST", "/api/v1/whatif/traces?name=conv300", TenantsProfile.ADMIN, "application/x-ndjson",
                good).status());
        assertEquals(409, call("POST", "/api/v1/whatif/traces?name=conversation", TenantsProfile.ADMIN, null, good).status());
        // names are checked; bad lines are named
        for (String bad : List.of("..", "a%2Fb", "-x", "")) {
            R r = call("POST", "/api/v1/whatif/traces?name=" + bad, TenantsProfile.ADMIN, null, good);
            assertEquals(400, r.status(), bad + ": " + r.body());
            assertEquals("name", r.json().path("field").asText());
        }
        String twoGood = lines.get(0) + "\n" + lines.get(1) + "\n";
        for (String[] c : new String[][] {{"{\"timestamp\": 5, \"hash_ids\": [1, \"x\"]}", "hash_ids[1]"},
                {"{\"timestamp\": 5}", "hash_ids"}, {"not json", "not JSON"}, {"{\"timestamp\": -1, \"hash_ids\": [1]}",
                "timestamp"}, {"{\"timestamp\": 1, \"hash_ids\": []}", "empty"}, {"[1,2]", "object"}}) {
            R r = call("POST", "/api/v1/whatif/traces?name=bad", TenantsProfile.ADMIN, null, (twoGood + c[0] + "\n").getBytes());
            assertEquals(400, r.status(), r.body());
            assertEquals(3, r.json().path("line").asInt(), r.body());
            assertTrue(r.json().path("detail").asText().startsWith("line 3: ") && r.json().path("detail").asText()
                    .contains(c[1]), r.body());
        }
        // over the byte limit (1 MiB in this profile): 413, nothing stored
        byte[] big = new byte[(1 << 20) + 10];
        java.util.Arrays.fill(big, (byte) ' ');
        R tooBig = call("POST", "/api/v1/whatif/traces?name=big", TenantsProfile.ADMIN, null, big);
        assertEquals(413, tooBig.status(), tooBig.body());
        assertTrue(json("GET", "/api/v1/whatif/traces", TenantsProfile.ADMIN, null).json().findValues("name").stream()
                .noneMatch(n -> n.asText().equals("big") || n.asText().equals("bad")));

        // bad runs: 400 naming the field
        for (String[] c : new String[][] {{"{\"trace\": \"nope\", \"capacities\": [1000]}", "trace"},
                {"{\"trace\": \"conv300\", \"policies\": [\"MRU\"], \"capacities\": [1000]}", "policies"},
                {"{\"trace\": \"conv300\", \"capacities\": [0]}", "capacities"},
                {"{\"trace\": \"conv300\", \"capacities\": [1000], \"water\": 0}", "water"},
                {"{\"trace\": \"conv300\", \"capacities\": [1000], \"stepPercentage\": 101}", "stepPercentage"},
                {"{\"trace\": \"conv300\", \"capacityRange\": {\"min\": 1000, \"max\": 100, \"points\": 4}}", "capacityRange"},
                {"{\"trace\": \"conv300\", \"capacityRange\": {\"min\": 1000, \"max\": 1e6, \"points\": 65}}", "capacityRange"},
                {"{\"trace\": \"conv300\", \"policies\": [\"LRU\"], \"capacities\": [1000], \"target\": {\"policy\": \"LFU\", \"hitRate\": 0.2}}",
                        "target.policy"}}) {
            R r = json("POST", "/api/v1/whatif/runs", TenantsProfile.ADMIN, c[0]);
            assertEquals(400, r.status(), c[0] + ": " + r.body());
            assertEquals(c[1], r.json().path("field").asText(), r.body());
        }

        R start = json("POST", "/api/v1/whatif/runs", TenantsProfile.ADMIN, """
                {"trace": "conv300", "policies": ["LRU", "PREFIX_LRU"], "capacityRange": {"min": 2e4, "max": 2e5, "points": 3},
                 "water": 0.9, "stepPercentage": 5, "target": {"policy": "LRU", "hitRate": 0.01}}""");
        assertEquals(202, start.status(), start.body());
        String id = start.json().path("id").asText();
        JsonNode v = awaitEnd(id);
        assertEquals("done", v.path("state").asText(), v.toString());
        assertEquals(6, v.path("results").size(), v.toString());
        JsonNode caps = v.path("request").path("capacities");
        assertEquals(List.of(20000L, 63246L, 200000L), List.of(caps.get(0).asLong(), caps.get(1).asLong(),
                caps.get(2).asLong()));
        JsonNode p = v.path("progress");
        assertEquals(p.path("runsTotal").asInt(), p.path("runsDone").asInt());
        assertEquals(1.0, p.path("fraction").asDouble());
        assertTrue(v.path("ceiling").path("hitRate").asDouble() > 0, v.toString());
        assertEquals("conv300", v.path("trace").path("name").asText());
        assertEquals(512, v.path("trace").path("blockTokens").asInt());
        assertTrue(v.has("smallest") && v.path("smallest").has("reached"), v.toString());
        // jobs are listed newest first, and survive as long as the plane keeps them
        R all = json("GET", "/api/v1/whatif/runs", TenantsProfile.ADMIN, null);
        assertEquals(id, all.json().get(0).path("id").asText());
        assertEquals(204, json("DELETE", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).status());
        assertEquals(404, json("GET", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).status());
        assertEquals(400, json("GET", "/api/v1/whatif/runs/-x", TenantsProfile.ADMIN, null).status());
        assertEquals(204, json("DELETE", "/api/v1/whatif/traces/conv300", TenantsProfile.ADMIN, null).status());
    }

    @Test
    void aCancelledRunStopsWithinAHundredMilliseconds() throws Exception {
        R start = json("POST", "/api/v1/whatif/runs", TenantsProfile.ADMIN, """
                {"trace": "conversation", "policies": ["LRU", "LFU", "TTL", "PREFIX_LRU"],
                 "capacityRange": {"min": 1e6, "max": 3e7, "points": 8}}""");
        assertEquals(202, start.status(), start.body());
        String id = start.json().path("id").asText();
        JsonNode[] v = new JsonNode[1];
        Await.within(Duration.ofSeconds(60), () -> (v[0] = json("GET", "/api/v1/whatif/runs/" + id,
                TenantsProfile.ADMIN, null).json()).path("progress").path("accessesDone").asLong() > 0);
        assertEquals("running", v[0].path("state").asText(), v[0].toString());
        long a0 = v[0].path("progress").path("accessesDone").asLong();
        Await.until("progress moves while a replay is in flight (from " + a0 + ")", Duration.ofSeconds(10),
                () -> json("GET", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).json().path("progress")
                        .path("accessesDone").asLong() > a0);
        R c = json("DELETE", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null);
        assertEquals(200, c.status(), c.body());
        assertEquals("cancelled", c.json().path("state").asText());
        // real time is what is under test here: a cancel stops the replay within 100 ms, then nothing moves
        Thread.sleep(100);
        long b0 = json("GET", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).json().path("progress")
                .path("accessesDone").asLong();
        Thread.sleep(300);
        JsonNode after = json("GET", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).json();
        assertEquals(b0, after.path("progress").path("accessesDone").asLong(), "no replay runs 100 ms after the cancel");
        assertEquals("cancelled", after.path("state").asText());
        assertEquals(204, json("DELETE", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null).status());
    }

    private static JsonNode awaitEnd(String id) {
        JsonNode[] v = new JsonNode[1];
        Await.within(Duration.ofSeconds(120), () -> {
            R r = json("GET", "/api/v1/whatif/runs/" + id, TenantsProfile.ADMIN, null);
            assertEquals(200, r.status(), r.body());
            v[0] = r.json();
            return !List.of("queued", "running").contains(v[0].path("state").asText());
        });
        return v[0];
    }
}
