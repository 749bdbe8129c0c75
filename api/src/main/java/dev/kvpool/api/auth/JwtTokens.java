package dev.kvpool.api.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.smallrye.jwt.algorithm.SignatureAlgorithm;
import io.smallrye.jwt.auth.principal.DefaultJWTParser;
import io.smallrye.jwt.auth.principal.JWTAuthContextInfo;
import io.smallrye.jwt.auth.principal.ParseException;
import io.smallrye.jwt.build.Jwt;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.interfaces.EdECPublicKey;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.jose4j.jwt.consumer.ErrorCodes;
import org.jose4j.jwt.consumer.InvalidJwtException;

/**
 * KVPool bearer tokens as standard JWTs: EdDSA (Ed25519) signatures with a {@code kid} naming the key in the control
 * plane's JWKS ({@code GET /api/v1/auth/jwks}). Issued with SmallRye JWT's builder, verified with its parser.
 *
 * <p>Ed25519 rather than ES256: the control plane already kept Ed25519 keys (they migrate as they are), signatures
 * are deterministic (no per-signature nonce whose reuse leaks the key, as ECDSA's does) and 64 bytes, and JDK 15+
 * and jose4j support it natively. OIDC providers' tokens (RS256/ES256) are verified separately.
 *
 * <p>SmallRye JWT is an optional dependency of the api module (data-agent and the operator never verify tokens): a
 * service that calls this class brings {@code io.smallrye:smallrye-jwt} (verify) or {@code smallrye-jwt-build}
 * (issue) itself.
 */
public final class JwtTokens {
    /** Longer tokens are refused before any parsing (ours are about 400 characters). */
    public static final int MAX_TOKEN_CHARS = 8192;
    public static final String ALGORITHM = "EdDSA";
    /** How far a token's iat may lie ahead of this clock (clock skew between replicas). */
    public static final long IAT_SKEW_SECONDS = 60;
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder B64D = Base64.getUrlDecoder();

    /** The public key of a {@code kid}; null when it is not known (the caller may refetch its JWKS first). */
    public interface KeyResolver {
        PublicKey key(String kid);
    }

    private JwtTokens() {
    }

    public static KeyPair generateKeyPair() {
        try {
            return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 is not available in this JDK", e);
        }
    }

    /** Signs the claims into a compact JWS with header {@code {"alg":"EdDSA","kid":kid,"typ":"JWT"}}. */
    public static String issue(PrivateKey key, String kid, String issuer, BearerToken.Claims c) {
        var b = Jwt.claims().issuer(issuer).subject(c.sub()).issuedAt(c.iat()).expiresAt(c.exp()).claim("jti", c.jti())
                .claim("role", c.role()).groups(new TreeSet<>(c.groups()));
        return b.jws().keyId(kid).algorithm(SignatureAlgorithm.EDDSA).sign(key);
    }

    /** The kid of a token's header, bounded and unverified (to pick the key); null when there is none. */
    public static String kid(String token) throws BearerToken.InvalidTokenException {
        return header(parts(token)).path("kid").asText(null);
    }

    /**
     * Checks size, form, algorithm (EdDSA only: {@code none}, HMAC and the rest are refused before any key is used),
     * kid, signature, issuer and time claims; returns the claims.
     */
    public static BearerToken.Claims verify(String token, String issuer, KeyResolver keys, Instant now)
            throws BearerToken.InvalidTokenException {
        String[] p = parts(token);
        JsonNode h = header(p);
        String alg = h.path("alg").asText("");
        if (!ALGORITHM.equals(alg)) {
            throw new BearerToken.InvalidTokenException("token algorithm '" + printable(alg) + "' is not accepted ("
                    + ALGORITHM + " only)");
        }
        String kid = h.path("kid").asText("");
        if (kid.isEmpty()) {
            throw new BearerToken.InvalidTokenException("token header names no key (kid)");
        }
        PublicKey key = keys.key(kid);
        if (key == null) {
            throw new BearerToken.InvalidTokenException("unknown token signing key '" + printable(kid) + "'");
        }
        JWTAuthContextInfo ctx = new JWTAuthContextInfo(key, issuer);
        ctx.setSignatureAlgorithm(Set.of(SignatureAlgorithm.EDDSA));
        try {
            new DefaultJWTParser(ctx).parse(token);
        } catch (ParseException e) {
            throw new BearerToken.InvalidTokenException(reason(e));
        } catch (RuntimeException e) {
            throw new BearerToken.InvalidTokenException("invalid token");
        }
        // the signature holds: read our claims from the verified payload
        BearerToken.Claims c;
        try {
            JsonNode n = MAPPER.readTree(B64D.decode(p[1]));
            List<String> groups = new ArrayList<>();
            n.path("groups").forEach(x -> groups.add(x.asText()));
            c = new BearerToken.Claims(n.path("sub").asText(""), n.path("role").asText(""), new TreeSet<>(groups),
                    n.path("iat").asLong(0), n.path("exp").asLong(0), n.path("jti").asText(""));
        } catch (Exception e) {
            throw new BearerToken.InvalidTokenException("malformed token claims");
        }
        if (c.sub().isEmpty() || c.role().isEmpty() || c.jti().isEmpty() || c.iat() <= 0 || c.exp() <= 0) {
            throw new BearerToken.InvalidTokenException("token lacks sub, role, jti, iat or exp");
        }
        if (c.expiredAt(now)) {
            throw new BearerToken.InvalidTokenException("token expired");
        }
        if (c.iat() > now.getEpochSecond() + IAT_SKEW_SECONDS) {
            throw new BearerToken.InvalidTokenException("token not yet valid (issued in the future)");
        }
        return c;
    }

