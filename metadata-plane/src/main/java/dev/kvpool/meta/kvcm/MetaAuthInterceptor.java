package dev.kvpool.meta.kvcm;

import com.google.protobuf.Message;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.runtime.MetaRuntime;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/**
 * Token checks for the KVCM meta gRPC service (metadata {@code authorization: Bearer <token>}). A refused call
 * never reaches the service: it is answered here with a response of the method's type whose header carries the
 * KVCM error, and gRPC status OK (§1.2: logical outcomes travel in the header).
 */
@ApplicationScoped
public class MetaAuthInterceptor implements ServerInterceptor {
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    @Inject
    MetaRuntime runtime;

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                       ServerCallHandler<Q, R> next) {
        boolean ready = runtime.ready();
        MetaAuth auth = runtime.auth();
        if (auth == null && ready) {
            return next.startCall(call, headers);
        }
        String authorization = headers.get(AUTHORIZATION);
        ServerCall.Listener<Q> delegate = next.startCall(call, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(delegate) {
            private boolean refused, waiting, halfClosed; // guarded by this listener

            @Override
            public void onMessage(Q message) {
                // refused as the HTTP routes refuse it: nothing is built yet, or only lookups are answered yet
                boolean starting = !ready && !(runtime.lookupsOpen() && KvcmMeta.isLookup(message));
                if (starting && message instanceof dev.kvpool.api.proto.meta.GetClusterInfoRequest q) {
                    refused = true; // answered here: OK with no leader endpoint yet (§B.1)
                    send(call, KvcmMeta.clusterInfoWhileStarting(runtime.nodeId(), q));
                    return;
                }
                if (message instanceof Message m) {
                    var fresh = starting ? null : FreshGate.check(runtime.fresh(), runtime.registry(), m);
                    if (fresh != null) {
                        // a group or instance not known here: the call waits (bounded) for fresh configuration,
                        // without holding this thread; the rest of the call resumes where it would have run
                        synchronized (this) {
                            waiting = true;
                        }
                        io.vertx.core.Context here = io.vertx.core.Vertx.currentContext();
                        fresh.whenComplete((r, e) -> {
                            Runnable resume = () -> resume(m, message, e != null
                                    ? new MetaAuth.Refusal(false, "fresh configuration failed: " + e,
                                    dev.kvpool.api.proto.meta.ErrorCode.INTERNAL_ERROR) : r);
                            if (here != null) {
                                here.runOnContext(v -> resume.run());
                            } else {
                                resume.run();
                            }
                        });
                        return;
                    }
                    MetaAuth.Refusal r = starting ? MetaAuth.starting(runtime.phase().label)
                            : auth == null ? null : auth.checkMeta(authorization, m);
                    if (r != null) {
                        synchronized (this) {
                            refused = true;
                        }
                        respond(call, m, r);
                        return;
                    }
                }
                super.onMessage(message);
            }

            private void resume(Message m, Q message, MetaAuth.Refusal fresh) {
                MetaAuth.Refusal r = fresh != null ? fresh : auth.checkMeta(authorization, m);
                boolean closeNow;
                synchronized (this) {
                    waiting = false;
                    refused = r != null;
                    closeNow = halfClosed && r == null;
                }
                try {
                    if (r != null) {
                        respond(call, m, r);
                        return;
                    }
                    super.onMessage(message);
                    if (closeNow) {
                        super.onHalfClose();
                    }
                } catch (RuntimeException e) {
                    call.close(io.grpc.Status.INTERNAL.withDescription(String.valueOf(e)), new Metadata());
                }
            }

            @Override
            public void onHalfClose() {
                synchronized (this) {
                    if (refused) {
                        return;
                    }
                    if (waiting) {
                        halfClosed = true; // passed on once the freshness step lets the message through
                        return;
                    }
                }
                super.onHalfClose();
            }
        };
    }

    @SuppressWarnings("unchecked")
    private static <Q, R> void send(ServerCall<Q, R> call, Message response) {
        call.sendHeaders(new Metadata());
        call.sendMessage((R) response);
        call.close(io.grpc.Status.OK, new Metadata());
    }

    @SuppressWarnings("unchecked")
    private static <Q, R> void respond(ServerCall<Q, R> call, Message req, MetaAuth.Refusal r) {
        MethodDescriptor.Marshaller<R> m = call.getMethodDescriptor().getResponseMarshaller();
        if (m instanceof MethodDescriptor.PrototypeMarshaller<R> pm && pm.getMessagePrototype() instanceof Message proto) {
            send(call, MetaAuth.refusedResponse(proto, req, r));
        } else {
            call.close((r.unauthenticated() ? io.grpc.Status.UNAUTHENTICATED : io.grpc.Status.PERMISSION_DENIED)
                    .withDescription(r.message()), new Metadata());
        }
    }
}
