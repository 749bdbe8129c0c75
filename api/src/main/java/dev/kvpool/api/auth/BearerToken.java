package dev.kvpool.api.auth;

import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a KVPool bearer token says, shared by the control plane (which issues tokens) and the metadata plane (which
 * verifies them offline): the role names and the claims model. The wire format is a standard JWT signed with EdDSA
 * (Ed25519) and a {@code kid} from the control plane's JWKS; {@link JwtTokens} issues and verifies it.
 */
public final class BearerToken {
    public static final String ADMIN = "admin", OPERATOR = "operator", TENANT = "tenant";

    /**
     * The verified content of a token: {@code sub} (account name), {@code role} ({@code admin|operator|tenant}),
     * {@code groups} (instance groups a tenant is bound to; empty for admin/operator), {@code iat} and {@code exp}
     * (epoch seconds), {@code jti} (unique id, what sign-out revokes).
     */
    public record Claims(String sub, String role, Set<String> groups, long iat, long exp, String jti) {
        public Claims {
            groups = groups == null ? Set.of() : Set.copyOf(new TreeSet<>(groups));
        }

        public boolean expiredAt(Instant now) {
            return now.getEpochSecond() >= exp;
        }
    }

    /** Thrown for a malformed, tampered, expired or revoked token; the message says which. */
    public static final class InvalidTokenException extends Exception {
        public InvalidTokenException(String message) {
            super(message);
        }
    }

    private BearerToken() {
    }
}
