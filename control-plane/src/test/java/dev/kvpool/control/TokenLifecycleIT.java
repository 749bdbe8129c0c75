package dev.kvpool.control;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.control.security.SigningKeys;
import dev.kvpool.control.testing.Api;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/** JWT format, JWKS, rotation and revocation on the control plane (real PostgreSQL; the revocation poll is real). */
@QuarkusTest
class TokenLifecycleIT {
    static final ObjectMapper M = new ObjectMapper();
    static final String PW = "Zq-Secret-Pass-9";

    @Inject
    SigningKeys keys;
    @Inject
    EntityManager em;

    static JsonNode part(String token, int i) throws Exception {
        return M.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[i]));
    }

    static String fresh(String user, String pw) {
        return given().contentType(ContentType.JSON).body(Map.of("user", user, "password", pw)).post("/api/v1/tokens")
                .then().statusCode(200).extract().path("token");
    }

    static int storages(String token) {
        return Api.as(token).get("/api/v1/storages").statusCode();
    }

    static void account(String name, String role) {
        Api.admin().body(Map.of("name", name, "password", PW, "role", role, "groups", List.of()))
                .post("/api/v1/accounts").then().statusCode(201);
    }

    static String etag(String name) {
        return Api.admin().get("/api/v1/accounts/" + name).then().statusCode(200).extract().header("ETag");
    }

    @Test
    void tokensAreJwtsWhoseKidIsInTheJwks() throws Exception {
        account("tl-format", "operator");
        String t = fresh("tl-format", PW);
        JsonNode h = part(t, 0), c = part(t, 1);
        assertEquals("EdDSA", h.get("alg").asText());
        String kid = h.get("kid").asText();
        assertEquals(keys.active().kid(), kid);
        assertEquals("kvpool", c.get("iss").asText());
        assertEquals("tl-format", c.get("sub").asText());
        assertEquals("operator", c.get("role").asText());
        assertEquals(36, c.get("jti").asText().length());
        long iat = c.get("iat").asLong(), exp = c.get("exp").asLong();
        assertEquals(3600, exp - iat);
        assertTrue(Math.abs(iat - Instant.now().getEpochSecond()) < 5);
        for (String path : List.of("/api/v1/auth/jwks", "/.well-known/jwks.json")) {
            JsonNode jwks = M.readTree(given().get(path).then().statusCode(200).extract().asString());
            Map<String, java.security.PublicKey> byKid = JwtTokens.parseJwks(jwks);
            assertEquals(keys.active().publicKey(), byKid.get(kid), path);
            for (JsonNode k : jwks.get("keys")) {
                assertEquals("OKP", k.get("kty").asText());
                assertEquals("Ed25519", k.get("crv").asText());
                assertEquals("EdDSA", k.get("alg").asText());
                assertFalse(k.has("d"), "never the private part");
            }
        }
        // the deprecated single key still answers (the active one)
        given().get("/api/v1/auth/public-key").then().statusCode(200).body("kid", org.hamcrest.Matchers.is(kid));
        assertEquals(200, storages(t));
    }

    @Test
    void rotationKeepsOldTokensUntilTheirKeyIsDropped() throws Exception {
        account("tl-rot", "operator");
        String before = fresh("tl-rot", PW);
        String oldKid = part(before, 0).get("kid").asText();
        String newKid = Api.admin().post("/api/v1/auth/keys/rotate").then().statusCode(200).extract().path("kid");
        assertNotEquals(oldKid, newKid);
        String after = fresh("tl-rot", PW);
        assertEquals(newKid, part(after, 0).get("kid").asText());
        assertEquals(200, storages(before), "a token of the retired key stays valid");
        assertEquals(200, storages(after));
        JsonNode jwks = M.readTree(given().get("/api/v1/auth/jwks").asString());
        assertTrue(JwtTokens.parseJwks(jwks).keySet().containsAll(Set.of(oldKid, newKid)));
        // once every token the old key signed has expired (retired + TTL + margin), it leaves the JWKS and the table
        Instant late = Instant.now().plus(keys.tokenTtl()).plusSeconds(180);
        assertFalse(keys.published(late).stream().anyMatch(k -> k.kid().equals(oldKid)));
        assertTrue(keys.published(late).stream().anyMatch(k -> k.kid().equals(newKid)));
        assertTrue(keys.prune(late) >= 1);
        assertFalse(JwtTokens.parseJwks(M.readTree(given().get("/api/v1/auth/jwks").asString())).containsKey(oldKid));
        assertEquals(401, storages(before), "its key is gone");
        assertEquals(200, storages(after));
        Api.forgetTokens(); // other classes' cached tokens may have been signed by the dropped key
    }

    @Test
    void signOutRevokesOnlyThePresentedToken() throws Exception {
        account("tl-out", "operator");
        String a = fresh("tl-out", PW), b = fresh("tl-out", PW);
        Api.as(a).post("/api/v1/auth/sign-out").then().statusCode(204);
        assertEquals(401, storages(a));
        assertEquals(200, storages(b));
        // Basic has no token to sign out
        given().auth().preemptive().basic("tl-out", PW).post("/api/v1/auth/sign-out").then().statusCode(400);
        // the feed the metadata planes poll lists it
        String jti = part(a, 1).get("jti").asText();
        List<String> listed = Api.admin().get("/api/v1/auth/revocations?since=0").then().statusCode(200)
                .extract().path("tokens.jti");
        assertTrue(listed.contains(jti), listed.toString());
        Api.as(b).get("/api/v1/auth/revocations").then().statusCode(200);
        Api.admin().get("/api/v1/auth/revocations?since=abc").then().statusCode(400);
        Api.admin().get("/api/v1/auth/revocations?since=-1").then().statusCode(400);
    }

    @Test
    void roleChangeDisableAndDeleteRevokeEarlierTokens() {
        account("tl-role", "operator");
        String t = fresh("tl-role", PW);
        Api.admin().header("If-Match", etag("tl-role")).body(Map.of("role", "admin")).put("/api/v1/accounts/tl-role")
                .then().statusCode(200);
        assertEquals(401, storages(t), "a token issued before the role change");
        String t2 = fresh("tl-role", PW);
        assertEquals(200, storages(t2), "a token issued right after it (same second) is not caught by the cutoff");

        account("tl-off", "operator");
        String u = fresh("tl-off", PW);
        Api.admin().header("If-Match", etag("tl-off")).body(Map.of("disabled", true)).put("/api/v1/accounts/tl-off")
                .then().statusCode(200).body("disabled", org.hamcrest.Matchers.is(true));
        assertEquals(401, storages(u));
        given().contentType(ContentType.JSON).body(Map.of("user", "tl-off", "password", PW)).post("/api/v1/tokens")
                .then().statusCode(401);
        assertEquals(401, given().auth().preemptive().basic("tl-off", PW).get("/api/v1/storages").statusCode());
        Api.admin().header("If-Match", etag("tl-off")).body(Map.of("disabled", false)).put("/api/v1/accounts/tl-off")
                .then().statusCode(200);
        assertEquals(401, storages(u), "re-enabling does not bring old tokens back");
        assertEquals(200, storages(fresh("tl-off", PW)));

        account("tl-del", "operator");
        String d = fresh("tl-del", PW);
        Api.admin().delete("/api/v1/accounts/tl-del").then().statusCode(204);
        assertEquals(401, storages(d));
    }

    @Test
    void aRevocationWrittenByAnotherReplicaIsInForceWithinSeconds() throws Exception {
        account("tl-other", "operator");
        String t = fresh("tl-other", PW);
        assertEquals(200, storages(t));
        String jti = part(t, 1).get("jti").asText();
        long exp = part(t, 1).get("exp").asLong();
        // what another replica's sign-out writes: only the shared table, not this replica's memory
        QuarkusTransaction.requiringNew().run(() -> em.createNativeQuery("insert into token_revocation "
                        + "(jti, subject, expires_ms, changed_ms) values (?1, ?2, ?3, ?4)").setParameter(1, jti)
                .setParameter(2, "tl-other").setParameter(3, exp * 1000).setParameter(4, System.currentTimeMillis())
                .executeUpdate());
        long t0 = System.nanoTime();
        while (storages(t) == 200) {
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "still accepted after 5 s");
            Thread.sleep(50);
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("revocation by another replica in force after " + ms + " ms");
        assertTrue(ms < 2500, ms + " ms");
    }

    @Test
    void hostileTokensAre401NeverA5xx() throws Exception {
        account("tl-hostile", "operator");
        String good = fresh("tl-hostile", PW);
        String[] p = good.split("\\.");
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        String none = b64.encodeToString("{\"alg\":\"none\"}".getBytes(StandardCharsets.UTF_8));
        String hs = b64.encodeToString(("{\"alg\":\"HS256\",\"kid\":\"" + keys.active().kid() + "\"}")
                .getBytes(StandardCharsets.UTF_8));
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(keys.active().publicKey().getEncoded(), "HmacSHA256"));
        String hsSig = b64.encodeToString(mac.doFinal((hs + "." + p[1]).getBytes(StandardCharsets.US_ASCII)));
        long now = Instant.now().getEpochSecond();
        SigningKeys.Key k = keys.active();
        String expired = JwtTokens.issue(k.privateKey(), k.kid(), "kvpool", new BearerToken.Claims("tl-hostile",
                "operator", Set.of(), now - 7200, now - 3600, UUID.randomUUID().toString()));
        String future = JwtTokens.issue(k.privateKey(), k.kid(), "kvpool", new BearerToken.Claims("tl-hostile",
                "operator", Set.of(), now + 3600, now + 7200, UUID.randomUUID().toString()));
        String wrongKid = JwtTokens.issue(k.privateKey(), "nope", "kvpool", new BearerToken.Claims("tl-hostile",
                "operator", Set.of(), now, now + 60, UUID.randomUUID().toString()));
        String foreignIssuer = JwtTokens.issue(k.privateKey(), k.kid(), "elsewhere", new BearerToken.Claims("tl-hostile",
                "operator", Set.of(), now, now + 60, UUID.randomUUID().toString()));
        for (String bad : List.of(none + "." + p[1] + ".", none + "." + p[1] + "." + p[2], hs + "." + p[1] + "." + hsSig,
                expired, future, wrongKid, foreignIssuer, "x".repeat(9000), p[0] + "." + p[1], "Ω.Ω.Ω")) {
            int status = storages(bad);
            assertEquals(401, status, bad.length() > 80 ? bad.substring(0, 80) : bad);
        }
        assertEquals(200, storages(good));
    }
}
