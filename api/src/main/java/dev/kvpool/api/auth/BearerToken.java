package dev.kvpool.api.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * KVPool bearer tokens, shared by the control plane (which issues them) and the metadata plane (which verifies them
 * offline). Format: {@code base64url(claims-json) "." base64url(ed25519-signature-over-the-first-part)}, no padding.
 * Claims: {@code sub} (account name), {@code role} ({@code admin|operator|tenant}), {@code groups} (instance groups a
 * tenant is bound to; empty for admin/operator), {@code exp} (epoch seconds), {@code jti} (unique id).
 *
 * <p>The public key is served by the control plane at {@code GET /api/v1/auth/public-key} as base64 of its X.509
 * (SubjectPublicKeyInfo) encoding; {@link #publicKey(String)} decodes it.
 */
public final class BearerToken {
    public static final String ADMIN = "admin", OPERATOR = "operator", TENANT = "tenant";
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder B64D = Base64.getUrlDecoder();

    /** The verified content of a token. */
    public record Claims(String sub, String role, Set<String> groups, long exp, String jti) {
        public Claims {
            groups = groups == null ? Set.of() : Set.copyOf(new TreeSet<>(groups));
        }

        public boolean expiredAt(Instant now) {
            return now.getEpochSecond() >= exp;
        }
    }

    /** Thrown for a malformed, tampered or expired token; the message says which. */
    public static final class InvalidTokenException extends Exception {
        public InvalidTokenException(String message) {
            super(message);
        }
    }

    private BearerToken() {
    }

    public static KeyPair generateKeyPair() {
        try {
            return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 is not available in this JDK", e);
        }
    }

    /** Signs the claims; {@code jti} is generated when null. */
    public static String issue(PrivateKey key, String sub, String role, Set<String> groups, Instant expires) {
        return issue(key, new Claims(sub, role, groups, expires.getEpochSecond(), UUID.randomUUID().toString()));
    }

    public static String issue(PrivateKey key, Claims c) {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("sub", c.sub());
        n.put("role", c.role());
        ArrayNode g = n.putArray("groups");
        c.groups().forEach(g::add);
        n.put("exp", c.exp());
        n.put("jti", c.jti());
        try {
            String body = B64.encodeToString(MAPPER.writeValueAsBytes(n));
            Signature s = Signature.getInstance("Ed25519");
            s.initSign(key);
            s.update(body.getBytes(StandardCharsets.US_ASCII));
            return body + "." + B64.encodeToString(s.sign());
        } catch (Exception e) {
            throw new IllegalStateException("cannot sign token: " + e.getMessage(), e);
        }
    }

    /** Checks the signature and the expiry against {@code now}. */
    public static Claims verify(PublicKey key, String token, Instant now) throws InvalidTokenException {
        if (token == null) {
            throw new InvalidTokenException("no token");
        }
        int dot = token.indexOf('.');
        if (dot <= 0 || dot != token.lastIndexOf('.') || dot == token.length() - 1) {
            throw new InvalidTokenException("malformed token: expected <claims>.<signature>");
        }
        String body = token.substring(0, dot);
        byte[] claimBytes, sig;
        try {
            claimBytes = canonical(body);
            sig = canonical(token.substring(dot + 1));
        } catch (IllegalArgumentException e) {
            throw new InvalidTokenException("malformed token: " + e.getMessage());
        }
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initVerify(key);
            s.update(body.getBytes(StandardCharsets.US_ASCII));
            if (!s.verify(sig)) {
                throw new InvalidTokenException("bad token signature");
            }
        } catch (IllegalArgumentException | GeneralSecurityException e) {
            throw new InvalidTokenException("bad token signature");
        }
        Claims c;
        try {
            JsonNode n = MAPPER.readTree(claimBytes);
            List<String> groups = new ArrayList<>();
            n.path("groups").forEach(x -> groups.add(x.asText()));
            c = new Claims(n.path("sub").asText(), n.path("role").asText(), new TreeSet<>(groups),
                    n.path("exp").asLong(), n.path("jti").asText());
        } catch (Exception e) {
            throw new InvalidTokenException("malformed token claims");
        }
        if (c.sub().isEmpty() || c.role().isEmpty()) {
            throw new InvalidTokenException("token lacks sub or role");
        }
        if (c.expiredAt(now)) {
            throw new InvalidTokenException("token expired");
        }
        return c;
    }

    /**
     * Decodes one part, accepting only the encoding {@link #issue} produces: unpadded base64url whose unused low
     * bits of the last character are zero. A decoder alone also accepts other spellings of the same bytes, so one
     * token would have several accepted forms (and a token denylist or cache keyed by the text could be bypassed).
     */
    private static byte[] canonical(String part) {
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')) {
                throw new IllegalArgumentException("not unpadded base64url");
            }
        }
        byte[] bytes = B64D.decode(part);
        if (!B64.encodeToString(bytes).equals(part)) {
            throw new IllegalArgumentException("not the canonical base64url encoding");
        }
        return bytes;
    }

    public static String encodePublicKey(PublicKey key) {
        return Base64.getEncoder().encodeToString(key.getEncoded());
    }

    public static PublicKey publicKey(String base64X509) {
        try {
            return KeyFactory.getInstance("Ed25519")
                    .generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(base64X509)));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("not an Ed25519 public key: " + e.getMessage(), e);
        }
    }

    public static PrivateKey privateKey(byte[] pkcs8) {
        try {
            return KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an Ed25519 private key: " + e.getMessage(), e);
        }
    }

    public static PublicKey publicKey(byte[] x509) {
        try {
            return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(x509));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an Ed25519 public key: " + e.getMessage(), e);
        }
    }
}
