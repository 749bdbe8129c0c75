package dev.kvpool.meta.auth;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * Checks the control plane's bearer tokens (JWTs, EdDSA) on the metadata plane, offline with the keys of its JWKS
 * ({@link TokenKeys}) and refusing revoked ones ({@link RevocationFeed}). KVCM meta
 * calls: admin and operator tokens may use any instance, tenant tokens the instances of their groups; calls without
 * a token only instances of groups with allowAnonymousMeta. KVPool REST under /api/v1: admin or operator.
 */
public final class MetaAuth {
    private static final Logger LOG = Logger.getLogger(MetaAuth.class);
    /** The KVCM code for a refused call: the ErrorCode enum has no authentication code (see kvcm-compatibility.md). */
    public static final ErrorCode REFUSED = ErrorCode.INVALID_ARGUMENT;

    /** A refusal: {@code unauthenticated} (no or a bad token) or not (a token without the right). */
    public record Refusal(boolean unauthenticated, String message, ErrorCode code) {
        public Refusal(boolean unauthenticated, String message) {
            this(unauthenticated, message, REFUSED);
        }
    }

    /** Every call while the plane starts: what a KVCM leader answers until it has recovered (§1.8). */
    public static Refusal starting(String phase) {
        return new Refusal(false, "Server is not leader (starting: " + phase + ")", ErrorCode.SERVER_NOT_LEADER);
    }

    private final Registry registry;
    private final Predicate<String> anonymousGroup;
    private final TokenKeys keys;
    private final RevocationFeed revocations;
    private final String issuer;
    /** Verified tokens by text (a signature check per call is avoidable work); revocation is checked on every use. */
    private final Map<String, BearerToken.Claims> verified = new ConcurrentHashMap<>();

    /** {@code revocations} may be null (no control plane: a pinned key and no revocation feed). */
    public MetaAuth(Registry registry, Predicate<String> anonymousGroup, TokenKeys keys, RevocationFeed revocations,
                    String issuer) {
        this.registry = registry;
        this.anonymousGroup = anonymousGroup;
        this.keys = keys;
        this.revocations = revocations;
        this.issuer = issuer;
    }

    public TokenKeys keys() {
        return keys;
    }

    /** The claims of an {@code Authorization} header value; null when there is none. */
    public BearerToken.Claims claims(String authorization) throws BearerToken.InvalidTokenException {
        if (authorization == null || authorization.isBlank()) {
            return null;
        }
        String a = authorization.trim();
        if (a.length() < 7 || !a.substring(0, 7).toLowerCase(Locale.ROOT).equals("bearer ")) {
            throw new BearerToken.InvalidTokenException("Authorization must be 'Bearer <token>'");
        }
        String token = a.substring(7).trim();
        Instant now = Instant.now();
        BearerToken.Claims c = verified.get(token);
        if (c != null && c.expiredAt(now)) {
            verified.remove(token);
            throw new BearerToken.InvalidTokenException("token expired");
        }
        if (c == null) {
            if (!keys.known()) {
                keys.key(""); // a rate-limited fetch
                if (!keys.known()) {
                    throw new BearerToken.InvalidTokenException(
                            "the token signing keys are not known yet (control plane unreachable)");
                }
            }
            c = JwtTokens.verify(token, issuer, keys, now);
            if (verified.size() > 10_000) {
                verified.clear(); // bounded: the cache only saves work
            }
            verified.put(token, c);
        }
        String revoked = revocations == null ? null : revocations.refusal(c);
        if (revoked != null) {
            throw new BearerToken.InvalidTokenException(revoked);
        }
        return c;
    }

    /** The instance group a KVCM meta request acts on: the requested group on registration, else its instance's. */
    String groupOf(Message req) {
        if (req instanceof RegisterInstanceRequest r) {
            return r.getInstanceGroup();
        }
        Descriptors.FieldDescriptor f = req.getDescriptorForType().findFieldByName("instance_id");
        if (f == null) {
            return null;
        }
        String id = (String) req.getField(f);
        if (id.isEmpty()) {
            return null;
        }
        Instance inst = registry.lookup(id);
        return inst == null ? null : inst.group;
    }