    private static String reason(ParseException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof InvalidJwtException j) {
                if (j.hasExpired()) {
                    return "token expired";
                }
                if (j.hasErrorCode(ErrorCodes.NOT_YET_VALID)) {
                    return "token not yet valid (nbf)";
                }
                if (j.hasErrorCode(ErrorCodes.SIGNATURE_INVALID)) {
                    return "bad token signature";
                }
                if (j.hasErrorCode(ErrorCodes.ISSUER_INVALID) || j.hasErrorCode(ErrorCodes.ISSUER_MISSING)) {
                    return "token issuer not accepted";
                }
                if (j.hasErrorCode(ErrorCodes.EXPIRATION_MISSING) || j.hasErrorCode(ErrorCodes.ISSUED_AT_MISSING)) {
                    return "token lacks exp or iat";
                }
            }
        }
        return "invalid token";
    }

    /** Splits a compact JWS after bounding its size; each part must be canonical unpadded base64url. */
    private static String[] parts(String token) throws BearerToken.InvalidTokenException {
        if (token == null || token.isEmpty()) {
            throw new BearerToken.InvalidTokenException("no token");
        }
        if (token.length() > MAX_TOKEN_CHARS) {
            throw new BearerToken.InvalidTokenException("token too large (" + token.length() + " characters; at most "
                    + MAX_TOKEN_CHARS + ")");
        }
        String[] p = token.split("\\.", -1);
        if (p.length != 3 || p[0].isEmpty() || p[1].isEmpty() || p[2].isEmpty()) {
            throw new BearerToken.InvalidTokenException("malformed token: expected a signed JWT <header>.<claims>.<signature>");
        }
        for (String s : p) {
            canonical(s);
        }
        return p;
    }

    private static JsonNode header(String[] p) throws BearerToken.InvalidTokenException {
        try {
            JsonNode h = MAPPER.readTree(B64D.decode(p[0]));
            if (h == null || !h.isObject()) {
                throw new BearerToken.InvalidTokenException("malformed token header");
            }
            return h;
        } catch (java.io.IOException | IllegalArgumentException e) {
            throw new BearerToken.InvalidTokenException("malformed token header");
        }
    }

    /**
     * Only the encoding a signer produces: unpadded base64url whose unused low bits are zero. A decoder alone also
     * accepts other spellings of the same bytes, so one token would have several accepted forms (a cache keyed by
     * the text would hold each).
     */
    private static void canonical(String part) throws BearerToken.InvalidTokenException {
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')) {
                throw new BearerToken.InvalidTokenException("malformed token: not unpadded base64url");
            }
        }
        try {
            if (!B64.encodeToString(B64D.decode(part)).equals(part)) {
                throw new BearerToken.InvalidTokenException("malformed token: not the canonical base64url encoding");
            }
        } catch (IllegalArgumentException e) {
            throw new BearerToken.InvalidTokenException("malformed token: " + e.getMessage());
        }
    }

    private static String printable(String s) {
        String t = s.length() > 64 ? s.substring(0, 64) + "..." : s;
        return t.replaceAll("[^A-Za-z0-9._:-]", "?");
    }

    // ---- keys and JWKS (RFC 8037: {"kty":"OKP","crv":"Ed25519","x":...}) ----

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

    /** Base64 X.509 (the deprecated {@code /api/v1/auth/public-key} form and the metadata plane's pinned key). */
    public static PublicKey publicKey(String base64X509) {
        try {
            return publicKey(Base64.getDecoder().decode(base64X509));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not an Ed25519 public key: " + e.getMessage(), e);
        }
    }

    public static String encodePublicKey(PublicKey key) {
        return Base64.getEncoder().encodeToString(key.getEncoded());
    }

    /** One JWK of an Ed25519 public key. */
    public static Map<String, Object> jwk(String kid, PublicKey key) {
        EdECPoint pt = ((EdECPublicKey) key).getPoint();
        // RFC 8032 encoding: y little-endian in 32 bytes, the top bit of the last byte = x is odd
        byte[] y = pt.getY().toByteArray();
        byte[] le = new byte[32];
        for (int i = 0; i < y.length && i < 32; i++) {
            le[i] = y[y.length - 1 - i];
        }
        if (pt.isXOdd()) {
            le[31] |= (byte) 0x80;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kty", "OKP");
        m.put("crv", "Ed25519");
        m.put("alg", ALGORITHM);
        m.put("use", "sig");
        m.put("kid", kid);
        m.put("x", B64.encodeToString(le));
        return m;
    }

    /** The Ed25519 keys of a JWKS document by kid; other key types are skipped. */
    public static Map<String, PublicKey> parseJwks(JsonNode jwks) {
        Map<String, PublicKey> out = new LinkedHashMap<>();
        for (JsonNode k : jwks.path("keys")) {
            if (!"OKP".equals(k.path("kty").asText()) || !"Ed25519".equals(k.path("crv").asText())
                    || k.path("kid").asText("").isEmpty()) {
                continue;
            }
            try {
                byte[] le = B64D.decode(k.path("x").asText());
                if (le.length != 32) {
                    continue;
                }
                boolean xOdd = (le[31] & 0x80) != 0;
                byte[] be = new byte[32];
                for (int i = 0; i < 32; i++) {
                    be[i] = le[31 - i];
                }
                be[0] &= 0x7f;
                PublicKey pk = KeyFactory.getInstance("Ed25519").generatePublic(
                        new EdECPublicKeySpec(NamedParameterSpec.ED25519, new EdECPoint(xOdd, new BigInteger(1, be))));
                out.put(k.path("kid").asText(), pk);
            } catch (GeneralSecurityException | IllegalArgumentException e) {
                // a malformed key is skipped: the others still verify
            }
        }
        return out;
    }
}
