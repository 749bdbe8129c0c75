package dev.kvpool.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.control.account.PasswordHasher;
import java.security.KeyPair;
import java.time.Instant;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The shared token format (JWT, EdDSA) and the password hashing, without the application. */
class BearerTokenTest {
    final KeyPair keys = JwtTokens.generateKeyPair();
    final JwtTokens.KeyResolver resolver = kid -> "k1".equals(kid) ? keys.getPublic() : null;

    String issue(String role, Set<String> groups, long ttlSeconds) {
        long now = Instant.now().getEpochSecond();
        return JwtTokens.issue(keys.getPrivate(), "k1", "kvpool", new BearerToken.Claims("team", role, groups, now,
                now + ttlSeconds, UUID.randomUUID().toString()));
    }

    @Test
    void issuedTokensVerifyWithThePublishedKey() throws Exception {
        String t = issue(BearerToken.TENANT, Set.of("b", "a"), 60);
        var published = JwtTokens.publicKey(JwtTokens.encodePublicKey(keys.getPublic()));
        BearerToken.Claims c = JwtTokens.verify(t, "kvpool", kid -> published, Instant.now());
        assertEquals("team", c.sub());
        assertEquals(BearerToken.TENANT, c.role());
        assertEquals(Set.of("a", "b"), c.groups());
        assertTrue(!c.jti().isEmpty());
    }

    @Test
    void tamperedExpiredOrForeignTokensAreRefused() {
        String t = issue(BearerToken.TENANT, Set.of("a"), 60);
        String forged = issue(BearerToken.ADMIN, Set.of(), 60);
        // the forged claims under the tenant token's signature
        String[] a = t.split("\\."), b = forged.split("\\.");
        String swapped = a[0] + "." + b[1] + "." + a[2];
        assertThrows(BearerToken.InvalidTokenException.class, () -> JwtTokens.verify(swapped, "kvpool", resolver, Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class,
                () -> JwtTokens.verify(t, "kvpool", resolver, Instant.now().plusSeconds(61)));
        KeyPair other = JwtTokens.generateKeyPair();
        assertThrows(BearerToken.InvalidTokenException.class,
                () -> JwtTokens.verify(t, "kvpool", kid -> other.getPublic(), Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class, () -> JwtTokens.verify("x.y.z", "kvpool", resolver, Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class, () -> JwtTokens.verify("abc", "kvpool", resolver, Instant.now()));
    }

    @Test
    void passwordsAreSaltedHashes() {
        String h1 = PasswordHasher.hash("Correct-Horse-9");
        String h2 = PasswordHasher.hash("Correct-Horse-9");
        assertTrue(h1.startsWith("pbkdf2-sha256$"));
        assertTrue(!h1.equals(h2), "salted");
        assertTrue(PasswordHasher.verify("Correct-Horse-9", h1));
        assertTrue(!PasswordHasher.verify("Correct-Horse-8", h1));
        assertTrue(PasswordHasher.weakness("bob", "short") != null);
        assertTrue(PasswordHasher.weakness("bob", "alllowercaseletters") != null);
        assertTrue(PasswordHasher.weakness("bob", "Bob-Is-Great-99") != null);
        assertEquals(null, PasswordHasher.weakness("bob", "Correct-Horse-9"));
    }
}
