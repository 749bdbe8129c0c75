package dev.kvpool.api.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/** The JWT format, the JWKS encoding, and hostile tokens refused with a reason (never an unchecked exception). */
class JwtTokensTest {
    static final ObjectMapper M = new ObjectMapper();
    static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    static final KeyPair K = JwtTokens.generateKeyPair();
    static final JwtTokens.KeyResolver KEYS = kid -> kid.equals("k1") ? K.getPublic() : null;

    static BearerToken.Claims claims(long iatOffset, long expOffset) {
        long now = Instant.now().getEpochSecond();
        return new BearerToken.Claims("alice", BearerToken.TENANT, Set.of("g1", "g2"), now + iatOffset, now + expOffset,
                "jti-" + System.nanoTime());
    }

    static JsonNode part(String token, int i) throws Exception {
        return M.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[i]));
    }

    static String msg(String token) {
        return assertThrows(BearerToken.InvalidTokenException.class,
                () -> JwtTokens.verify(token, "kvpool", KEYS, Instant.now())).getMessage();
    }

    @Test
    void headerAndClaimsAreStandard() throws Exception {
        BearerToken.Claims c = claims(0, 60);
        String t = JwtTokens.issue(K.getPrivate(), "k1", "kvpool", c);
        JsonNode h = part(t, 0), p = part(t, 1);
        assertEquals("EdDSA", h.get("alg").asText());
        assertEquals("k1", h.get("kid").asText());
        assertEquals("kvpool", p.get("iss").asText());
        assertEquals("alice", p.get("sub").asText());
        assertEquals(c.iat(), p.get("iat").asLong());
        assertEquals(c.exp(), p.get("exp").asLong());
        assertEquals(c.jti(), p.get("jti").asText());
        assertEquals("tenant", p.get("role").asText());
        assertEquals(2, p.get("groups").size());
        assertEquals(c, JwtTokens.verify(t, "kvpool", KEYS, Instant.now()));
        assertEquals("k1", JwtTokens.kid(t));
    }

    @Test
    void jwksRoundTrips() {
        for (int i = 0; i < 20; i++) { // both parities of x
            KeyPair k = JwtTokens.generateKeyPair();
            JsonNode jwks = M.valueToTree(Map.of("keys", List.of(JwtTokens.jwk("a" + i, k.getPublic()))));
            assertEquals(k.getPublic(), JwtTokens.parseJwks(jwks).get("a" + i));
        }
    }

    @Test
    void hostileTokensAreRefusedWithAReason() throws Exception {
        String good = JwtTokens.issue(K.getPrivate(), "k1", "kvpool", claims(0, 60));
        String[] p = good.split("\\.");
        // alg=none without a signature, and with the original one
        String none = B64.encodeToString("{\"alg\":\"none\",\"kid\":\"k1\"}".getBytes(StandardCharsets.UTF_8));
        assertTrue(msg(none + "." + p[1] + ".").startsWith("malformed token"), msg(none + "." + p[1] + "."));
        assertEquals("token algorithm 'none' is not accepted (EdDSA only)", msg(none + "." + p[1] + "." + p[2]));
        // HS256 keyed with the public key's bytes (the classic algorithm confusion)
        String hs = B64.encodeToString("{\"alg\":\"HS256\",\"kid\":\"k1\"}".getBytes(StandardCharsets.UTF_8));
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(K.getPublic().getEncoded(), "HmacSHA256"));
        String sig = B64.encodeToString(mac.doFinal((hs + "." + p[1]).getBytes(StandardCharsets.US_ASCII)));
        assertEquals("token algorithm 'HS256' is not accepted (EdDSA only)", msg(hs + "." + p[1] + "." + sig));
        // another key's signature under our kid, an unknown kid, no kid
        KeyPair other = JwtTokens.generateKeyPair();
        assertEquals("bad token signature", msg(JwtTokens.issue(other.getPrivate(), "k1", "kvpool", claims(0, 60))));
        assertEquals("unknown token signing key 'k9'", msg(JwtTokens.issue(K.getPrivate(), "k9", "kvpool", claims(0, 60))));
        // a tampered payload (role raised) keeps the old signature
        String raised = B64.encodeToString(M.writeValueAsBytes(((com.fasterxml.jackson.databind.node.ObjectNode) part(good, 1))
                .put("role", "admin")));
        assertEquals("bad token signature", msg(p[0] + "." + raised + "." + p[2]));
        // expired, issued in the future, another issuer
        assertEquals("token expired", msg(JwtTokens.issue(K.getPrivate(), "k1", "kvpool", claims(-120, -5))));
        assertTrue(msg(JwtTokens.issue(K.getPrivate(), "k1", "kvpool", claims(3600, 7200))).startsWith("token not yet valid"));
        assertEquals("token issuer not accepted", msg(JwtTokens.issue(K.getPrivate(), "k1", "evil", claims(0, 60))));
        // huge: refused before parsing
        assertEquals("token too large (1000002 characters; at most 8192)", msg("a".repeat(1_000_000) + ".."));
        // garbage
        assertTrue(msg("x.y").startsWith("malformed token"));
        assertTrue(msg("!!.??.**").startsWith("malformed token"));
        assertEquals("malformed token header", msg(B64.encodeToString("[1]".getBytes()) + "." + p[1] + "." + p[2]));
        // a non-canonical spelling of the signature (unused low bits set)
        String alt = good.substring(0, good.length() - 1) + (good.endsWith("A") ? "B" : "A");
        assertTrue(msg(alt).startsWith("malformed token") || msg(alt).equals("bad token signature"), msg(alt));
    }
}
