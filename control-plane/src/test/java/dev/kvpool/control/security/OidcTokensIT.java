package dev.kvpool.control.security;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.kvpool.control.testing.Api;
import dev.kvpool.testing.MutableClock;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.ValidatableResponse;
import io.smallrye.jwt.algorithm.SignatureAlgorithm;
import io.smallrye.jwt.build.Jwt;
import jakarta.inject.Inject;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jose4j.jwk.PublicJsonWebKey;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * External OIDC tokens on the control plane's REST. No real OIDC provider can run here (no Docker, no Keycloak): the
 * test serves a discovery document and a JWKS itself (the JDK's HTTP server) and signs tokens with its own RSA and EC
 * keys, as an IdP would. The control plane is the real one (real PostgreSQL).
 */
@QuarkusTest
@TestProfile(OidcTokensIT.Oidc.class)
class OidcTokensIT {
    static final int PORT = 18_977;
    static final String ISSUER = "http://127.0.0.1:" + PORT + "/realms/kvpool";
    static final String AUDIENCE = "kvpool-control";

    public static class Oidc implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.ofEntries(
                    Map.entry("kvpool.control.oidc.issuer", ISSUER),
                    Map.entry("kvpool.control.oidc.audience", AUDIENCE),
                    Map.entry("kvpool.control.oidc.role-claim", "realm_access.roles"),
                    Map.entry("kvpool.control.oidc.roles.admin", "kv-admin"),
                    Map.entry("kvpool.control.oidc.roles.operator", "kv-operator,kv-ops"),
                    Map.entry("kvpool.control.oidc.roles.tenant", "kv-tenant"),
                    Map.entry("kvpool.control.oidc.groups-claim", "kvpool_groups"),
                    Map.entry("kvpool.control.oidc.timeout", "1s"),
                    Map.entry("kvpool.control.oidc.jwks-refresh", "2s"),
                    Map.entry("quarkus.http.test-port", "18978"),
                    Map.entry("quarkus.grpc.server.test-port", "18979"),
                    Map.entry("kvpool.control.http-port", "18978"),
                    Map.entry("kvpool.control.grpc-port", "18979"));
        }
    }

    static HttpServer server;
    /** What the JWKS endpoint serves now (a test rotates keys by replacing it). */
    static final AtomicReference<String> JWKS = new AtomicReference<>();
    static final AtomicInteger JWKS_FETCHES = new AtomicInteger();
    static volatile long stallMs;
    static KeyPair rsa, ec;
    @Inject
    OidcIssuer issuer;

    static KeyPair gen(String alg) throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance(alg);
        if (alg.equals("EC")) {
            g.initialize(new ECGenParameterSpec("secp256r1"));
        } else {
            g.initialize(2048);
        }
        return g.generateKeyPair();
    }

    static String jwks(Map<String, KeyPair> keys) throws Exception {
        List<String> out = new ArrayList<>();
        for (var e : keys.entrySet()) {
            PublicJsonWebKey k = PublicJsonWebKey.Factory.newPublicJwk(e.getValue().getPublic());
            k.setKeyId(e.getKey());
            k.setUse("sig");
            out.add(k.toJson());
        }
        return "{\"keys\":[" + String.join(",", out) + "]}";
    }

    static void start() throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", PORT), 16);
        server.createContext("/realms/kvpool/.well-known/openid-configuration", x -> {
            if (stallMs > 0) {
                try {
                    Thread.sleep(stallMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            byte[] b = ("{\"issuer\":\"" + ISSUER + "\",\"jwks_uri\":\"" + ISSUER + "/protocol/openid-connect/certs\"}")
                    .getBytes(StandardCharsets.UTF_8);
            x.getResponseHeaders().add("Content-Type", "application/json");
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        });
        server.createContext("/realms/kvpool/protocol/openid-connect/certs", x -> {
            JWKS_FETCHES.incrementAndGet();
            byte[] b = JWKS.get().getBytes(StandardCharsets.UTF_8);
            x.getResponseHeaders().add("Content-Type", "application/json");
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        });
        server.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4));
        server.start();
    }

    @BeforeEach
    void fixtures() throws Exception {
        if (server != null) {
            return;
        }
        rsa = gen("RSA");
        ec = gen("EC");
        JWKS.set(jwks(Map.of("rsa-1", rsa, "ec-1", ec)));
        start();
        Api.nfsStorage("oidc_nfs");
        Api.group("oidc-mine", "oidc_nfs");
        Api.group("oidc-theirs", "oidc_nfs");
    }

    @AfterEach
    void wallClock() {
        issuer.clock(InstantSource.system());
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    static Map<String, Object> claims(String user, List<String> roles, List<String> groups) {
        long now = Instant.now().getEpochSecond();
        return new java.util.HashMap<>(Map.of("iss", ISSUER, "sub", "f:" + user, "aud", AUDIENCE,
                "preferred_username", user, "iat", now, "exp", now + 300,
                "realm_access", Map.of("roles", roles), "kvpool_groups", groups));
    }

    static String rs256(String kid, KeyPair k, Map<String, Object> c) {
        return Jwt.claims(c).jws().keyId(kid).algorithm(SignatureAlgorithm.RS256).sign(k.getPrivate());
    }

    static String es256(String kid, KeyPair k, Map<String, Object> c) {
        return Jwt.claims(c).jws().keyId(kid).algorithm(SignatureAlgorithm.ES256).sign(k.getPrivate());
    }

    static ValidatableResponse get(String token, String path) {
        return Api.as(token).get(path).then();
    }

    static void refused(String token, String reasonPart) {
        String why = Api.as(token).get("/api/v1/storages").then().statusCode(401).extract().header("X-KVPool-Error");
        assertTrue(why != null && why.contains(reasonPart), "reason '" + why + "' should name '" + reasonPart + "'");
    }

    static String b64(String s) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void rolesMapByClaim() {
        String admin = rs256("rsa-1", rsa, claims("alice", List.of("offline_access", "kv-admin"), List.of()));
        get(admin, "/api/v1/accounts").statusCode(200);
        get(admin, "/api/v1/storages").statusCode(200);
        // a second operator value, and ES256
        String operator = es256("ec-1", ec, claims("bob", List.of("kv-ops"), List.of()));
        get(operator, "/api/v1/storages").statusCode(200);
        get(operator, "/api/v1/accounts").statusCode(403);
        // highest wins
        String both = rs256("rsa-1", rsa, claims("carol", List.of("kv-tenant", "kv-operator"), List.of()));
        get(both, "/api/v1/storages").statusCode(200);
        get(both, "/api/v1/accounts").statusCode(403);
        // no mapped value: refused with the reason
        refused(rs256("rsa-1", rsa, claims("dave", List.of("offline_access"), List.of())), "no value mapped");
        var noClaim = claims("erin", List.of(), List.of());
        noClaim.remove("realm_access");
        refused(rs256("rsa-1", rsa, noClaim), "realm_access.roles");
    }

    @Test
    void tenantSeesOnlyItsGroups() {
        String t = rs256("rsa-1", rsa, claims("tina", List.of("kv-tenant"), List.of("oidc-mine", "../bad")));
        List<String> names = get(t, "/api/v1/instance-groups").statusCode(200).extract().path("items.name");
        assertEquals(List.of("oidc-mine"), names);
        get(t, "/api/v1/instance-groups/oidc-mine").statusCode(200);
        get(t, "/api/v1/instance-groups/oidc-theirs").statusCode(403);
        get(t, "/api/v1/storages").statusCode(403);
        // a tenant whose token names no groups sees none
        String none = rs256("rsa-1", rsa, claims("tom", List.of("kv-tenant"), List.of()));
        assertEquals(List.of(), get(none, "/api/v1/instance-groups").statusCode(200).extract().path("items.name"));
    }

    @Test
    void badTokensAre401() throws Exception {
        var wrongIss = claims("x", List.of("kv-admin"), List.of());
        wrongIss.put("iss", ISSUER + "-other");
        // another issuer: not the OIDC path, so KVPool's verifier refuses it (its algorithm or issuer)
        get(rs256("rsa-1", rsa, wrongIss), "/api/v1/storages").statusCode(401);
        var wrongAud = claims("x", List.of("kv-admin"), List.of());
        wrongAud.put("aud", "someone-else");
        refused(rs256("rsa-1", rsa, wrongAud), "audience");
        var expired = claims("x", List.of("kv-admin"), List.of());
        expired.put("iat", Instant.now().getEpochSecond() - 1000);
        expired.put("exp", Instant.now().getEpochSecond() - 600);
        refused(rs256("rsa-1", rsa, expired), "expired");
        var future = claims("x", List.of("kv-admin"), List.of());
        future.put("nbf", Instant.now().getEpochSecond() + 200);
        refused(rs256("rsa-1", rsa, future), "not yet valid");
        var issuedAhead = claims("x", List.of("kv-admin"), List.of());
        issuedAhead.put("iat", Instant.now().getEpochSecond() + 200);
        refused(rs256("rsa-1", rsa, issuedAhead), "issued in the future");
        var noIat = claims("x", List.of("kv-admin"), List.of());
        noIat.remove("iat");
        // jose4j directly: SmallRye's builder adds an iat of its own
        var jws = new org.jose4j.jws.JsonWebSignature();
        jws.setPayload(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(noIat));
        jws.setKey(rsa.getPrivate());
        jws.setKeyIdHeaderValue("rsa-1");
        jws.setAlgorithmHeaderValue("RS256");
        refused(jws.getCompactSerialization(), "lacks exp or iat");
        // signed by a key the IdP does not publish under that kid
        refused(rs256("rsa-1", gen("RSA"), claims("x", List.of("kv-admin"), List.of())), "signature");
        // the RSA kid with an EC signature: key type and algorithm must agree
        get(es256("rsa-1", ec, claims("x", List.of("kv-admin"), List.of())), "/api/v1/storages").statusCode(401);
        String payload = b64(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(
                claims("x", List.of("kv-admin"), List.of())));
        // alg none (with and without a signature part)
        String noneHeader = b64("{\"alg\":\"none\",\"kid\":\"rsa-1\",\"typ\":\"JWT\"}");
        get(noneHeader + "." + payload + ".", "/api/v1/storages").statusCode(401);
        refused(noneHeader + "." + payload + "." + b64("x"), "'none' is not accepted");
        // HS256 keyed with the RSA public key's bytes (the classic confusion attack)
        String hsHeader = b64("{\"alg\":\"HS256\",\"kid\":\"rsa-1\",\"typ\":\"JWT\"}");
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(rsa.getPublic().getEncoded(), "HmacSHA256"));
        String sig = Base64.getUrlEncoder().withoutPadding().encodeToString(
                mac.doFinal((hsHeader + "." + payload).getBytes(StandardCharsets.US_ASCII)));
        refused(hsHeader + "." + payload + "." + sig, "'HS256' is not accepted");
        // unknown kid: one JWKS fetch, then remembered (no fetch storm from invented kids)
        String unknown = rs256("nope-" + System.nanoTime(), rsa, claims("x", List.of("kv-admin"), List.of()));
        refused(unknown, "unknown OIDC signing key");
        int fetches = JWKS_FETCHES.get();
        for (int i = 0; i < 5; i++) {
            refused(unknown, "unknown OIDC signing key");
        }
        assertEquals(fetches, JWKS_FETCHES.get());
    }

    @Test
    void rotatedKeyIsPickedUpAndIssuerDownIsA401WithinTheTimeout() throws Exception {
        // the issuer's key cache ages on a clock this test moves past the refresh instead of waiting for it
        MutableClock clock = new MutableClock(Instant.now());
        issuer.clock(clock);
        String before = rs256("rsa-1", rsa, claims("rita", List.of("kv-operator"), List.of()));
        get(before, "/api/v1/storages").statusCode(200);
        // the IdP rotates: a new kid is published, the old one stays
        KeyPair rsa2 = gen("RSA");
        JWKS.set(jwks(Map.of("rsa-1", rsa, "ec-1", ec, "rsa-2", rsa2)));
        long t0 = System.nanoTime();
        get(rs256("rsa-2", rsa2, claims("rita", List.of("kv-operator"), List.of())), "/api/v1/storages")
                .statusCode(200);
        System.out.printf("OIDC rotated key accepted at first use after %d ms%n", (System.nanoTime() - t0) / 1_000_000);
        get(before, "/api/v1/storages").statusCode(200);
        // the IdP retires the old key: after the periodic refresh (2 s here) its tokens are refused
        JWKS.set(jwks(Map.of("ec-1", ec, "rsa-2", rsa2)));
        clock.advance(2_200);
        refused(before, "no longer published");
        JWKS.set(jwks(Map.of("rsa-1", rsa, "ec-1", ec, "rsa-2", rsa2)));
        get(before, "/api/v1/storages").statusCode(200);

        // discovery stalls beyond the 1 s timeout: a new kid is refused with the reason, no hang
        stallMs = 5_000;
        try {
            t0 = System.nanoTime();
            refused(rs256("rsa-3", gen("RSA"), claims("x", List.of("kv-admin"), List.of())),
                    "did not answer within 1000 ms");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 3_500, "took " + ms + " ms");
        } finally {
            stallMs = 0;
        }
        // issuer down altogether: cached keys still verify (also once the refresh is due), a new kid is a 401
        // naming the cause
        server.stop(0);
        server = null;
        try {
            clock.advance(2_200);
            get(before, "/api/v1/storages").statusCode(200);
            t0 = System.nanoTime();
            refused(rs256("rsa-4", gen("RSA"), claims("x", List.of("kv-admin"), List.of())), "could not be fetched");
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 3_500);
        } finally {
            start();
        }
    }

    @Test
    void kvpoolTokensStillWork() {
        String own = Api.account("oidc-own-tenant", "tenant", "oidc-theirs");
        assertEquals(List.of("oidc-theirs"), get(own, "/api/v1/instance-groups").statusCode(200).extract()
                .path("items.name"));
        get(Api.adminToken(), "/api/v1/accounts").statusCode(200);
        // an OIDC token cannot be signed out here (revocation is the IdP's): a clear 400, not a 5xx
        String ext = rs256("rsa-1", rsa, claims("sam", List.of("kv-operator"), List.of()));
        Api.as(ext).post("/api/v1/auth/sign-out").then().statusCode(400);
    }
}
