package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.is;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.api.proto.admin.AdminServiceGrpc;
import dev.kvpool.api.proto.admin.ListStorageRequest;
import dev.kvpool.control.outbox.OutboxRepository;
import dev.kvpool.control.testing.Api;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * No credential material leaves the control plane: no response of any GET route (enumerated from the OpenAPI
 * document), no KVCM read and no outbox event carries a password or its hash; KVCM's GenConfigSnapshot leaves
 * accounts out by default. Malformed HTTP Basic credentials are a 401, never a 500.
 */
@QuarkusTest
class CredentialsIT {
    static final String PASSWORD = "Cred-Secret-Pass-7";

    @Inject
    OutboxRepository outbox;

    static void noSecrets(String where, String body) {
        assertTrue(!body.contains("pbkdf2") && !body.contains(PASSWORD) && !body.contains("password_hash")
                && !body.contains("passwordHash"), where + " carries credential material: " + body);
    }

    @Test
    void noResponseOrEventCarriesAPasswordOrItsHash() {
        Api.nfsStorage("cred_nfs");
        Api.group("cred-g", "cred_nfs");
        admin().body(Api.instanceBody("cred-i", "cred-g")).post("/api/v1/instances").then().statusCode(201);
        admin().body(Map.of("name", "cred-user", "password", PASSWORD, "role", "tenant", "groups", List.of("cred-g")))
                .post("/api/v1/accounts").then().statusCode(201);
        admin().header("If-Match", "1").body(Map.of("password", PASSWORD + "x")).put("/api/v1/accounts/cred-user")
                .then().statusCode(200);

        Map<String, Object> paths = given().get("/q/openapi?format=json").then().statusCode(200).extract().path("paths");
        List<String> read = new ArrayList<>();
        paths.forEach((p, ops) -> {
            // /api/v1/meta/** answers what the metadata plane answers (block keys, what-if runs: no account data),
            // and there is none in this test (MetaProxyIT and the console's end-to-end tests cover it)
            if (((Map<?, ?>) ops).containsKey("get") && !p.startsWith("/api/v1/meta/")) {
                read.add(p.replace("/accounts/{name}", "/accounts/cred-user").replace("/storages/{name}", "/storages/cred_nfs")
                        .replace("/instance-groups/{name}", "/instance-groups/cred-g").replace("{id}", "cred-i"));
            }
        });
        assertTrue(read.contains("/api/v1/accounts/cred-user") && read.contains("/api/v1/config/snapshot"), read.toString());
        for (String p : read) {
            String body = admin().get(p).then().statusCode(200).extract().asString();
            noSecrets("GET " + p, body);
        }
        for (String rpc : List.of("listAccount", "genConfigSnapshot", "listStorage", "listInstanceGroup",
                "listInstanceInfo")) {
            noSecrets(rpc, admin().body("{\"trace_id\":\"t\"}").post("/api/" + rpc).then().statusCode(200)
                    .body("header.status.code", is("OK")).extract().asString());
        }
        List<String> leaking = QuarkusTransaction.requiringNew().call(() -> outbox.list("kind", "Account")).stream()
                .map(e -> e.payload).filter(p -> p.contains("pbkdf2") || p.contains("assword")).toList();
        assertEquals(List.of(), leaking, "account events never carry credentials");
    }

    static String basic(byte[] raw) {
        return "Basic " + Base64.getEncoder().encodeToString(raw);
    }

    @Test
    void malformedBasicCredentialsAre401() {
        List<String> headers = List.of(
                basic("cred\u0000user:x".getBytes(StandardCharsets.UTF_8)), // a NUL reached the database: 500
                basic("no-colon-at-all".getBytes(StandardCharsets.UTF_8)),
                basic(new byte[] {(byte) 0xff, (byte) 0xfe, ':', 'x'}),
                basic(("a".repeat(3000) + ":" + "b".repeat(1000)).getBytes(StandardCharsets.UTF_8)),
                "Basic !!!not-base64!!!", "Basic ", "Basic " + Base64.getEncoder().encodeToString(new byte[0]),
                basic(("admin:" + "x".repeat(2000)).getBytes(StandardCharsets.UTF_8)),
                "Bearer not.a-token", "Bearer " + "A".repeat(4000));
        for (String h : headers) {
            for (String path : List.of("/api/v1/storages", "/api/listStorage")) {
                var r = given().header("Authorization", h).contentType("application/json").body("{}")
                        .request(path.startsWith("/api/v1") ? "GET" : "POST", path).then().statusCode(401);
                // a 401 that says why: a problem document on REST, KVCM's {} with the X-KVPool-Error header
                if (path.startsWith("/api/v1")) {
                    r.contentType("application/problem+json").body("status", is(401))
                            .body("detail", containsString("credentials"));
                } else {
                    r.header("X-KVPool-Error", containsString("credentials")).body(is("{}"));
                }
            }
        }
        // and over gRPC: UNAUTHENTICATED, not INTERNAL/UNKNOWN
        ManagedChannel ch = ManagedChannelBuilder.forAddress("localhost", 16491).usePlaintext().build();
        try {
            for (String h : List.of(basic("cred\u0000user:x".getBytes(StandardCharsets.UTF_8)), "Basic !!!")) {
                Metadata md = new Metadata();
                md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), h);
                try {
                    AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md))
                            .withDeadlineAfter(20, TimeUnit.SECONDS)
                            .listStorage(ListStorageRequest.newBuilder().setTraceId("g").build());
                    fail("malformed credentials must fail: " + h);
                } catch (StatusRuntimeException e) {
                    assertEquals(io.grpc.Status.Code.UNAUTHENTICATED, e.getStatus().getCode(), h + ": " + e);
                }
            }
        } finally {
            ch.shutdownNow();
        }
        // the real password still works after all that
        given().auth().preemptive().basic(Api.ADMIN, Api.ADMIN_PASSWORD).get("/api/v1/storages").then().statusCode(200);
        given().contentType("application/json").body(Map.of("user", "a\u0000b", "password", "x"))
                .post("/api/v1/tokens").then().statusCode(401).body("detail", not(containsString("internal")));
    }
}
