package dev.kvpool.control.security;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.api.naming.Identifiers;
import io.smallrye.jwt.algorithm.SignatureAlgorithm;
import io.smallrye.jwt.auth.principal.DefaultJWTParser;
import io.smallrye.jwt.auth.principal.JWTAuthContextInfo;
import io.smallrye.jwt.auth.principal.ParseException;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.PublicKey;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;
import org.jose4j.jwk.JsonWebKey;
import org.jose4j.jwk.JsonWebKeySet;
import org.jose4j.jwk.PublicJsonWebKey;
import org.jose4j.jwt.consumer.ErrorCodes;
import org.jose4j.jwt.consumer.InvalidJwtException;

/**
 * An optional external OpenID Connect issuer whose access/ID tokens the control plane accepts beside its own:
 * discovery ({@code <issuer>/.well-known/openid-configuration} → {@code jwks_uri}), the JWKS cached by kid, signatures
 * and time claims verified with SmallRye JWT's parser, then a role claim and a groups claim mapped to KVPool's role
 * and instance groups. Off unless {@code kvpool.control.oidc.issuer} is set.
 *
 * <p>Not {@code quarkus-oidc}: its mechanism would replace {@link BearerAuthMechanism} (KVPool's own tokens, Basic
 * and gRPC share it) and it cannot map claims onto KVPool's groups; verifying here keeps one path for every caller.
 * The JDK's HTTP client fetches the two documents (this runs on a worker thread already; bounded size and time).
 */
@ApplicationScoped
public class OidcIssuer {
    private static final Logger LOG = Logger.getLogger(OidcIssuer.class);
    private static final ObjectMapper MAPPER = new ObjectMapper();
    /** Discovery documents and JWKS larger than this are refused (real ones are a few KiB). */
    static final int MAX_DOCUMENT_BYTES = 256 * 1024;
    /** A kid that a fetch did not find is not fetched for again before this (invented kids make no fetch storm). */
    static final long UNKNOWN_KID_RETRY_MS = 30_000;
    /** Fetches for unknown kids: at most one per this interval overall. */
    static final long MIN_REFETCH_MS = 1_000;
    static final int MAX_GROUPS = 1_000;
    static final Set<String> ALGORITHMS = Set.of("RS256", "ES256", "EdDSA");

    @ConfigProperty(name = "kvpool.control.oidc.issuer")
    Optional<String> issuer;
    @ConfigProperty(name = "kvpool.control.oidc.audience")
    Optional<String> audience;
    @ConfigProperty(name = "kvpool.control.oidc.role-claim", defaultValue = "roles")
    String roleClaim;
    @ConfigProperty(name = "kvpool.control.oidc.roles.admin")
    Optional<List<String>> adminValues;
    @ConfigProperty(name = "kvpool.control.oidc.roles.operator")
    Optional<List<String>> operatorValues;
    @ConfigProperty(name = "kvpool.control.oidc.roles.tenant")
    Optional<List<String>> tenantValues;
    @ConfigProperty(name = "kvpool.control.oidc.groups-claim", defaultValue = "kvpool_groups")
    String groupsClaim;
    @ConfigProperty(name = "kvpool.control.oidc.name-claim", defaultValue = "preferred_username")
    String nameClaim;
    @ConfigProperty(name = "kvpool.control.oidc.timeout", defaultValue = "5s")
    Duration timeout;
    @ConfigProperty(name = "kvpool.control.oidc.jwks-refresh", defaultValue = "5m")
    Duration refresh;

    /**
     * What the key cache's ages are read on (refresh, refetch rate limit, unknown-kid retry); tests move it instead
     * of waiting. Token times (exp, nbf, iat) stay on the wall clock: the JWT parser checks them on its own.
     */
    private volatile java.time.InstantSource clock = java.time.InstantSource.system();
    private volatile Map<String, PublicKey> keys = Map.of();
    private volatile long fetchedAt = Long.MIN_VALUE / 2;
    private volatile long lastAttempt = Long.MIN_VALUE / 2;
    private volatile String lastFailure;
    private final Map<String, Long> missedKids = new ConcurrentHashMap<>();
    private volatile HttpClient http;

