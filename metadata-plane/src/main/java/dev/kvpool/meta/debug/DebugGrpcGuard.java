package dev.kvpool.meta.debug;

import dev.kvpool.api.proto.debug.CommonResponse;
import dev.kvpool.api.proto.debug.ErrorCode;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.runtime.MetaRuntime;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/**
 * In front of the gRPC DebugService: while the debug service is off every call ends UNIMPLEMENTED, as on a KVCM
 * that does not register it. When tokens are enforced a call needs an admin or operator token (metadata
 * {@code authorization: Bearer <token>}); a refused one is answered as the meta gRPC service answers refusals
 * (gRPC OK, the reason in the header, code INVALID_ARGUMENT: the debug ErrorCode enum has nothing closer).
 */
@ApplicationScoped
public class DebugGrpcGuard implements ServerInterceptor {
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    @Inject
    DebugSettings settings;
    @Inject
    MetaRuntime runtime;

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                       ServerCallHandler<Q, R> next) {
        if (!settings.enabled()) {
            call.close(Status.UNIMPLEMENTED.withDescription("the KVCM DebugService is off on this metadata plane "
                    + "(kvcm.service.enable_debug_service=false)"), new Metadata());
            return new ServerCall.Listener<>() {
            };
        }
        CommonResponse refusal = null;
        if (!runtime.ready()) {
            refusal = DebugCalls.response(ErrorCode.SERVICE_NOT_READY,
                    "the metadata plane is starting (" + runtime.phase().label + ")");
        } else if (runtime.auth() != null) {
            MetaAuth.Refusal r = runtime.auth().checkAdmin(headers.get(AUTHORIZATION));
            if (r != null) {
                refusal = DebugCalls.response(ErrorCode.INVALID_ARGUMENT, r.unauthenticated() ? r.message()
                        : "permission denied: the debug service needs an admin or operator token");
            }
        }
        if (refusal == null) {
            return next.startCall(call, headers);
        }
        return refuse(call, refusal);
    }

    /** Reads the request (unary) and answers the refusal instead of calling the service. */
    @SuppressWarnings("unchecked")
    private static <Q, R> ServerCall.Listener<Q> refuse(ServerCall<Q, R> call, CommonResponse answer) {
        call.request(1);
        return new ServerCall.Listener<>() {
            private boolean sent;

            @Override
            public void onHalfClose() {
                if (!sent) {
                    sent = true;
                    call.sendHeaders(new Metadata());
                    call.sendMessage((R) answer);
                    call.close(Status.OK, new Metadata());
                }
            }
        };
    }
}
