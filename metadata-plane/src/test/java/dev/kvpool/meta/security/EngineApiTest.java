package dev.kvpool.meta.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.engine.EngineCaches;
import dev.kvpool.meta.support.MetaApi;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The engine REST (/api/v1/engine/...) with tokens on: sources are for admins and operators; a tenant scores and reads
 * the engine caches of its own groups' instances only; every bad input is a 400 naming it.
 */
@QuarkusTest
@TestProfile(TenantsProfile.class)
class EngineApiTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    static final String A = TenantsProfile.TENANT_A, B = TenantsProfile.TENANT_B, ADMIN = TenantsProfile.ADMIN;

    @Inject
    EngineCaches caches;

    record Reply(int status, String body) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new AssertionError(body, e);
            }
        }
    }

    static Reply call(String method, String path, String token, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(MetaApi.base() + path)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), r.body());
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(method + " " + path + ": " + e, e);
        }
    }

    static void register(String token, String group, String id) {
        byte[] req = ProtoJson.print(RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup(group)
                .setInstanceId(id).setBlockSize(4)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096)).build());
        Reply r = call("POST", "/api/registerInstance", token, new String(req));
        assertEquals(200, r.status(), r.body());
    }

    @BeforeEach
    void pods() {
        register(A, "team-a", "eng-a");
        register(B, "team-b", "eng-b");
        var v = caches.view();
        v.clearPod("eng-a", "pod-1");
        v.clearPod("eng-a", "pod-2");
        v.store("eng-a", "pod-1", "gpu", new long[] {11, 12, 13});
        v.store("eng-a", "pod-1", "cpu", new long[] {11, 12, 13, 14});
        v.store("eng-a", "pod-2", "gpu", new long[] {11});
        v.store("eng-b", "pod-x", "gpu", new long[] {11, 12, 13, 14});
    }

    static String scores(String instance, String keys) {
        return "{\"instance_id\":\"" + instance + "\",\"block_keys\":" + keys + "}";
    }

    @Test
    void scoresRankPodsByTierWeightedLongestPrefix() {
        Reply r = call("POST", "/api/v1/engine/scores", A, scores("eng-a", "[11, 12, \"13\", 14, 15]"));
        assertEquals(200, r.status(), r.body());
        JsonNode j = r.json();
        assertEquals("eng-a", j.get("instance_id").asText());
        assertEquals(5, j.get("blocks").asInt());
        assertEquals("pod-1", j.at("/pods/0/pod").asText());
        assertEquals(4, j.at("/pods/0/longest_prefix").asInt());
        assertEquals(3, j.at("/pods/0/prefix_per_tier/gpu").asInt());
        assertEquals(4, j.at("/pods/0/prefix_per_tier/cpu").asInt());
        assertEquals(3 + 0.8, j.at("/pods/0/score").asDouble(), 1e-9);
        assertEquals("pod-2", j.at("/pods/1/pod").asText());
        assertEquals(0, j.at("/pool/serving_prefix").asInt(), "nothing of eng-a is in KVPool's own pool");
        // weights given: cpu counts as much as gpu
        r = call("POST", "/api/v1/engine/scores", ADMIN, "{\"instance_id\":\"eng-a\",\"block_keys\":[11,12,13,14],"
                + "\"tier_weights\":{\"gpu\":1,\"cpu\":1}}");
        assertEquals(4.0, r.json().at("/pods/0/score").asDouble(), 1e-9, r.body());
        // token ids are hashed with the instance's scheme (block size 4: 9 tokens are 2 blocks)
        r = call("POST", "/api/v1/engine/scores", A, "{\"instance_id\":\"eng-a\",\"token_ids\":[1,2,3,4,5,6,7,8,9]}");
        assertEquals(200, r.status(), r.body());
        assertEquals(2, r.json().get("blocks").asInt());
    }

    @Test
    void aTenantReachesOnlyItsOwnInstances() {
        assertEquals(403, call("POST", "/api/v1/engine/scores", A, scores("eng-b", "[11]")).status());
        assertEquals(403, call("GET", "/api/v1/engine/instances/eng-b/cache", A, null).status());
        assertEquals(401, call("POST", "/api/v1/engine/scores", null, scores("eng-a", "[11]")).status());
        assertEquals(401, call("GET", "/api/v1/engine/instances/eng-a/cache", null, null).status());
        assertEquals(404, call("POST", "/api/v1/engine/scores", A, scores("ghost", "[11]")).status(),
                "a tenant sees no unregistered (group-less) instance");
        assertEquals(200, call("POST", "/api/v1/engine/scores", ADMIN, scores("ghost", "[11]")).status());
        assertEquals(403, call("GET", "/api/v1/engine/instances", A, null).status());
        assertEquals(403, call("GET", "/api/v1/engine/sources", A, null).status());
        assertEquals(403, call("POST", "/api/v1/engine/sources", A, "{}").status());
        assertEquals(403, call("DELETE", "/api/v1/engine/sources/x", B, null).status());
        Reply all = call("GET", "/api/v1/engine/instances", ADMIN, null);
        assertEquals(200, all.status(), all.body());
        assertTrue(all.body().contains("\"instance_id\":\"eng-a\"") && all.body().contains("\"pods\":2"), all.body());
    }

    @Test
    void theCacheViewHasExactlyTheConsoleShape() {
        call("POST", "/api/v1/engine/scores", A, scores("eng-a", "[11, 12, 13, 14]"));
        Reply r = call("GET", "/api/v1/engine/instances/eng-a/cache", A, null);
        assertEquals(200, r.status(), r.body());
        JsonNode j = r.json();
        assertEquals(Set.of("instance_id", "pods", "pool", "router"), names(j));
        assertEquals(Set.of("pod", "source", "visible", "state", "tiers", "last_event_at", "last_seq"),
                names(j.at("/pods/0")));
        assertEquals("pod-1", j.at("/pods/0/pod").asText());
        assertEquals("kvcm", j.at("/pods/0/source").asText(), "a pod no event source created");
        assertEquals("live", j.at("/pods/0/state").asText());
        assertEquals(4, j.at("/pods/0/tiers/cpu").asLong());
        assertEquals(Set.of("keys"), names(j.get("pool")));
        assertEquals(Set.of("queries", "prompt_blocks", "routed_hit_blocks", "routed_hit_rate", "random_hit_rate",
                "pool_hit_rate", "series"), names(j.get("router")));
        JsonNode router = j.get("router");
        assertTrue(router.get("queries").asLong() >= 1);
        double routed = router.get("routed_hit_rate").asDouble(), random = router.get("random_hit_rate").asDouble();
        assertTrue(routed > 0 && routed <= 1 && random > 0 && random <= routed, router.toString());
        assertEquals(60, router.get("series").size());
        JsonNode last = router.get("series").get(59);
        assertEquals(Set.of("minute", "queries", "routed_hit_rate", "random_hit_rate", "pool_hit_rate"), names(last));
        assertTrue(last.get("minute").asText().matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:00Z"), last.toString());
        assertTrue(last.get("queries").asLong() >= 1);
        assertEquals(404, call("GET", "/api/v1/engine/instances/nothing-here/cache", ADMIN, null).status());
    }

    private static Set<String> names(JsonNode n) {
        Set<String> s = new TreeSet<>();
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            s.add(it.next());
        }
        return s;
    }

    @Test
    void tokenIdsWithVllmExtraKeysScoreAgainstTheEnginesOwnHashes() {
        byte[] req = ProtoJson.print(RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup("team-a")
                .setInstanceId("eng-vllm").setBlockSize(16)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16")
                        .setExtra("{\"hash_scheme\":\"vllm-sha256-cbor\",\"hash_seed\":\"0\"}"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096)).build());
        Reply reg = call("POST", "/api/registerInstance", A, new String(req));
        assertEquals(200, reg.status(), reg.body());
        // hashing.md §3.7: sha256_cbor, seed "0", tokens 1..16, LoRA my-lora + salt salt-A → 859214314393778358
        caches.view().store("eng-vllm", "pod-l", "gpu", new long[] {859214314393778358L});
        StringBuilder tokens = new StringBuilder();
        for (int t = 1; t <= 16; t++) {
            tokens.append(t == 1 ? "" : ",").append(t);
        }
        Reply r = call("POST", "/api/v1/engine/scores", A, "{\"instance_id\":\"eng-vllm\",\"token_ids\":[" + tokens
                + "],\"lora_name\":\"my-lora\",\"cache_salt\":\"salt-A\"}");
        assertEquals(200, r.status(), r.body());
        assertEquals("pod-l", r.json().at("/pods/0/pod").asText(), r.body());
        assertEquals(1, r.json().at("/pods/0/longest_prefix").asInt(), r.body());
        // without the salt the key differs: no pod holds the prompt's first block
        r = call("POST", "/api/v1/engine/scores", A, "{\"instance_id\":\"eng-vllm\",\"token_ids\":[" + tokens
                + "],\"lora_name\":\"my-lora\"}");
        assertEquals(0, r.json().get("pods").size(), r.body());
    }

    @Test
    void badScoresRequestsAre400sNamingWhatIsWrong() {
        List<String> many = new ArrayList<>();
        for (int i = 0; i < 100_001; i++) {
            many.add(Integer.toString(i));
        }
        StringBuilder tiers = new StringBuilder("{");
        for (int i = 0; i < 65; i++) {
            tiers.append(i == 0 ? "" : ",").append("\"t").append(i).append("\":1");
        }
        tiers.append('}');
        String[][] cases = {
                {"{\"instance_id\":\"eng-a\"}", "exactly one of token_ids and block_keys"},
                {"{\"instance_id\":\"eng-a\",\"token_ids\":[1],\"block_keys\":[1]}", "exactly one"},
                {scores("eng-a", "[" + String.join(",", many) + "]"), "block_keys: at most 100000"},
                {scores("eng-a", "[\"abc\"]"), "block_keys[0]"},
                {scores("eng-a", "[18446744073709551616]"), "block_keys[0]: out of"},
                {scores("../x", "[1]"), "instance_id"},
                {"{\"instance_id\":\"eng-a\",\"block_keys\":[1],\"tier_weights\":{\"gpu\":-1}}", "tier_weights.gpu"},
                {"{\"instance_id\":\"eng-a\",\"block_keys\":[1],\"tier_weights\":" + tiers + "}", "at most 64 tiers"},
                {"{\"instance_id\":\"eng-a\",\"block_keys\":[1],\"tier_weights\":{\"g p u\":1}}", "tier name"},
                {"{\"instance_id\":\"eng-a\",\"token_ids\":[1,2,3,4],\"lora_name\":\"x\"}", "no extra keys"},
                {"{\"instance_id\":\"eng-a\",\"token_ids\":[1,2,3,4],\"mm_items\":[{\"identifier\":\"i\",\"offset\":-1,"
                        + "\"length\":1}]}", "mm_items[0].offset"},
                {"{\"instance_id\":\"eng-a\",\"token_ids\":[1.5]}", "request body"},
                {"{\"instance_id\":\"eng-a\",\"block_keys\":[1],\"surprise\":1}", "request body"},
        };
        for (String[] c : cases) {
            Reply r = call("POST", "/api/v1/engine/scores", ADMIN, c[0]);
            assertEquals(400, r.status(), c[0].length() > 200 ? c[1] : c[0] + " → " + r.body());
            assertTrue(r.body().contains(c[1]), c[1] + " not in " + r.body());
        }
    }

    @Test
    void sourcesAreValidatedAddedListedAndRemoved() {
        String[][] bad = {
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"ipc:///tmp/x\"}", "endpoint: must be tcp"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://*:5557\"}", "endpoint"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://host\"}", "endpoint"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://host:70000\"}", "endpoint"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1/x\"}", "endpoint"},
                {"{\"name\":\"s 1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1\"}", "name"},
                {"{\"name\":\"s1\",\"instance_id\":\"a/b\",\"endpoint\":\"tcp://h:1\"}", "instance_id"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1\",\"replay_endpoint\":\"udp://h:2\"}",
                        "replay_endpoint"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1\",\"pod\":\"a b\"}", "pod"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1\",\"tier_aliases\":{\"CPU\":\"\"}}",
                        "tier_aliases"},
                {"{\"name\":\"s1\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://h:1\",\"tier_aliases\":{\"CPU\":null}}",
                        "tier_aliases"},
        };
        for (String[] c : bad) {
            Reply r = call("POST", "/api/v1/engine/sources", ADMIN, c[0]);
            assertEquals(400, r.status(), c[0] + " → " + r.body());
            assertTrue(r.body().contains(c[1]), c[1] + " not in " + r.body());
        }
        String ok = "{\"name\":\"pod-9\",\"instance_id\":\"eng-a\",\"endpoint\":\"tcp://127.0.0.1:1\","
                + "\"replay_endpoint\":\"tcp://127.0.0.1:2\",\"topic\":\"kv@\",\"tier_aliases\":{\"CPU_TIER1\":\"cpu\"}}";
        Reply r = call("POST", "/api/v1/engine/sources", ADMIN, ok);
        assertEquals(201, r.status(), r.body());
        assertEquals("api", r.json().get("origin").asText());
        assertEquals(409, call("POST", "/api/v1/engine/sources", ADMIN, ok).status());
        r = call("GET", "/api/v1/engine/sources", ADMIN, null);
        assertTrue(r.body().contains("\"name\":\"pod-9\"") && r.body().contains("\"CPU_TIER1\":\"cpu\""), r.body());
        assertEquals(204, call("DELETE", "/api/v1/engine/sources/pod-9", ADMIN, null).status());
        assertEquals(404, call("DELETE", "/api/v1/engine/sources/pod-9", ADMIN, null).status());
    }
}