    /** Tests: the clock the key cache's ages are read on (a method: the bean is reached through its proxy). */
    void clock(java.time.InstantSource c) {
        clock = c;
    }

    public boolean enabled() {
        return issuer.filter(s -> !s.isBlank()).isPresent();
    }

    /** Whether a token names this issuer (its unverified {@code iss}); such a token is verified here only. */
    public boolean issued(String token) {
        if (!enabled() || token == null || token.length() > JwtTokens.MAX_TOKEN_CHARS) {
            return false;
        }
        String[] p = token.split("\\.", -1);
        if (p.length != 3) {
            return false;
        }
        try {
            return issuer.get().equals(MAPPER.readTree(Base64.getUrlDecoder().decode(p[1])).path("iss").asText(null));
        } catch (IOException | IllegalArgumentException e) {
            return false;
        }
    }

    /** Verifies an external token and maps it; the exception's message says what was refused. */
    public BearerToken.Claims verify(String token) throws BearerToken.InvalidTokenException {
        // header checks (size, form, canonical base64url) as for KVPool tokens, then our own algorithm allow-list
        String kid = JwtTokens.kid(token);
        JsonNode h;
        try {
            h = MAPPER.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[0]));
        } catch (IOException | IllegalArgumentException e) {
            throw new BearerToken.InvalidTokenException("malformed token header");
        }
        String alg = h.path("alg").asText("");
        if (!ALGORITHMS.contains(alg)) {
            throw new BearerToken.InvalidTokenException("OIDC token algorithm '" + printable(alg)
                    + "' is not accepted (RS256, ES256 or EdDSA)");
        }
        if (kid == null || kid.isEmpty()) {
            throw new BearerToken.InvalidTokenException("OIDC token header names no key (kid)");
        }
        PublicKey key = key(kid);
        JWTAuthContextInfo ctx = new JWTAuthContextInfo(key, issuer.get());
        ctx.setSignatureAlgorithm(Set.of(SignatureAlgorithm.fromAlgorithm(alg)));
        audience.filter(a -> !a.isBlank()).ifPresent(a -> ctx.setExpectedAudience(Set.of(a)));
        // the name may come from another claim than sub/upn/preferred_username: checked below, not by the parser
        ctx.setRequireNamedPrincipal(false);
        try {
            new DefaultJWTParser(ctx).parse(token);
        } catch (ParseException e) {
            throw new BearerToken.InvalidTokenException(reason(e));
        } catch (RuntimeException e) {
            throw new BearerToken.InvalidTokenException("invalid OIDC token");
        }
        JsonNode c;
        try {
            c = MAPPER.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[1]));
        } catch (IOException | IllegalArgumentException e) {
            throw new BearerToken.InvalidTokenException("malformed token claims");
        }
        // the parser requires exp and iat and checks exp/nbf (60 s skew), but not an iat ahead of this clock
        long iat = c.path("iat").asLong(0);
        if (iat <= 0) {
            throw new BearerToken.InvalidTokenException("OIDC token lacks iat");
        }
        if (iat > java.time.Instant.now().getEpochSecond() + JwtTokens.IAT_SKEW_SECONDS) {
            throw new BearerToken.InvalidTokenException("OIDC token issued in the future (iat)");
        }
        String name = text(path(c, nameClaim));
        if (name == null || name.isEmpty()) {
            name = c.path("sub").asText("");
        }
        if (name.isEmpty() || name.length() > 256) {
            throw new BearerToken.InvalidTokenException("OIDC token has no usable '" + printable(nameClaim)
                    + "' or sub claim");
        }
        Set<String> values = strings(path(c, roleClaim));
        String role = values.stream().anyMatch(v -> adminValues.orElse(List.of()).contains(v)) ? BearerToken.ADMIN
                : values.stream().anyMatch(v -> operatorValues.orElse(List.of()).contains(v)) ? BearerToken.OPERATOR
                : values.stream().anyMatch(v -> tenantValues.orElse(List.of()).contains(v)) ? BearerToken.TENANT
                : null;
        if (role == null) {
            throw new BearerToken.InvalidTokenException("OIDC token's claim '" + printable(roleClaim)
                    + "' holds no value mapped to a KVPool role (kvpool.control.oidc.roles.admin/operator/tenant)");
        }
        Set<String> groups = new TreeSet<>();
        if (BearerToken.TENANT.equals(role)) {
            // values that cannot name an instance group cannot grant anything: skipped, not refused
            strings(path(c, groupsClaim)).stream().filter(OidcIssuer::groupName).limit(MAX_GROUPS).forEach(groups::add);
        }
        return new BearerToken.Claims(name, role, groups, c.path("iat").asLong(0), c.path("exp").asLong(0),
                c.path("jti").asText(""));
    }

    private static boolean groupName(String s) {
        return Identifiers.valid(Identifiers.Kind.GROUP, s);
    }

    /** A dotted claim path ({@code realm_access.roles}); a claim whose own name holds dots is tried whole first. */
    static JsonNode path(JsonNode claims, String path) {
        if (claims.has(path)) {
            return claims.get(path);
        }
        JsonNode n = claims;
        for (String p : path.split("\\.")) {
            n = n.path(p);
        }
        return n;
    }

    private static String text(JsonNode n) {
        return n != null && n.isTextual() ? n.asText() : null;
    }

    /** A string claim, or an array's string elements; anything else is no value. */
    static Set<String> strings(JsonNode n) {
        Set<String> out = new LinkedHashSet<>();
        if (n == null) {
            return out;
        }
        if (n.isTextual()) {
            out.add(n.asText());
        } else if (n.isArray()) {
            n.forEach(x -> {
                if (x.isTextual() && out.size() < 10_000) {
                    out.add(x.asText());
                }
            });
        }
        return out;
    }

    /** The key of a kid: from the cache, or after a (rate-limited) refetch of the issuer's JWKS. */
    PublicKey key(String kid) throws BearerToken.InvalidTokenException {
        long now = clock.millis();
        PublicKey k = keys.get(kid);
        if (k != null) {
            if (now - fetchedAt < refresh.toMillis()) {
                return k;
            }
            // periodic refresh, at the first use after it is due; never waited for. While the issuer is down the
            // cached keys keep verifying; when it answers, a key it no longer publishes is no longer accepted.
            if (refetch(false) == null) {
                k = keys.get(kid);
            }
            if (k != null) {
                return k;
            }
            throw new BearerToken.InvalidTokenException("OIDC signing key '" + printable(kid)
                    + "' is no longer published by the issuer");
        }
        Long missed = missedKids.get(kid);
        if (missed != null && now - missed < UNKNOWN_KID_RETRY_MS) {
            throw new BearerToken.InvalidTokenException("unknown OIDC signing key '" + printable(kid) + "'");
        }
        String failure = refetch(true);
        k = keys.get(kid);
        if (k != null) {
            missedKids.remove(kid);
            return k;
        }
        if (failure != null) {
            throw new BearerToken.InvalidTokenException("OIDC issuer's keys could not be fetched: " + failure);
        }
        if (missedKids.size() > 10_000) {
            missedKids.clear();
        }
        missedKids.put(kid, clock.millis());
        throw new BearerToken.InvalidTokenException("unknown OIDC signing key '" + printable(kid) + "'");
    }

    /**
     * One fetch at a time, at most one per {@link #MIN_REFETCH_MS}. Null when the keys are fresh from a fetch. Too
     * soon after the last attempt: when that failed, its failure at once (a caller never queues behind an issuer that
     * is down); otherwise {@code wait} waits for the next allowed fetch (a new kid right after a fetch is still
     * looked up) and no-wait callers are told "skipped".
     */
    private synchronized String refetch(boolean wait) {
        long since = clock.millis() - lastAttempt;
        if (since < MIN_REFETCH_MS) {
            if (lastFailure != null) {
                return lastFailure;
            }
            if (!wait) {
                return "skipped";
            }
            try {
                Thread.sleep(MIN_REFETCH_MS - since);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "interrupted";
            }
        }
        lastAttempt = clock.millis();
        lastFailure = fetch();
        return lastFailure;
    }

    private String fetch() {
        try {
            String base = issuer.get().endsWith("/") ? issuer.get().substring(0, issuer.get().length() - 1)
                    : issuer.get();
            JsonNode discovery = MAPPER.readTree(get(base + "/.well-known/openid-configuration"));
            String jwksUri = discovery.path("jwks_uri").asText("");
            if (!jwksUri.startsWith("https://") && !jwksUri.startsWith("http://")) {
                return "the discovery document has no http(s) jwks_uri";
            }
            if (!issuer.get().equals(discovery.path("issuer").asText(issuer.get()))) {
                return "the discovery document names another issuer";
            }
            JsonWebKeySet set = new JsonWebKeySet(new String(get(jwksUri), java.nio.charset.StandardCharsets.UTF_8));
            Map<String, PublicKey> found = new HashMap<>();
            for (JsonWebKey jwk : set.getJsonWebKeys()) {
                if (jwk instanceof PublicJsonWebKey p && jwk.getKeyId() != null
                        && (jwk.getUse() == null || "sig".equals(jwk.getUse()))) {
                    found.put(jwk.getKeyId(), p.getPublicKey());
                }
            }
            keys = Map.copyOf(found);
            fetchedAt = clock.millis();
            LOG.debugf("OIDC JWKS fetched: %d keys", found.size());
            return null;
        } catch (IOException e) {
            LOG.warnf("OIDC discovery/JWKS fetch from %s failed: %s", issuer.get(), e.toString());
            return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        } catch (Exception e) { // JoseException (malformed JWKS), bad URI
            LOG.warnf("OIDC discovery/JWKS from %s unusable: %s", issuer.get(), e.toString());
            return "unusable discovery document or JWKS (" + e.getClass().getSimpleName() + ")";
        }
    }

    private byte[] get(String url) throws IOException {
        if (http == null) {
            http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create(url)).timeout(timeout)
                .header("Accept", "application/json").GET().build();
        HttpResponse<InputStream> r;
        try {
            r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        } catch (java.net.http.HttpTimeoutException e) {
            throw new IOException(url + " did not answer within " + timeout.toMillis() + " ms");
        } catch (java.net.ConnectException e) {
            throw new IOException(url + " refused the connection");
        }
        try (InputStream in = r.body()) {
            if (r.statusCode() != 200) {
                throw new IOException(url + " answered HTTP " + r.statusCode());
            }
            byte[] b = in.readNBytes(MAX_DOCUMENT_BYTES + 1);
            if (b.length > MAX_DOCUMENT_BYTES) {
                throw new IOException(url + " answered more than " + MAX_DOCUMENT_BYTES + " bytes");
            }
            return b;
        }
    }

    private static String reason(ParseException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof InvalidJwtException j) {
                if (j.hasExpired()) {
                    return "OIDC token expired";
                }
                if (j.hasErrorCode(ErrorCodes.NOT_YET_VALID)) {
                    return "OIDC token not yet valid (nbf)";
                }
                if (j.hasErrorCode(ErrorCodes.SIGNATURE_INVALID)) {
                    return "bad OIDC token signature";
                }
                if (j.hasErrorCode(ErrorCodes.AUDIENCE_INVALID) || j.hasErrorCode(ErrorCodes.AUDIENCE_MISSING)) {
                    return "OIDC token audience not accepted";
                }
                if (j.hasErrorCode(ErrorCodes.ISSUED_AT_INVALID_FUTURE)) {
                    return "OIDC token issued in the future";
                }
                if (j.hasErrorCode(ErrorCodes.EXPIRATION_MISSING) || j.hasErrorCode(ErrorCodes.ISSUED_AT_MISSING)) {
                    return "OIDC token lacks exp or iat";
                }
            }
        }
        // anything else: jose4j's own words for each failed check (not its message, which quotes every claim)
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof InvalidJwtException j && j.getErrorDetails() != null && !j.getErrorDetails().isEmpty()) {
                String m = j.getErrorDetails().stream().map(d -> d.getErrorMessage())
                        .collect(java.util.stream.Collectors.joining("; "));
                m = m.length() > 200 ? m.substring(0, 200) + "..." : m;
                return "invalid OIDC token: " + m.replaceAll("[^\\x20-\\x7e]", "?");
            }
        }
        return "invalid OIDC token";
    }

    private static String printable(String s) {
        String t = s.length() > 64 ? s.substring(0, 64) + "..." : s;
        return t.replaceAll("[^A-Za-z0-9._:-]", "?");
    }
}
