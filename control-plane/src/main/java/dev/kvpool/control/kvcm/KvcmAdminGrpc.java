package dev.kvpool.control.kvcm;

import com.google.protobuf.Message;
import dev.kvpool.api.proto.admin.*;
import dev.kvpool.control.security.Caller;
import io.grpc.Status;
import io.quarkus.grpc.GrpcService;
import io.quarkus.security.identity.CurrentIdentityAssociation;
import io.smallrye.common.annotation.Blocking;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import java.util.Set;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * KVCM AdminService over gRPC (package kv_cache_manager.proto.admin) on the admin gRPC port, backed by the same
 * {@link KvcmAdmin} as the HTTP routes. Credentials travel in the {@code authorization} metadata entry
 * ({@code Bearer <token>} or {@code Basic ...}); missing ones fail with UNAUTHENTICATED, a role that may not call
 * the RPC with PERMISSION_DENIED. Logical outcomes are gRPC OK with the code in the response header.
 */
@GrpcService
public class KvcmAdminGrpc implements AdminService {
    @Inject
    KvcmAdmin admin;
    @Inject
    CurrentIdentityAssociation identity;
    @ConfigProperty(name = "kvpool.control.kvcm-admin.auth-required", defaultValue = "true")
    boolean authRequired;

    @SuppressWarnings("unchecked")
    private <T extends Message> Uni<T> call(String name, Message request) {
        KvcmAdmin.Rpc rpc = KvcmAdmin.RPCS.get(Character.toLowerCase(name.charAt(0)) + name.substring(1));
        Caller caller = Caller.of(identity.getIdentity());
        if (caller == null && !authRequired) {
            caller = Caller.SYSTEM;
        }
        Integer denied = KvcmAdmin.denied(rpc, caller);
        if (denied != null) {
            return Uni.createFrom().failure(denied == 401
                    ? Status.UNAUTHENTICATED.withDescription("send authorization: Bearer <token> metadata").asRuntimeException()
                    : Status.PERMISSION_DENIED.withDescription(caller.role() + " may not call " + name).asRuntimeException());
        }
        Caller who = caller == null ? new Caller("anonymous", "tenant", Set.of()) : caller;
        return Uni.createFrom().item(() -> (T) admin.call(rpc, request, who));
    }

    @Override
    @Blocking
    public Uni<CommonResponse> addStorage(AddStorageRequest r) {
        return call("AddStorage", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> enableStorage(EnableStorageRequest r) {
        return call("EnableStorage", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> disableStorage(DisableStorageRequest r) {
        return call("DisableStorage", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> removeStorage(RemoveStorageRequest r) {
        return call("RemoveStorage", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> updateStorage(UpdateStorageRequest r) {
        return call("UpdateStorage", r);
    }

    @Override
    @Blocking
    public Uni<ListStorageResponse> listStorage(ListStorageRequest r) {
        return call("ListStorage", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> createInstanceGroup(CreateInstanceGroupRequest r) {
        return call("CreateInstanceGroup", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> updateInstanceGroup(UpdateInstanceGroupRequest r) {
        return call("UpdateInstanceGroup", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> removeInstanceGroup(RemoveInstanceGroupRequest r) {
        return call("RemoveInstanceGroup", r);
    }

    @Override
    @Blocking
    public Uni<GetInstanceGroupResponse> getInstanceGroup(GetInstanceGroupRequest r) {
        return call("GetInstanceGroup", r);
    }

    @Override
    @Blocking
    public Uni<GetCacheMetaResponse> getCacheMeta(GetCacheMetaRequest r) {
        return call("GetCacheMeta", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> removeCache(RemoveCacheRequest r) {
        return call("RemoveCache", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> registerInstance(RegisterInstanceRequest r) {
        return call("RegisterInstance", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> removeInstance(RemoveInstanceRequest r) {
        return call("RemoveInstance", r);
    }

    @Override
    @Blocking
    public Uni<GetInstanceInfoResponse> getInstanceInfo(GetInstanceInfoRequest r) {
        return call("GetInstanceInfo", r);
    }

    @Override
    @Blocking
    public Uni<ListInstanceInfoResponse> listInstanceInfo(ListInstanceInfoRequest r) {
        return call("ListInstanceInfo", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> addAccount(AddAccountRequest r) {
        return call("AddAccount", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> deleteAccount(DeleteAccountRequest r) {
        return call("DeleteAccount", r);
    }

    @Override
    @Blocking
    public Uni<ListAccountResponse> listAccount(ListAccountRequest r) {
        return call("ListAccount", r);
    }

    @Override
    @Blocking
    public Uni<ConfigSnapShotResponse> genConfigSnapshot(GenConfigSnapshotRequest r) {
        return call("GenConfigSnapshot", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> loadConfigSnapshot(LoadConfigSnapshotRequest r) {
        return call("LoadConfigSnapshot", r);
    }

    @Override
    @Blocking
    public Uni<GetMetricsResponse> getMetrics(GetMetricsRequest r) {
        return call("GetMetrics", r);
    }

    @Override
    @Blocking
    public Uni<CheckHealthResponse> checkHealth(CheckHealthRequest r) {
        return call("CheckHealth", r);
    }

    @Override
    @Blocking
    public Uni<GetManagerClusterInfoResponse> getManagerClusterInfo(GetManagerClusterInfoRequest r) {
        return call("GetManagerClusterInfo", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> leaderDemote(LeaderDemoteRequest r) {
        return call("LeaderDemote", r);
    }

    @Override
    @Blocking
    public Uni<GetLeaderElectorConfigResponse> getLeaderElectorConfig(GetLeaderElectorConfigRequest r) {
        return call("GetLeaderElectorConfig", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> updateLeaderElectorConfig(UpdateLeaderElectorConfigRequest r) {
        return call("UpdateLeaderElectorConfig", r);
    }

    @Override
    @Blocking
    public Uni<CommonResponse> updateLogger(UpdateLoggerRequest r) {
        return call("UpdateLogger", r);
    }

    @Override
    @Blocking
    public Uni<ListInstanceGroupResponse> listInstanceGroup(ListInstanceGroupRequest r) {
        return call("ListInstanceGroup", r);
    }
}
