package dev.kvpool.meta.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.runtime.MetaRuntime;
import dev.kvpool.meta.index.StorageKind;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.testing.hostile.HostileJson;
import dev.kvpool.testing.hostile.RawHttp;
import io.grpc.Metadata;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.grpc.GrpcClientUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every route of the metadata plane driven with generated malformed and oversized input: each KVCM meta RPC over
 * HTTP with every field at every depth replaced by hostile values, broken and fuzzed bodies, bad framing, lying
 * lengths, slow and oversized bodies; every REST route of its OpenAPI document with hostile path segments and
 * bodies; the gRPC service with hostile field values. Each answer must be a refusal with a message (KVCM's 400 with
 * X-KVPool-Error, or its envelope with a non-OK code; REST a 4xx problem) or a legitimate success; never a 5xx, a
 * hang, a dropped connection, a crash reported as INTERNAL_ERROR, or heap spent on what a client only declared. A
 * refused request changes nothing: instances, key counts and usage are compared before and after each one.
 */
@QuarkusTest
@TestProfile(TenantsProfile.class)
class HostileInputTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration T = Duration.ofSeconds(15);
    private static final String TARGET = "hostile-target";

    @Inject
    MetaRuntime runtime;
    @GrpcClient("meta")
    MetaService grpc;

    private static int port() {
        return URI.create(MetaApi.base()).getPort();
    }

    /** Valid bodies of every KVCM meta RPC, aimed at the target instance (keys it holds are 11..14). */
    static Map<String, String> samples() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("registerInstance", "{\"trace_id\":\"t\",\"instance_group\":\"team-a\",\"instance_id\":\"hostile-new\","
                + "\"block_size\":4,\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"bf16\",\"extra\":\"\"},"
                + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":4096}],"
                + "\"location_spec_groups\":[{\"name\":\"g\",\"spec_names\":[\"tp0\"]}]}");
        m.put("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\"}");
        m.put("getCacheMeta", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"block_keys\":[\"11\",\"12\"],"
                + "\"block_mask\":{\"offset\":0}}");
        m.put("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"query_type\":\"QT_PREFIX_MATCH\","
                + "\"block_keys\":[\"11\",\"12\"],\"block_mask\":{\"bool_masks\":{\"values\":[false,false]}},\"sw_size\":0,"
                + "\"location_spec_names\":[\"tp0\"]}");
        m.put("startWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"block_keys\":[\"21\",\"22\"],"
                + "\"write_timeout_seconds\":3600}");
        m.put("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"write_session_id\":\"nosuch\","
                + "\"success_blocks\":{\"bool_masks\":{\"values\":[true]}}}");
        m.put("removeCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"block_keys\":[\"31\"]}");
        m.put("trimCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"strategy\":\"TS_TIMESTAMP\","
                + "\"begin_timestamp\":0,\"end_timestamp\":1}");
        m.put("getClusterInfo", "{\"trace_id\":\"t\",\"instance_id\":\"\"}");
        m.put("getCacheLocationLen", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"query_type\":\"QT_PREFIX_MATCH\","
                + "\"block_keys\":[\"11\"],\"sw_size\":0}");
        m.put("getCacheLocationsByBackend", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"query_type\":"
                + "\"QT_BATCH_GET\",\"block_keys\":[\"11\"],\"backend_selectors\":[{\"backend_type\":\"ST_NFS\"}]}");
        // engine events (kvcm-engine-events.md): the target's group lists no event-report storage, so a well-formed
        // report is INSTANCE_NOT_EXIST; every mutation of it must still be a reasoned refusal, never a 5xx
        m.put("reportEvent", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"host_ip_port\":\"10.0.0.8:80\","
                + "\"storage_type\":\"ST_EVENT_REPORT_L1P5\",\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\","
                + "\"block_add\":{\"block_key\":\"11\",\"medium\":\"hbm\",\"specs\":[{\"name\":\"s0\","
                + "\"uri\":\"event_report://10.0.0.8:80/hbm\"}]}}]}");
        m.put("getHostCacheState", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"query_type\":"
                + "\"QT_PREFIX_MATCH\",\"block_cache_keys\":[\"11\",\"12\"],\"medium\":[\"hbm\"]}");
        return m;
    }

    @BeforeEach
    void target() throws IOException {
        if (runtime.registry().instance(TARGET) != null) {
            return;
        }
        post("registerInstance", samples().get("registerInstance").replace("hostile-new", TARGET), TenantsProfile.ADMIN);
        JsonNode s = JSON.readTree(post("startWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET
                + "\",\"block_keys\":[\"11\",\"12\",\"13\",\"14\"],\"write_timeout_seconds\":60}", TenantsProfile.ADMIN).body());
        post("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"write_session_id\":\""
                + s.path("write_session_id").asText() + "\",\"success_blocks\":{\"offset\":4}}", TenantsProfile.ADMIN);
        assertEquals(4, runtime.registry().instance(TARGET).index.keyCount());
    }

    private static RawHttp.Reply post(String rpc, String body, String token) throws IOException {
        return send("/api/" + rpc, body.getBytes(StandardCharsets.UTF_8), token);
    }

    private static RawHttp.Reply send(String path, byte[] body, String token) throws IOException {
        String[] auth = token == null ? new String[0] : new String[] {"Authorization: Bearer " + token};
        return RawHttp.exchange("127.0.0.1", port(), RawHttp.post(path, "localhost", "application/json", body, auth), T);
    }

    /** Instances, their key counts and each group's usage: what a refused request must leave as it was. */
    private String state() {
        Map<String, Object> s = new TreeMap<>();
        for (Instance i : runtime.registry().instances()) {
            s.put("instance " + i.id, i.index.keyCount());
        }
        for (String g : List.of("team-a", "team-b")) {
            var u = runtime.ledger().usage(g);
            s.put("usage " + g, u.total() + " " + u.byType(StorageKind.FILE));
        }
        return s.toString();
    }

    private final List<String> problems = new ArrayList<>();

    /** Checks one KVCM answer; returns the reply's JSON when it was a success. */
    private JsonNode judge(String label, RawHttp.Reply r, String before) throws IOException {
        if (r.outcome() != RawHttp.Outcome.ANSWERED) {
            problems.add(label + ": " + r);
            return null;
        }
        if (r.status() >= 500 || r.status() != 200 && r.status() != 400 && r.status() != 413) {
            problems.add(label + ": HTTP " + r);
            return null;
        }
        if (r.status() != 200) {
            String why = r.header("X-KVPool-Error");
            if (why == null || why.isBlank() || !r.body().equals("{}")) {
                problems.add(label + ": a refusal without its reason or with a body other than {}: " + r);
            }
            unchanged(label, before);
            return null;
        }
        JsonNode n = JSON.readTree(r.body());
        String code = n.path("header").path("status").path("code").asText();
        String message = n.path("header").path("status").path("message").asText();
        if (code.equals("OK")) {
            return n;
        }
        if (message.isBlank() || message.contains("Exception") || message.contains("java.")) {
            problems.add(label + ": " + code + " without a reason, or a crash reported as one: " + message);
        }
        unchanged(label, before);
        return null;
    }

    private void unchanged(String label, String before) {
        String after = state();
        if (!after.equals(before)) {
            problems.add(label + ": refused, yet the state changed:\n  before " + before + "\n  after  " + after);
        }
    }

    private void checkNoProblems() {
        if (!problems.isEmpty()) {
            // one line per kind of mishandling (the route and what went wrong), then the first ones in full
            java.util.Set<String> kinds = new java.util.TreeSet<>();
            for (String p : problems) {
                kinds.add(p.replaceAll("\\[(?!(chunk|Content|two|NUL|header|unknown))[^\\]]*\\]", "[…]").replaceAll("/api/v1/([a-z-]+)/[^/ ]+", "/api/v1/$1/{…}")
                        .replaceAll("Error id [^,]*,", "").replaceAll("(.{0,240}).*", "$1"));
            }
            fail(problems.size() + " hostile inputs were mishandled, " + kinds.size() + " kinds:\n  "
                    + String.join("\n  ", kinds));
        }
    }

    /** A success of a write start leaves a session: closed as failed at once, so it changes nothing later. */
    private void cleanUp(String rpc, JsonNode ok) throws IOException {
        if (ok != null && rpc.equals("startWriteCache") && !ok.path("write_session_id").asText().isEmpty()) {
            post("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + TARGET + "\",\"write_session_id\":\""
                    + ok.path("write_session_id").asText() + "\",\"success_blocks\":{\"offset\":0}}", TenantsProfile.ADMIN);
        }
    }

    @Test
    void everyKvcmRpcRefusesMalformedBodiesWithAReasonAndChangesNothing() throws IOException {
        int cases = 0;
        for (Map.Entry<String, String> e : samples().entrySet()) {
            String rpc = e.getKey();
            List<HostileJson.Case> all = new ArrayList<>(HostileJson.broken(e.getValue()));
            all.addAll(HostileJson.fields(e.getValue()));
            all.addAll(HostileJson.fuzz(e.getValue(), rpc.hashCode(), 40));
            for (HostileJson.Case c : all) {
                String before = state();
                RawHttp.Reply r = send("/api/" + rpc, c.body(), TenantsProfile.ADMIN);
                cleanUp(rpc, judge(rpc + " [" + c + "]", r, before));
                cases++;
            }
            // and as the other tenant, who may not touch the target at all
            for (HostileJson.Case c : HostileJson.fields(e.getValue())) {
                String before = state();
                RawHttp.Reply r = send("/api/" + rpc, c.body(), TenantsProfile.TENANT_B);
                JsonNode ok = judge(rpc + " as tenant B [" + c + "]", r, before);
                if (ok != null && !rpc.equals("getClusterInfo") && !rpc.equals("registerInstance")
                        && ok.path("header").path("status").path("code").asText().equals("OK")
                        && c.text().contains(TARGET)) {
                    problems.add(rpc + " as tenant B [" + c + "]: reached team-a's instance: " + r.body());
                }
                cleanUp(rpc, ok);
                cases++;
            }
        }
        System.out.printf("HostileInputTest: %,d KVCM requests judged%n", cases);
        checkNoProblems();
        for (Instance i : runtime.registry().instances()) {
            assertTrue(Identifiers.valid(Identifiers.Kind.INSTANCE, i.id), "registered with a bad id: " + i.id);
        }
        assertEquals(4, runtime.registry().instance(TARGET).index.keyCount(), "the target's blocks are all there");
    }

    @Test
    void badFramingIsAnswered400AndNothingHangs() throws IOException {
        for (String path : List.of("/api/getCacheLocation", "/api/v1/instances/" + TARGET + "/block-keys")) {
            for (Map.Entry<String, byte[]> e : RawHttp.badFraming(path, "localhost", "application/json").entrySet()) {
                String before = state();
                RawHttp.Reply r = RawHttp.exchange("127.0.0.1", port(), e.getValue(), T);
                String label = path + " [" + e.getKey() + "]";
                if (r.outcome() == RawHttp.Outcome.TIMED_OUT) {
                    problems.add(label + ": no answer within " + T);
                } else if (r.outcome() == RawHttp.Outcome.CLOSED_WITHOUT_ANSWER) {
                    problems.add(label + ": connection closed without an answer");
                } else if (r.status() >= 500 || r.status() < 400 && !e.getKey().equals("Content-Length and chunked")) {
                    // (Netty drops a Content-Length sent beside chunked, as RFC 9112 §6.3 allows, and reads chunks)
                    problems.add(label + ": HTTP " + r);
                }
                unchanged(label, before);
            }
        }
        // a body that stops short: 408 after the body timeout (2 s here), on the KVCM routes and the REST routes alike
        RawHttp.Reply kvcm = RawHttp.exchange("127.0.0.1", port(), RawHttp.stalled("/api/getCacheLocation", "localhost",
                100, 2), T);
        assertEquals(408, kvcm.status(), kvcm.toString());
        assertTrue(kvcm.header("X-KVPool-Error").startsWith("the request body stopped arriving"), kvcm.toString());
        assertEquals("{}", kvcm.body(), "KVCM's routes answer {}");
        RawHttp.Reply rest = RawHttp.exchange("127.0.0.1", port(), RawHttp.concat(RawHttp.head("POST",
                "/api/v1/instances/" + TARGET + "/block-keys", "localhost", "Content-Type: application/json",
                "Authorization: Bearer " + TenantsProfile.ADMIN, "Content-Length: 100"), RawHttp.ascii("{}")), T);
        assertEquals(408, rest.status(), rest.toString());
        assertTrue(rest.body().contains("stopped arriving"), rest.toString());
        checkNoProblems();
        // the server still answers after all that
        assertEquals(200, post("getClusterInfo", samples().get("getClusterInfo"), null).status());
    }

    @Test
    void declaredAndSlowBodiesHoldNoHeapAndDelayNoOne() throws Exception {
        long heap = RawHttp.usedHeapAfterGc();
        List<RawHttp.Connection> open = new ArrayList<>();
        try {
            for (int i = 0; i < 40; i++) { // each declares just under the body limit (8 MiB here), then stalls
                RawHttp.Connection c = RawHttp.open("127.0.0.1", port(), T);
                c.send(RawHttp.ascii("POST /api/getCacheLocation HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                        + "application/json\r\nAuthorization: Bearer " + TenantsProfile.ADMIN + "\r\nContent-Length: "
                        + ((8 << 20) - 1) + "\r\n\r\n{\"trace_id\":"));
                open.add(c);
            }
            Thread.sleep(500); // real time: the server takes in and parses the 40 stalled heads
            long held = RawHttp.usedHeapAfterGc() - heap;
            // 40 × 8 MiB would be 320 MiB if declared lengths were allocated up front
            assertTrue(held < 32L << 20, "40 stalled bodies hold " + (held >> 20) + " MiB of heap");
            long t0 = System.nanoTime();
            RawHttp.Reply r = post("getCacheLocation", samples().get("getCacheLocation"), TenantsProfile.ADMIN);
            assertEquals(200, r.status(), r.toString());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "a normal call waits behind stalled ones");
        } finally {
            for (RawHttp.Connection c : open) {
                c.close();
            }
        }
        // bodies past the limit: 413, whether declared or sent in chunks
        RawHttp.Reply big = RawHttp.exchange("127.0.0.1", port(), RawHttp.concat(RawHttp.ascii(
                "POST /api/getCacheLocation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + (9 << 20) + "\r\nConnection: close\r\n\r\n"), new byte[1024]), T);
        assertEquals(413, big.status(), big.toString());
        byte[] chunk = new byte[1 << 20];
        java.util.Arrays.fill(chunk, (byte) ' ');
        RawHttp.Connection c = RawHttp.open("127.0.0.1", port(), T);
        try (c) {
            c.send(RawHttp.ascii("POST /api/getCacheLocation HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                    + "application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
            try {
                for (int i = 0; i < 10; i++) {
                    c.send(RawHttp.concat(RawHttp.ascii(Integer.toHexString(chunk.length) + "\r\n"), chunk, RawHttp.ascii("\r\n")));
                }
            } catch (IOException closedByTheServer) {
                // it answered and closed once the limit was passed
            }
            RawHttp.Reply r = c.read(T);
            assertEquals(413, r.status(), r.toString());
        }
    }

    @Test
    void everyRestRouteRefusesHostilePathsAndBodies() throws IOException {
        JsonNode api = JSON.readTree(RawHttp.exchange("127.0.0.1", port(), RawHttp.head("GET", "/q/openapi?format=json",
                "localhost"), T).body());
        List<String> segments = List.of("..", ".", "%2e%2e", "a%2Fb", "%00", "x%0d%0aX-Injected:%201", "%7Bx%7D",
                "x".repeat(300), "%C3%A4", "%FF");
        int cases = 0;
        for (var p = api.path("paths").fields(); p.hasNext(); ) {
            var route = p.next();
            for (var op = route.getValue().fields(); op.hasNext(); ) {
                String method = op.next().getKey().toUpperCase(java.util.Locale.ROOT);
                List<String> paths = new ArrayList<>();
                if (route.getKey().contains("{")) {
                    for (String s : segments) {
                        paths.add(route.getKey().replaceAll("\\{[^}]+}", s));
                    }
                } else {
                    paths.add(route.getKey());
                }
                List<byte[]> bodies = new ArrayList<>();
                if (method.equals("POST") || method.equals("PUT")) {
                    String sample = route.getKey().endsWith("block-keys") ? "{\"token_ids\":[1,2,3,4,5]}"
                            : route.getKey().endsWith("reclaim") ? "{\"reclaim_policy\":\"POLICY_LRU\","
                            + "\"trigger_strategy\":{\"used_percentage\":0.9}}" : "{}";
                    HostileJson.broken(sample).forEach(c -> bodies.add(c.body()));
                    HostileJson.fields(sample).forEach(c -> bodies.add(c.body()));
                } else {
                    bodies.add(null);
                }
                for (String path : paths) {
                    for (byte[] body : bodies) {
                        for (String token : new String[] {TenantsProfile.ADMIN, TenantsProfile.TENANT_A, null}) {
                            String before = state();
                            List<String> hs = new ArrayList<>(List.of("Content-Type: application/json"));
                            if (token != null) {
                                hs.add("Authorization: Bearer " + token);
                            }
                            if (body != null) {
                                hs.add("Content-Length: " + body.length);
                            }
                            byte[] req = RawHttp.concat(RawHttp.head(method, path, "localhost", hs.toArray(String[]::new)),
                                    body == null ? new byte[0] : body);
                            RawHttp.Reply r = RawHttp.exchange("127.0.0.1", port(), req, T);
                            String label = method + " " + path + (token == null ? " (no token)" : "");
                            cases++;
                            if (r.outcome() != RawHttp.Outcome.ANSWERED || r.status() >= 500) {
                                problems.add(label + ": " + r);
                            } else if (r.status() >= 400 && r.body().isBlank() && r.status() != 404 && r.status() != 405) {
                                problems.add(label + ": " + r.status() + " without a reason");
                            } else if (r.status() >= 400) {
                                unchanged(label, before);
                            }
                        }
                    }
                }
            }
        }
        System.out.printf("HostileInputTest: %,d REST requests judged%n", cases);
        checkNoProblems();
    }

    @Test
    void grpcRefusesHostileFieldValues() {
        Metadata m = new Metadata();
        m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + TenantsProfile.ADMIN);
        MetaService s = GrpcClientUtils.attachHeaders(grpc, m);
        for (Map.Entry<String, JsonNode> h : HostileJson.HOSTILE_VALUES.entrySet()) {
            if (!h.getValue().isTextual()) {
                continue;
            }
            String v = h.getValue().asText();
            String before = state();
            RegisterInstanceResponse r = s.registerInstance(RegisterInstanceRequest.newBuilder().setTraceId(v)
                    .setInstanceGroup("team-a").setInstanceId(v).setBlockSize(4).setModelDeployment(ModelDeployment
                            .newBuilder().setModelName(v).setDtype(v)).addLocationSpecInfos(LocationSpecInfo.newBuilder()
                            .setName(v).setSize(Long.MAX_VALUE)).build()).await().atMost(T);
            if (r.getHeader().getStatus().getCode() == ErrorCode.OK) {
                problems.add("gRPC registerInstance with " + h.getKey() + " accepted");
            }
            unchanged("gRPC registerInstance " + h.getKey(), before);
            GetCacheLocationResponse q = s.getCacheLocation(GetCacheLocationRequest.newBuilder().setTraceId(v)
                    .setInstanceId(TARGET).setQueryType(QueryType.QT_PREFIX_MATCH).addBlockKeys(11)
                    .setBlockMask(BlockMask.newBuilder().setOffset(Integer.MAX_VALUE)).build()).await().atMost(T);
            ErrorCode c = q.getHeader().getStatus().getCode();
            if (c == ErrorCode.INTERNAL_ERROR || c == ErrorCode.UNKNOWN_ERROR) {
                problems.add("gRPC getCacheLocation with " + h.getKey() + ": " + q.getHeader());
            }
            CommonResponse f = s.finishWriteCache(FinishWriteCacheRequest.newBuilder().setTraceId("t").setInstanceId(TARGET)
                    .setWriteSessionId(v).setSuccessBlocks(BlockMask.newBuilder().setOffset(Integer.MAX_VALUE)).build())
                    .await().atMost(T);
            if (f.getHeader().getStatus().getCode() == ErrorCode.OK || f.getHeader().getStatus().getMessage().contains("Exception")) {
                problems.add("gRPC finishWriteCache with " + h.getKey() + ": " + f.getHeader());
            }
            unchanged("gRPC finishWriteCache " + h.getKey(), before);
        }
        checkNoProblems();
    }
}
