package dev.kvpool.meta.debug;

import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.CommonResponse;
import dev.kvpool.api.proto.debug.DebugService;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.api.proto.debug.RemoveFaultRequest;
import io.quarkus.grpc.GrpcService;
import io.quarkus.grpc.RegisterInterceptor;
import io.smallrye.mutiny.Uni;

/**
 * KVCM's DebugService over gRPC (kv_cache_manager.proto.debug.DebugService) on the meta gRPC port: KVCM serves it on
 * the admin gRPC port, or on the main one when admin shares it, and KVPool's metadata plane has only the main one.
 * {@link DebugGrpcGuard} answers UNIMPLEMENTED while the debug service is off, and checks tokens when they are enforced.
 */
@GrpcService
@RegisterInterceptor(DebugGrpcGuard.class)
public class DebugGrpcService implements DebugService {
    private final DebugCalls calls = new DebugCalls(FaultTable.PROCESS);

    @Override
    public Uni<CommonResponse> injectFault(InjectFaultRequest r) {
        return Uni.createFrom().item(() -> calls.injectFault(r));
    }

    @Override
    public Uni<CommonResponse> removeFault(RemoveFaultRequest r) {
        return Uni.createFrom().item(() -> calls.removeFault(r));
    }

    @Override
    public Uni<CommonResponse> clearFaults(ClearFaultsRequest r) {
        return Uni.createFrom().item(() -> calls.clearFaults(r));
    }
}
