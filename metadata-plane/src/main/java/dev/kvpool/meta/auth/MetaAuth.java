package dev.kvpool.meta.auth;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import java.security.PublicKey;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * Checks the control plane's bearer tokens on the metadata plane, offline with its Ed25519 public key. KVCM meta
 * calls: admin and operator tokens may use any instance, tenant tokens the instances of their groups; calls without
 * a token only instances of groups with allowAnonymousMeta. KVPool REST under /api/v1: admin or operator.
 */
public final class MetaAuth {
    private static final Logger LOG = Logger.getLogger(MetaAuth.class);
    /** The KVCM code for a refused call: the ErrorCode enum has no authentication code (see kvcm-compatibility.md). */
    public static final ErrorCode REFUSED = ErrorCode.INVALID_ARGUMENT;

    /** Where the public key comes from (the control plane); returns null when it cannot be had now. */
    public interface KeySource {
        PublicKey fetch();
    }

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
    private final KeySource source;
    private volatile PublicKey key;
    private final AtomicLong lastFetchMs = new AtomicLong();
    private final Map<String, BearerToken.Claims> verified = new ConcurrentHashMap<>();

    public MetaAuth(Registry registry, Predicate<String> anonymousGroup, PublicKey key, KeySource source) {
        this.registry = registry;
        this.anonymousGroup = anonymousGroup;
        this.key = key;
        this.source = source;
    }

    public PublicKey key() {
        return key;
    }

    /** Fetches the key now (start-up); false when the source could not provide it. */
    public boolean refreshKey() {
        if (source == null) {
            return key != null;
        }
        lastFetchMs.set(System.currentTimeMillis());
        PublicKey k = source.fetch();
        if (k != null) {
            if (key != null && !k.equals(key)) {
                LOG.info("the control plane's token signing key changed");
                verified.clear();
            }
            key = k;
            return true;
        }
        return false;
    }

    /** After a verify failure: refetch the key in the background, at most once a minute. */
    private void maybeRefetch() {
        long now = System.currentTimeMillis(), last = lastFetchMs.get();
        if (source != null && now - last > 60_000 && lastFetchMs.compareAndSet(last, now)) {
            Thread.ofVirtual().name("kvpool-auth-key").start(this::refreshKey);
        }
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
        if (c != null) {
            if (c.expiredAt(now)) {
                verified.remove(token);
                throw new BearerToken.InvalidTokenException("token expired");
            }
            return c;
        }
        PublicKey k = key;
        if (k == null) {
            maybeRefetch();
            throw new BearerToken.InvalidTokenException("the token signing key is not known yet (control plane unreachable)");
        }
        try {
            c = BearerToken.verify(k, token, now);
        } catch (BearerToken.InvalidTokenException e) {
            if (e.getMessage().contains("signature")) {
                maybeRefetch();
            }
            throw e;
        }
        if (verified.size() > 10_000) {
            verified.clear();
        }
        verified.put(token, c);
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
