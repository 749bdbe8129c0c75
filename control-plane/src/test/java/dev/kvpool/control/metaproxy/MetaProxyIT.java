package dev.kvpool.control.metaproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.control.testing.Api;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The control plane's /api/v1/meta/** forwarding against a stand-in metadata plane (a small Vert.x server in this
 * JVM that echoes what it received): method, path, query, Content-Type, Authorization and body go through, status,
 * body and Content-Type come back; paths outside whatif/instances, encoded and dot segments are refused before any
 * request leaves; a body over the control plane's limit is refused; a slow plane answers 504, an absent one 503.
 * (The forwarding to the real metadata plane is the lead's end-to-end test.)
 */
@QuarkusTest
@TestProfile(MetaProxyIT.Upstream.class)
class MetaProxyIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final Vertx VERTX = Vertx.vertx();
    static final int PORT = freePort();
    static volatile HttpServer server;
    static volatile int calls;

    public static class Upstream implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            start();
            return Map.of("kvpool.control.metadata-plane.url", "http://127.0.0.1:" + PORT,
                    "kvpool.control.metadata-plane.timeout", "1s",
                    "kvpool.control.max-body-size", "64K");
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static synchronized void start() {
        if (server != null) {
            return;
        }
        server = VERTX.createHttpServer().requestHandler(req -> req.body().onSuccess(body -> {
            calls++;
            if (req.path().equals("/api/v1/whatif/runs/slow")) {
                VERTX.setTimer(3000, t -> req.response().end("late"));
                return;
            }
            Map<String, Object> echo = new java.util.LinkedHashMap<>();
            echo.put("method", req.method().name());
            echo.put("uri", req.uri());
            echo.put("contentType", req.getHeader("Content-Type"));
            echo.put("authorization", req.getHeader("Authorization"));
            echo.put("body", body.toString(StandardCharsets.UTF_8));
            try {
                req.response().setStatusCode(req.method().name().equals("POST") ? 202 : 200)
                        .putHeader("Content-Type", "application/x-echo+json")
                        .putHeader("Location", "/api/v1/whatif/runs/w1")
                        .end(JSON.writeValueAsString(echo));
            } catch (Exception e) {
                req.response().setStatusCode(500).end();
            }
        })).listen(PORT, "127.0.0.1").toCompletionStage().toCompletableFuture().join();
    }

    @AfterAll
    static void stop() {
        VERTX.close();
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    static HttpResponse<String> call(String method, String path, String token, String ct, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:16492" + path))
                // as curl does for large bodies: a refused one (413) is answered before it is sent, instead of the
                // server closing the connection while the client still writes (seen as a flake in CI)
                .expectContinue(body != null && body.length() > 32 * 1024)
                .timeout(Duration.ofSeconds(20))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (ct != null) {
            b.header("Content-Type", ct);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void forwardsRefusesAndReportsTheUpstream() throws Exception {
        String admin = Api.adminToken();
        // forwarded as sent, answered as the upstream answered
        HttpResponse<String> r = call("POST", "/api/v1/meta/whatif/traces?name=my-trace", admin, "application/x-ndjson",
                "{\"timestamp\": 1, \"hash_ids\": [1]}\n");
        assertEquals(202, r.statusCode(), r.body());
        assertEquals("application/x-echo+json", r.headers().firstValue("Content-Type").orElse(""));
        assertEquals("/api/v1/meta/whatif/runs/w1", r.headers().firstValue("Location").orElse(""));
        JsonNode e = JSON.readTree(r.body());
        assertEquals("POST", e.path("method").asText());
        assertEquals("/api/v1/whatif/traces?name=my-trace", e.path("uri").asText());
        assertEquals("application/x-ndjson", e.path("contentType").asText());
        assertEquals("Bearer " + admin, e.path("authorization").asText());
        assertEquals("{\"timestamp\": 1, \"hash_ids\": [1]}\n", e.path("body").asText());
        for (String m : List.of("GET", "DELETE")) {
            HttpResponse<String> g = call(m, "/api/v1/meta/instances/i-1", admin, null, null);
            assertEquals(200, g.statusCode(), g.body());
            assertEquals(m, JSON.readTree(g.body()).path("method").asText());
            assertEquals("/api/v1/instances/i-1", JSON.readTree(g.body()).path("uri").asText());
        }
        // the engine caches and prefix scores of the console
        HttpResponse<String> en = call("POST", "/api/v1/meta/engine/scores", admin, "application/json",
                "{\"instance_id\":\"i-1\",\"token_ids\":[1]}");
        assertEquals(202, en.statusCode(), en.body());
        assertEquals("/api/v1/engine/scores", JSON.readTree(en.body()).path("uri").asText());
        assertEquals("/api/v1/engine/instances/i-1/cache",
                JSON.readTree(call("GET", "/api/v1/meta/engine/instances/i-1/cache", admin, null, null).body())
                        .path("uri").asText());
        // a query value is re-encoded, never spliced in raw
        HttpResponse<String> q = call("GET", "/api/v1/meta/whatif/traces?name=a%26b%3Dc", admin, null, null);
        assertEquals("/api/v1/whatif/traces?name=a%26b%3Dc", JSON.readTree(q.body()).path("uri").asText());

        // refused before anything is sent
        int before = calls;
        for (String bad : List.of("/api/v1/meta/whatif/..%2F..%2Fq%2Fmetrics", "/api/v1/meta/whatif/%2e%2e/x",
                "/api/v1/meta/instances/a%2Fb/block-keys", "/api/v1/meta/instances/.hidden", "/api/v1/meta/q/metrics",
                "/api/v1/meta/stats", "/api/v1/meta/instances/" + "x".repeat(200), "/api/v1/meta/whatif/a/b/c/d/e/f/g")) {
            HttpResponse<String> x = call("GET", bad, admin, null, null);
            assertTrue(x.statusCode() == 400 || x.statusCode() == 404, bad + ": " + x.statusCode() + " " + x.body());
            assertTrue(x.headers().firstValue("Content-Type").orElse("").startsWith("application/problem+json")
                    || x.statusCode() == 404, bad + ": " + x.headers().map());
        }
        assertEquals(before, calls, "no refused path reached the upstream");
        // unauthenticated: the control plane refuses it itself
        assertEquals(401, call("GET", "/api/v1/meta/whatif/runs", null, null, null).statusCode());
        assertEquals(before, calls);
        // a body over kvpool.control.max-body-size (64 KiB here)
        HttpResponse<String> big = call("POST", "/api/v1/meta/whatif/traces?name=big", admin, "application/x-ndjson",
                "x".repeat(70 * 1024));
        assertEquals(413, big.statusCode(), big.body());
        assertEquals(before, calls);

        // slow upstream: 504 after the timeout (1 s here)
        long t0 = System.nanoTime();
        HttpResponse<String> slow = call("GET", "/api/v1/meta/whatif/runs/slow", admin, null, null);
        assertEquals(504, slow.statusCode(), slow.body());
        assertTrue(slow.body().contains("127.0.0.1:" + PORT), slow.body());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "answered before the upstream's 3 s");

        // upstream down: 503 naming the URL
        server.close().toCompletionStage().toCompletableFuture().join();
        HttpResponse<String> down = call("GET", "/api/v1/meta/whatif/runs", admin, null, null);
        assertEquals(503, down.statusCode(), down.body());
        assertTrue(down.headers().firstValue("Content-Type").orElse("").startsWith("application/problem+json"));
        assertTrue(JSON.readTree(down.body()).path("detail").asText().startsWith("no metadata plane reachable at http://127.0.0.1:"
                + PORT + "/api/v1/whatif/runs"), down.body());
    }
}