    /** Null when the KVCM meta call may proceed, else why not. */
    public Refusal checkMeta(String authorization, Message req) {
        BearerToken.Claims c;
        try {
            c = claims(authorization);
        } catch (BearerToken.InvalidTokenException e) {
            return new Refusal(true, "unauthenticated: " + e.getMessage());
        }
        Refusal r = check(c, groupOf(req));
        if (r == null && req instanceof RegisterInstanceRequest reg && !reg.getInstanceId().isEmpty()) {
            // re-registering an existing instance answers with its group's storages: its group must be allowed too
            Instance existing = registry.instance(reg.getInstanceId());
            if (existing != null && !existing.group.equals(reg.getInstanceGroup())) {
                r = check(c, existing.group);
            }
        }
        return r;
    }

    private Refusal check(BearerToken.Claims c, String group) {
        if (c == null) {
            if (group == null || anonymousGroup.test(group)) {
                return null; // no instance to protect (getClusterInfo, an unknown instance) or an open group
            }
            return new Refusal(true, "unauthenticated: instance group '" + group + "' does not allow calls without a "
                    + "token (allowAnonymousMeta is off); send 'Authorization: Bearer <token>'");
        }
        switch (c.role()) {
            case BearerToken.ADMIN, BearerToken.OPERATOR -> {
                return null;
            }
            case BearerToken.TENANT -> {
                if (group == null || c.groups().contains(group)) {
                    return null;
                }
                return new Refusal(false, "permission denied: tenant '" + c.sub() + "' (groups " + c.groups()
                        + ") may not use instance group '" + group + "'");
            }
            default -> {
                return new Refusal(false, "permission denied: role '" + c.role() + "' may not call the metadata plane");
            }
        }
    }

    /** The claims of a KVPool REST call's token; a refusal when it has none or a bad one ({@code needs} names which). */
    private record Checked(BearerToken.Claims claims, Refusal refusal) {
        boolean privileged() {
            return claims.role().equals(BearerToken.ADMIN) || claims.role().equals(BearerToken.OPERATOR);
        }
    }

    private Checked restToken(String authorization, String needs) {
        try {
            BearerToken.Claims c = claims(authorization);
            return c == null ? new Checked(null, new Refusal(true, "unauthenticated: this route needs " + needs
                    + " bearer token")) : new Checked(c, null);
        } catch (BearerToken.InvalidTokenException e) {
            return new Checked(null, new Refusal(true, "unauthenticated: " + e.getMessage()));
        }
    }

    /** Null when a KVPool REST call may proceed (admin or operator token), else why not. */
    public Refusal checkAdmin(String authorization) {
        Checked t = restToken(authorization, "an admin or operator");
        if (t.refusal() != null || t.privileged()) {
            return t.refusal();
        }
        return new Refusal(false, "permission denied: role '" + t.claims().role() + "' may not use the metadata plane's "
                + "REST API (admin or operator only)");
    }

    /**
     * Null when a KVPool REST call about one instance may proceed: admin and operator tokens for any, a tenant token
     * for an instance of its groups. An instance that is not registered is let through to answer 404 (as the control
     * plane's REST does for a tenant); one of another group is refused (403), as there.
     */
    public Refusal checkInstance(String authorization, String instanceId) {
        Checked t = restToken(authorization, "an admin, operator or tenant");
        if (t.refusal() != null || t.privileged()) {
            return t.refusal();
        }
        BearerToken.Claims c = t.claims();
        if (!c.role().equals(BearerToken.TENANT)) {
            return new Refusal(false, "permission denied: role '" + c.role() + "' may not call the metadata plane");
        }
        Instance inst = registry.instance(instanceId);
        if (inst == null || c.groups().contains(inst.group)) {
            return null;
        }
        return new Refusal(false, "permission denied: tenant '" + c.sub() + "' (groups " + c.groups()
                + ") may not use instance '" + instanceId + "'");
    }

    /** The KVCM header of a refused call. */
    public static CommonResponseHeader header(String traceId, Refusal r) {
        return CommonResponseHeader.newBuilder()
                .setStatus(Status.newBuilder().setCode(r.code()).setMessage(r.message()))
                .setRequestId((traceId == null ? "" : traceId) + "_" + System.currentTimeMillis() * 1000)
                .build();
    }

    /** A refused KVCM response of the request's response type: only its header (field 1) set. */
    public static Message refusedResponse(Message prototype, Message req, Refusal r) {
        Descriptors.FieldDescriptor t = req.getDescriptorForType().findFieldByName("trace_id");
        String trace = t == null ? "" : String.valueOf(req.getField(t));
        Message.Builder b = prototype.newBuilderForType();
        b.setField(b.getDescriptorForType().findFieldByName("header"), header(trace, r));
        return b.build();
    }
}
