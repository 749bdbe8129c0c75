package dev.kvpool.meta.kvcm;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.config.FreshConfig;
import dev.kvpool.meta.registry.Registry;
import java.util.concurrent.CompletableFuture;

/**
 * The step before the token check on every KVCM meta call (HTTP and gRPC): a call naming an instance group or an
 * instance this plane does not know first waits (bounded) for fresh configuration from the control plane
 * ({@link FreshConfig}), so a change the control plane acknowledged is in force for the very next call, and a
 * name that really does not exist is answered as missing — never as "unauthenticated" (issue 34 part 3).
 */
public final class FreshGate {
    private FreshGate() {
    }

    /**
     * Null when the call names nothing unknown (or no control plane manages this plane): it goes on at once.
     * Otherwise a future of the refusal to answer with, or of null to go on (the token check and the call decide
     * with the configuration fetched). Its completion runs off the caller's thread.
     */
    public static CompletableFuture<MetaAuth.Refusal> check(FreshConfig fresh, Registry registry, Message req) {
        if (fresh == null || registry == null) {
            return null;
        }
        if (req instanceof RegisterInstanceRequest r) {
            String g = r.getInstanceGroup();
            // an invalid name is answered by the validation (5); a known instance by the identity check (§3.1.2)
            if (g.isEmpty() || registry.group(g) != null || !Identifiers.valid(Identifiers.Kind.GROUP, g)
                    || registry.instance(r.getInstanceId()) != null) {
                return null;
            }
            return fresh.ensure("group:" + g, () -> registry.group(g) != null).thenApplyAsync(o -> switch (o) {
                case KNOWN -> null;
                // §3.1.1 step 9 (new id, unknown group): baseline INTERNAL_ERROR, as the registry answers it
                case ABSENT -> registry.instance(r.getInstanceId()) != null ? null
                        : new MetaAuth.Refusal(false, "instance group '" + Text.safe(g) + "' does not exist",
                                ErrorCode.INTERNAL_ERROR);
                case UNREACHABLE, TIMEOUT -> notReady(fresh, o, "instance group '" + Text.safe(g) + "'");
            }, fresh.executor());
        }
        Descriptors.FieldDescriptor f = req.getDescriptorForType().findFieldByName("instance_id");
        if (f == null) {
            return null;
        }
        String id = (String) req.getField(f);
        if (id.isEmpty() || registry.instance(id) != null || !Identifiers.valid(Identifiers.Kind.INSTANCE, id)) {
            return null;
        }
        // async: the timeout completes on the JDK's shared delay thread, and a shared store's lookup below may block
        return fresh.ensure("instance:" + id, () -> registry.instance(id) != null).thenApplyAsync(o -> switch (o) {
            // absent: the call goes on and answers INSTANCE_NOT_EXIST "instance 'i' is not registered" (§1.9);
            // the token check lets an unknown instance through (it protects no group), and a shared store may
            // still hold one another replica registered a moment ago (the lookup reads it)
            case KNOWN, ABSENT -> null;
            case UNREACHABLE, TIMEOUT -> registry.lookup(id) != null ? null
                    : notReady(fresh, o, "instance '" + Text.safe(id) + "'");
        }, fresh.executor());
    }

    /** SERVICE_NOT_READY (4): the only §1.7 code that says "not now, ask again" without naming a leader. */
    private static MetaAuth.Refusal notReady(FreshConfig fresh, FreshConfig.Outcome o, String what) {
        String why = o == FreshConfig.Outcome.TIMEOUT
                ? "the control plane did not answer within " + fresh.settings().maxWait().toMillis() + " ms"
                : "the control plane is unreachable";
        return new MetaAuth.Refusal(false, what + " is not known here and " + why + "; retry", ErrorCode.SERVICE_NOT_READY);
    }
}
