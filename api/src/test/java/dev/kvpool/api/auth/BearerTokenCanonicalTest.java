package dev.kvpool.api.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.KeyPair;
import java.time.Instant;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** One token, one spelling: other encodings of the same bytes are refused. */
class BearerTokenCanonicalTest {
    static final String B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    @Test
    void alteredUnusedBitsPaddingAndOtherAlphabetsAreRefused() throws Exception {
        KeyPair k = BearerToken.generateKeyPair();
        String t = BearerToken.issue(k.getPrivate(), "alice", BearerToken.TENANT, Set.of("g"), Instant.now().plusSeconds(60));
        assertEquals("alice", BearerToken.verify(k.getPublic(), t, Instant.now()).sub());
        String sig = t.substring(t.indexOf('.') + 1);
        // an Ed25519 signature is 64 bytes: 86 characters, the last carrying 4 unused bits
        assertEquals(86, sig.length());
        int last = B64URL.indexOf(sig.charAt(85));
        int flipped = 0;
        for (int bit = 0; bit < 4; bit++) {
            String altered = t.substring(0, t.length() - 1) + B64URL.charAt(last ^ (1 << bit));
            var e = assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(k.getPublic(), altered,
                    Instant.now()), altered);
            assertTrue(e.getMessage().startsWith("malformed token"), e.getMessage());
            flipped++;
        }
        assertEquals(4, flipped);
        assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(k.getPublic(), t + "==", Instant.now()));
        // the standard alphabet spells '-' and '_' as '+' and '/': find a token that has one (most do)
        String withUrlChars = t;
        for (int i = 0; i < 200 && withUrlChars.indexOf('-') < 0 && withUrlChars.indexOf('_') < 0; i++) {
            withUrlChars = BearerToken.issue(k.getPrivate(), "alice" + i, BearerToken.TENANT, Set.of("g"),
                    Instant.now().plusSeconds(60));
        }
        String standard = withUrlChars.replace('-', '+').replace('_', '/');
        assertTrue(!standard.equals(withUrlChars), "a token with '-' or '_' in 200 tries");
        var std = assertThrows(BearerToken.InvalidTokenException.class, () -> BearerToken.verify(k.getPublic(),
                standard, Instant.now()));
        assertTrue(std.getMessage().startsWith("malformed token"), std.getMessage());
    }
}
