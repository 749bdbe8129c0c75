package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.runtime.MetaRuntime;
import io.quarkus.grpc.GrpcService;
import io.smallrye.common.annotation.Blocking;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;

/** KVCM MetaService over gRPC (package kv_cache_manager.proto.meta); the gRPC status is always OK (§1.2). */
@GrpcService
@io.quarkus.grpc.RegisterInterceptor(MetaAuthInterceptor.class)
public class KvcmGrpcService implements MetaService {
    @Inject
    MetaRuntime runtime;

    @Inject
    KvcmService kvcm;

    private KvcmMeta m() {
        return kvcm.meta();
    }

    /**
     * Reads answer on the event loop when the index is in this process; over a remote store (Redis) every call
     * blocks on the network, so it moves to a worker thread.
     */
    private <T> Uni<T> read(java.util.function.Supplier<T> call) {
        Uni<T> u = Uni.createFrom().item(call);
        return runtime.remoteStore() ? u.runSubscriptionOn(io.smallrye.mutiny.infrastructure.Infrastructure.getDefaultWorkerPool()) : u;
    }

    @Override
    @Blocking
    public Uni<RegisterInstanceResponse> registerInstance(RegisterInstanceRequest r) {
        return Uni.createFrom().item(() -> m().registerInstance(r));
    }

    @Override
    public Uni<GetInstanceInfoResponse> getInstanceInfo(GetInstanceInfoRequest r) {
        return read(() -> m().getInstanceInfo(r));
    }

    @Override
    public Uni<GetCacheMetaResponse> getCacheMeta(GetCacheMetaRequest r) {
        return read(() -> m().getCacheMeta(r));
    }

    @Override
    public Uni<GetCacheLocationResponse> getCacheLocation(GetCacheLocationRequest r) {
        if (runtime.locatesAsync(r.getInstanceId())) {
            // a known instance: the index read is asynchronous, so the call stays on the event loop (no worker hop)
            return Uni.createFrom().completionStage(() -> m().getCacheLocationAsync(r));
        }
        return read(() -> m().getCacheLocation(r));
    }

    @Override
    @Blocking
    public Uni<StartWriteCacheResponse> startWriteCache(StartWriteCacheRequest r) {
        return Uni.createFrom().item(() -> m().startWriteCache(r));
    }

    @Override
    @Blocking
    public Uni<CommonResponse> finishWriteCache(FinishWriteCacheRequest r) {
        return Uni.createFrom().item(() -> m().finishWriteCache(r));
    }

    @Override
    @Blocking
    public Uni<CommonResponse> removeCache(RemoveCacheRequest r) {
        return Uni.createFrom().item(() -> m().removeCache(r));
    }

    @Override
    @Blocking
    public Uni<CommonResponse> trimCache(TrimCacheRequest r) {
        return Uni.createFrom().item(() -> m().trimCache(r));
    }

    @Override
    public Uni<GetClusterInfoResponse> getClusterInfo(GetClusterInfoRequest r) {
        return read(() -> m().getClusterInfo(r));
    }

    @Override
    public Uni<GetCacheLocationLenResponse> getCacheLocationLen(GetCacheLocationLenRequest r) {
        return read(() -> m().getCacheLocationLen(r));
    }

    @Override
    public Uni<GetCacheLocationsByBackendResponse> getCacheLocationsByBackend(GetCacheLocationsByBackendRequest r) {
        return read(() -> m().getCacheLocationsByBackend(r));
    }

    @Inject
    KvcmReports reports;

    // engine-event APIs (kvcm-engine-events.md Part 1): a snapshot may wait on the reporter's write gate
    @Override
    @Blocking
    public Uni<ReportEventResponse> reportEvent(ReportEventRequest r) {
        return Uni.createFrom().item(() -> reports.reportEvent(r));
    }

    @Override
    @Blocking
    public Uni<GetHostCacheStateResponse> getHostCacheState(GetHostCacheStateRequest r) {
        return Uni.createFrom().item(() -> reports.getHostCacheState(r));
    }
}
