package dev.kvpool.operator.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The REST client against a small real HTTP server that answers as the control plane does. */
class ControlPlaneApiTest {
    HttpServer server;
    String url;
    final List<String> seen = new CopyOnWriteArrayList<>();
    final AtomicInteger tokens = new AtomicInteger();
    volatile String validToken = "t1";
    volatile int groupStatus = 200;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/api/v1/tokens", x -> {
            String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            if (!body.contains("\"password\":\"Right-Passw0rd\"")) {
                reply(x, 401, null, "{\"status\":401,\"detail\":\"wrong user or password\"}");
                return;
            }
            validToken = "t" + tokens.incrementAndGet();
            reply(x, 200, null, "{\"token\":\"" + validToken + "\",\"expiresAt\":\""
                    + Instant.now().plusSeconds(3600) + "\"}");
        });
        server.createContext("/api/v1/instance-groups/", x -> {
            seen.add(x.getRequestMethod() + " " + x.getRequestURI().getRawPath() + " auth="
                    + x.getRequestHeaders().getFirst("Authorization") + " if-match="
                    + x.getRequestHeaders().getFirst("If-Match"));
            if (!("Bearer " + validToken).equals(x.getRequestHeaders().getFirst("Authorization"))) {
                reply(x, 401, null, "");
            } else if (groupStatus != 200) {
                reply(x, groupStatus, null, "{\"status\":" + groupStatus + ",\"detail\":\"" + "d".repeat(5000) + "\"}");
            } else {
                reply(x, 200, "\"7\"", "{\"name\":\"g\",\"version\":7}");
            }
        });
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    static void reply(HttpExchange x, int status, String etag, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        if (etag != null) {
            x.getResponseHeaders().add("ETag", etag);
        }
        x.getResponseHeaders().add("Content-Type", "application/json");
        x.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
        if (b.length > 0) {
            x.getResponseBody().write(b);
        }
        x.close();
    }

    ControlPlaneApi api(String password) {
        return new ControlPlaneApi(url + "/", "admin", password, Duration.ofSeconds(5));
    }

    @Test
    void usesOneTokenAndSendsIfMatchWithTheEtag() throws IOException {
        ControlPlaneApi api = api("Right-Passw0rd");
        ControlPlaneApi.Reply r = api.get("/api/v1/instance-groups/" + ControlPlaneApi.segment("a b@c"));
        assertEquals(200, r.status());
        assertEquals("7", r.etag());
        assertEquals(7L, r.version());
        api.put("/api/v1/instance-groups/g", r.etag(), ControlPlaneApi.JSON.createObjectNode().put("quotaBytes", 1));
        assertEquals(List.of("GET /api/v1/instance-groups/a%20b%40c auth=Bearer t1 if-match=null",
                "PUT /api/v1/instance-groups/g auth=Bearer t1 if-match=\"7\""), seen);
        assertEquals(1, tokens.get());
    }

    @Test
    void aRejectedTokenIsRenewedOnce() throws IOException {
        ControlPlaneApi api = api("Right-Passw0rd");
        api.get("/api/v1/instance-groups/g");
        validToken = "rotated"; // e.g. the control plane's signing key changed
        assertEquals(200, api.get("/api/v1/instance-groups/g").status());
        assertEquals(2, tokens.get());
    }

    @Test
    void refusedCredentialsAreTheirOwnError() {
        IOException e = assertThrows(ControlPlaneApi.CredentialsRefused.class,
                () -> api("Wrong-Passw0rd").get("/api/v1/instance-groups/g"));
        assertTrue(e.getMessage().contains("HTTP 401 wrong user or password"), e.getMessage());
        assertTrue(!e.getMessage().contains("Wrong-Passw0rd"), "the password is never in a message");
    }

    @Test
    void fiveHundredsAndUnreachableAreUnavailableAndFourHundredsAreReplies() throws IOException {
        ControlPlaneApi api = api("Right-Passw0rd");
        groupStatus = 409;
        ControlPlaneApi.Reply r = api.get("/api/v1/instance-groups/g");
        assertEquals(409, r.status());
        assertNull(r.etag());
        assertTrue(r.detail().length() <= ControlPlaneApi.MAX_DETAIL + 1, "detail is bounded");
        groupStatus = 503;
        assertThrows(ControlPlaneApi.Unavailable.class, () -> api.get("/api/v1/instance-groups/g"));
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        ControlPlaneApi nowhere = new ControlPlaneApi("http://127.0.0.1:" + closed, "admin", "x", Duration.ofSeconds(2));
        assertThrows(ControlPlaneApi.Unavailable.class, () -> nowhere.get("/api/v1/instance-groups/g"));
    }
}
