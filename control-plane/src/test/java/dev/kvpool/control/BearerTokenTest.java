package dev.kvpool.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.control.account.PasswordHasher;
import java.security.KeyPair;
import java.time.Instant;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The shared token format and the password hashing, without the application. */
class BearerTokenTest {
    final KeyPair keys = BearerToken.generateKeyPair();

    @Test
    void issuedTokensVerifyWithThePublishedKey() throws Exception {
        String t = BearerToken.issue(keys.getPrivate(), "team", BearerToken.TENANT, Set.of("b", "a"),
                Instant.now().plusSeconds(60));
        var publicKey = BearerToken.publicKey(BearerToken.encodePublicKey(keys.getPublic()));
        BearerToken.Claims c = BearerToken.verify(publicKey, t, Instant.now());
        assertEquals("team", c.sub());
        assertEquals(BearerToken.TENANT, c.role());
        assertEquals(Set.of("a", "b"), c.groups());
        assertTrue(!c.jti().isEmpty());
    }

    @Test
    void tamperedExpiredOrForeignTokensAreRefused() {
        String t = BearerToken.issue(keys.getPrivate(), "team", BearerToken.TENANT, Set.of("a"),
                Instant.now().plusSeconds(60));
        String forged = BearerToken.issue(keys.getPrivate(), "team", BearerToken.ADMIN, Set.of(),
                Instant.now().plusSeconds(60));
        String swapped = forged.substring(0, forged.indexOf('.')) + t.substring(t.indexOf('.'));
        assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(keys.getPublic(), swapped, Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class,
                () -> BearerToken.verify(keys.getPublic(), t, Instant.now().plusSeconds(61)));
        assertThrows(BearerToken.InvalidTokenException.class,
                () -> BearerToken.verify(BearerToken.generateKeyPair().getPublic(), t, Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(keys.getPublic(), "x.y.z", Instant.now()));
        assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(keys.getPublic(), "abc", Instant.now()));
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
