package dev.kvpool.control.kvcm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.admin.*;
import dev.kvpool.control.account.AccountEntity;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.common.ProblemMappers;
import dev.kvpool.control.group.GroupEntity;
import dev.kvpool.control.group.GroupService;
import dev.kvpool.control.instance.InstanceEntity;
import dev.kvpool.control.instance.InstanceService;
import dev.kvpool.control.leader.Leadership;
import dev.kvpool.control.security.Caller;
import dev.kvpool.control.storage.StorageEntity;
import dev.kvpool.control.storage.StorageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.control.ActivateRequestContext;
import jakarta.inject.Inject;
import java.util.Comparator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * KVCM AdminService semantics (spec §3.11-3.15) over KVPool's services, shared by the HTTP routes and gRPC. Each RPC
 * has an access rule; the caller is checked before the call (KVCM never checks; KVPool does).
 */
@ApplicationScoped
public class KvcmAdmin {
    /** Who may call: anyone, any account, admin/operator, admin only. Tenant reads are narrowed inside the call. */
    public enum Access { PUBLIC, ANY, OPERATOR, ADMIN }

    public record Rpc(String name, Supplier<Message.Builder> request, Message responseType, Access access,
                      BiFunction<KvcmAdmin, Call, Message> fn) {
        /** KVCM serves it on the leader only (spec §1.3's leader-only column); a follower answers 9. */
        public boolean leaderOnly() {
            return !ANY_NODE.contains(name);
        }
    }

    /** The admin RPCs KVCM serves on every node (§1.3, §3.15); every other one is leader-only. */
    static final Set<String> ANY_NODE = Set.of("GetMetrics", "CheckHealth", "GetManagerClusterInfo", "LeaderDemote",
            "GetLeaderElectorConfig", "UpdateLeaderElectorConfig", "UpdateLogger");
    public static final String NOT_LEADER_MESSAGE = "Server is not leader";

    public record Call(Message request, Caller caller, String requestId) {
        @SuppressWarnings("unchecked")
        <T extends Message> T q() {
            return (T) request;
        }
    }

    private static <Q extends Message> Rpc rpc(String name, Supplier<Message.Builder> b, Message resp, Access a,
                                               BiFunction<KvcmAdmin, Call, Message> f) {
        return new Rpc(name, b, resp, a, f);
    }

    /** Route name (lowerCamel, as in {@code POST /api/<name>}) → RPC. */
    public static final Map<String, Rpc> RPCS = Map.ofEntries(
            e(rpc("AddStorage", AddStorageRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::addStorage)),
            e(rpc("EnableStorage", EnableStorageRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::enableStorage)),
            e(rpc("DisableStorage", DisableStorageRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::disableStorage)),
            e(rpc("RemoveStorage", RemoveStorageRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::removeStorage)),
            e(rpc("UpdateStorage", UpdateStorageRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::updateStorage)),
            e(rpc("ListStorage", ListStorageRequest::newBuilder, ListStorageResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::listStorage)),
            e(rpc("CreateInstanceGroup", CreateInstanceGroupRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::createGroup)),
            e(rpc("UpdateInstanceGroup", UpdateInstanceGroupRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::updateGroup)),
            e(rpc("RemoveInstanceGroup", RemoveInstanceGroupRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::removeGroup)),
            e(rpc("GetInstanceGroup", GetInstanceGroupRequest::newBuilder, GetInstanceGroupResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::getGroup)),
            e(rpc("ListInstanceGroup", ListInstanceGroupRequest::newBuilder, ListInstanceGroupResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::listGroups)),
            e(rpc("GetCacheMeta", GetCacheMetaRequest::newBuilder, GetCacheMetaResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::metaPlaneOnly)),
            e(rpc("RemoveCache", RemoveCacheRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::metaPlaneOnly)),
            e(rpc("RegisterInstance", RegisterInstanceRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::registerInstance)),
            e(rpc("RemoveInstance", RemoveInstanceRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::removeInstance)),
            e(rpc("GetInstanceInfo", GetInstanceInfoRequest::newBuilder, GetInstanceInfoResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::getInstance)),
            e(rpc("ListInstanceInfo", ListInstanceInfoRequest::newBuilder, ListInstanceInfoResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::listInstances)),
            e(rpc("AddAccount", AddAccountRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.ADMIN, KvcmAdmin::addAccount)),
            e(rpc("DeleteAccount", DeleteAccountRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.ADMIN, KvcmAdmin::deleteAccount)),
            e(rpc("ListAccount", ListAccountRequest::newBuilder, ListAccountResponse.getDefaultInstance(), Access.ADMIN, KvcmAdmin::listAccounts)),
            e(rpc("GenConfigSnapshot", GenConfigSnapshotRequest::newBuilder, ConfigSnapShotResponse.getDefaultInstance(), Access.ADMIN, KvcmAdmin::genSnapshot)),
            e(rpc("LoadConfigSnapshot", LoadConfigSnapshotRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.ADMIN, KvcmAdmin::loadSnapshot)),
            e(rpc("GetMetrics", GetMetricsRequest::newBuilder, GetMetricsResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::metrics)),
            e(rpc("CheckHealth", CheckHealthRequest::newBuilder, CheckHealthResponse.getDefaultInstance(), Access.PUBLIC, KvcmAdmin::health)),
            e(rpc("GetManagerClusterInfo", GetManagerClusterInfoRequest::newBuilder, GetManagerClusterInfoResponse.getDefaultInstance(), Access.PUBLIC, KvcmAdmin::clusterInfo)),
            e(rpc("LeaderDemote", LeaderDemoteRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::demote)),
            e(rpc("GetLeaderElectorConfig", GetLeaderElectorConfigRequest::newBuilder, GetLeaderElectorConfigResponse.getDefaultInstance(), Access.ANY, KvcmAdmin::electorConfig)),
            e(rpc("UpdateLeaderElectorConfig", UpdateLeaderElectorConfigRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::updateElectorConfig)),
            e(rpc("UpdateLogger", UpdateLoggerRequest::newBuilder, CommonResponse.getDefaultInstance(), Access.OPERATOR, KvcmAdmin::updateLogger)));

    private static Map.Entry<String, Rpc> e(Rpc r) {
        return Map.entry(Character.toLowerCase(r.name().charAt(0)) + r.name().substring(1), r);
    }

    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(KvcmAdmin.class);

    @Inject
    StorageService storages;
    @Inject
    GroupService groups;
    @Inject
    InstanceService instances;
    @Inject
    AccountService accounts;
    @Inject
    KvcmSnapshots snapshots;
    @Inject
    Leadership leadership;
    /** Followers serve the leader-only routes too (writes are transactional in the database); KVCM answers 9. */
    @ConfigProperty(name = "kvpool.control.kvcm-admin.followers-serve", defaultValue = "false")
    boolean followersServe;
    /** A leader-only call on a replica that is still becoming leader (no other leader known) waits this long. */
    @ConfigProperty(name = "kvpool.control.kvcm-admin.leader-wait", defaultValue = "3s")
    java.time.Duration leaderWait;

    private final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();
    private final Map<String, Long> lastRtUs = new ConcurrentHashMap<>();

    /** Null when {@code caller} may call {@code rpc}; else the HTTP status to answer (401 or 403). */
    public static Integer denied(Rpc rpc, Caller caller) {
        if (rpc.access() == Access.PUBLIC) {
            return null;
        }
        if (caller == null) {
            return 401;
        }
        return switch (rpc.access()) {
            case OPERATOR -> caller.isTenant() ? Integer.valueOf(403) : null;
            case ADMIN -> caller.isAdmin() ? null : Integer.valueOf(403);
            default -> null;
        };
    }

    /** Runs one RPC and always answers its response type with a header (§1.6-1.7). */
    @ActivateRequestContext
    public Message call(Rpc rpc, Message request, Caller caller) {
        long t0 = System.nanoTime();
        String trace = traceId(request);
        // the request id echoes the trace id; one that breaks the text rule is echoed escaped (the call is refused)
        String requestId = (Text.opaqueProblem(trace, Limits.MAX_TEXT) == null ? trace : Text.safe(trace)) + "_"
                + (System.currentTimeMillis() * 1000);
        Message out;
        try {
            // leadership first (§1.8: before any other check), so a KVCM client rediscovers the leader and retries
            if (rpc.leaderOnly() && !followersServe && !awaitLeader()) {
                throw new ApiException(409, null, NOT_LEADER_MESSAGE, ErrorCode.SERVER_NOT_LEADER); // counted too
            }
            // every string of every request, before any of it is used: bounded, no control characters (blobs may
            // hold newlines); the snapshot's text is checked entry by entry where it is parsed
            Inputs.strings(request, "", REQUEST_BLOBS, Set.of("config_snapshot", "password"));
            out = rpc.fn().apply(this, new Call(request, caller, requestId));
            out = withHeader(out.toBuilder(), ErrorCode.OK, okMessage(out), requestId);
        } catch (ApiException e) {
            out = withHeader(rpc.responseType().newBuilderForType(), e.kvcmCode, message(e), requestId);
        } catch (RuntimeException e) {
            ApiException api = unwrap(e);
            String db = api == null ? ProblemMappers.databaseUnavailable(e) : null;
            if (api == null && db == null) {
                LOG.warnf(e, "KVCM admin %s failed (request id %s)", rpc.name(), Text.safe(requestId));
            }
            // the client learns that it failed and where to look, not the server's SQL or stack
            out = api != null ? withHeader(rpc.responseType().newBuilderForType(), api.kvcmCode, message(api), requestId)
                    : db != null ? withHeader(rpc.responseType().newBuilderForType(), ErrorCode.SERVICE_NOT_READY,
                    "database unavailable: " + db, requestId)
                    : withHeader(rpc.responseType().newBuilderForType(), ErrorCode.INTERNAL_ERROR,
                    "internal error (" + e.getClass().getSimpleName() + "), logged with request id " + requestId,
                    requestId);
        }
        calls.computeIfAbsent(rpc.name(), k -> new AtomicLong()).incrementAndGet();
        lastRtUs.put(rpc.name(), Math.max(2, (System.nanoTime() - t0) / 1000));
        return out;
    }

    private boolean awaitLeader() {
        try {
            return leadership.awaitLeader(leaderWait.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Request fields that are blobs (may hold newlines), not text. */
    private static final Set<String> REQUEST_BLOBS = Set.of("user_data", "extra", "extra_info");

    /** The refusal's text, led by the field at fault when the text does not name it (KVCM has no field member). */
    private static String message(ApiException e) {
        String m = String.valueOf(e.getMessage());
        return e.field == null || m.contains(e.field) ? m : e.field + ": " + m;
    }

    private static ApiException unwrap(Throwable t) {
        for (int i = 0; t != null && i < 10; i++, t = t.getCause()) {
            if (t instanceof ApiException a) {
                return a;
            }
        }
        return null;
    }

    private static String okMessage(Message out) {
        return out.getDescriptorForType().getName().equals("GetInstanceInfoResponse")
                || out.getDescriptorForType().getName().equals("ListInstanceInfoResponse") ? "" : "OK";
    }

    private static String traceId(Message request) {
        Descriptors.FieldDescriptor f = request.getDescriptorForType().findFieldByName("trace_id");
        return f == null ? "" : (String) request.getField(f);
    }

    private static Message withHeader(Message.Builder b, ErrorCode code, String message, String requestId) {
        Descriptors.FieldDescriptor f = b.getDescriptorForType().findFieldByName("header");
        b.setField(f, CommonResponseHeader.newBuilder().setStatus(Status.newBuilder().setCode(code)
                .setMessage(message == null ? "" : message)).setRequestId(requestId).build());
        return b.build();
    }

    // ---------------------------------------------------------------- storages

    Message addStorage(Call c) {
        AddStorageRequest q = c.q();
        if (!q.hasStorage()) {
            throw ApiException.invalid("storage", "storage is required");
        }
        storages.create(dev.kvpool.control.storage.StorageTypes.withEventReportDefaults(q.getStorage()), true);
        return CommonResponse.getDefaultInstance();
    }

    Message enableStorage(Call c) {
        EnableStorageRequest q = c.q();
        Inputs.name(Identifiers.Kind.STORAGE, "storage_unique_name", q.getStorageUniqueName());
        storages.setEnabled(q.getStorageUniqueName(), true, null);
        return CommonResponse.getDefaultInstance();
    }

    Message disableStorage(Call c) {
        DisableStorageRequest q = c.q();
        Inputs.name(Identifiers.Kind.STORAGE, "storage_unique_name", q.getStorageUniqueName());
        storages.setEnabled(q.getStorageUniqueName(), false, null);
        return CommonResponse.getDefaultInstance();
    }

    Message removeStorage(Call c) {
        RemoveStorageRequest q = c.q();
        Inputs.existingName(Identifiers.Kind.STORAGE, "storage_unique_name", q.getStorageUniqueName());
        storages.delete(q.getStorageUniqueName(), null);
        return CommonResponse.getDefaultInstance();
    }

    Message updateStorage(Call c) {
        UpdateStorageRequest q = c.q();
        if (!q.hasStorage()) {
            throw ApiException.invalid("storage", "storage is required");
        }
        storages.update(dev.kvpool.control.storage.StorageTypes.withEventReportDefaults(q.getStorage()), null, null,
                false);
        return CommonResponse.getDefaultInstance();
    }

    Message listStorage(Call c) {
        ListStorageResponse.Builder b = ListStorageResponse.newBuilder();
        storages.list().stream().sorted(Comparator.comparing((StorageEntity s) -> s.name))
                .forEach(s -> b.addStorage(StorageService.toProto(s)));
        return b.build();
    }

    // ---------------------------------------------------------------- groups

    Message createGroup(Call c) {
        CreateInstanceGroupRequest q = c.q();
        InstanceGroup g = q.getInstanceGroup();
        groups.create(GroupService.fromKvcm(g, null), g);
        return CommonResponse.getDefaultInstance();
    }

    Message updateGroup(Call c) {
        UpdateInstanceGroupRequest q = c.q();
        InstanceGroup g = q.getInstanceGroup();
        Inputs.name(Identifiers.Kind.GROUP, "instance_group.name", g.getName());
        GroupEntity old = groups.get(g.getName());
        groups.update(g.getName(), GroupService.fromKvcm(g, old), null, g, q.getCurrentVersion());
        return CommonResponse.getDefaultInstance();
    }

    Message removeGroup(Call c) {
        RemoveInstanceGroupRequest q = c.q();
        Inputs.existingName(Identifiers.Kind.GROUP, "name", q.getName());
        groups.delete(q.getName(), null);
        return CommonResponse.getDefaultInstance();
    }

    Message getGroup(Call c) {
        GetInstanceGroupRequest q = c.q();
        Inputs.name(Identifiers.Kind.GROUP, "name", q.getName());
        c.caller().requireGroup(q.getName());
        GroupEntity g = groups.get(q.getName());
        return GetInstanceGroupResponse.newBuilder().setInstanceGroup(kvcmGroup(g, c.caller())).build();
    }

    Message listGroups(Call c) {
        ListInstanceGroupResponse.Builder b = ListInstanceGroupResponse.newBuilder();
        groups.list().stream().filter(g -> c.caller().canSeeGroup(g.name))
                .forEach(g -> b.addInstanceGroup(kvcmGroup(g, c.caller())));
        return b.build();
    }

    /** The stored KVCM group; tenants do not see the metadata store URI (it may hold credentials). */
    private static InstanceGroup kvcmGroup(GroupEntity g, Caller caller) {
        InstanceGroup.Builder b = ProtoJson.merge(g.kvcmJson, InstanceGroup.newBuilder());
        if (caller.isTenant()
                && !b.getCacheConfig().getMetaIndexerConfig().getMetaStorageBackendConfig().getStorageUri().isEmpty()) {
            b.getCacheConfigBuilder().getMetaIndexerConfigBuilder().getMetaStorageBackendConfigBuilder().setStorageUri("");
        }
        return b.build();
    }

    Message metaPlaneOnly(Call c) {
        throw new ApiException(400, null, "the block index lives in the metadata plane: call this RPC on its KVCM "
                + "meta port (6382 / 6381)", ErrorCode.UNSUPPORTED);
    }

    // ---------------------------------------------------------------- instances

    Message registerInstance(Call c) {
        RegisterInstanceRequest q = c.q();
        // KVCM's own field names in the messages (the service names REST's), in KVCM's order (§3.1.1)
        Inputs.name(Identifiers.Kind.GROUP, "instance_group", q.getInstanceGroup());
        Inputs.name(Identifiers.Kind.INSTANCE, "instance_id", q.getInstanceId());
        try {
            instances.register(q, null);
        } catch (ApiException e) {
            // admin RegisterInstance: validation → 5, everything from the identity check on → 3 (§3.1.1)
            if (e.kvcmCode == ErrorCode.INVALID_ARGUMENT) {
                throw e;
            }
            throw new ApiException(e.status, e.field, e.getMessage(), ErrorCode.INTERNAL_ERROR);
        }
        return CommonResponse.getDefaultInstance();
    }

    Message removeInstance(Call c) {
        RemoveInstanceRequest q = c.q();
        Inputs.existingName(Identifiers.Kind.INSTANCE, "instance_id", q.getInstanceId());
        if (!q.getInstanceGroup().isEmpty()) {
            Inputs.existingName(Identifiers.Kind.GROUP, "instance_group", q.getInstanceGroup());
        }
        instances.delete(q.getInstanceId(), null);
        return CommonResponse.getDefaultInstance();
    }

    Message getInstance(Call c) {
        GetInstanceInfoRequest q = c.q();
        Inputs.name(Identifiers.Kind.INSTANCE, "instance_id", q.getInstanceId());
        InstanceEntity e = instances.get(q.getInstanceId());
        c.caller().requireGroup(e.group.name);
        return GetInstanceInfoResponse.newBuilder().setInstanceInfo(InstanceService.toKvcm(e)).build();
    }

    Message listInstances(Call c) {
        ListInstanceInfoRequest q = c.q();
        String g = q.getInstanceGroupName();
        if (!g.isEmpty()) {
            Inputs.name(Identifiers.Kind.GROUP, "instance_group_name", g);
        }
        ListInstanceInfoResponse.Builder b = ListInstanceInfoResponse.newBuilder();
        instances.list().stream().filter(i -> (g.isEmpty() || g.equals(i.group.name)) && c.caller().canSeeGroup(i.group.name))
                .forEach(i -> b.addInstanceInfo(InstanceService.toKvcm(i)));
        return b.build();
    }

    // ---------------------------------------------------------------- accounts

    Message addAccount(Call c) {
        AddAccountRequest q = c.q();
        Inputs.name(Identifiers.Kind.ACCOUNT, "user_name", q.getUserName());
        accounts.create(q.getUserName(), q.getPassword(), q.getRole() == AccountRole.ROLE_ADMIN ? BearerToken.ADMIN
                : BearerToken.TENANT, null);
        return CommonResponse.getDefaultInstance();
    }

    Message deleteAccount(Call c) {
        DeleteAccountRequest q = c.q();
        Inputs.existingName(Identifiers.Kind.ACCOUNT, "user_name", q.getUserName());
        accounts.delete(q.getUserName(), null);
        return CommonResponse.getDefaultInstance();
    }

    Message listAccounts(Call c) {
        ListAccountResponse.Builder b = ListAccountResponse.newBuilder();
        for (AccountEntity a : accounts.list()) {
            b.addAccounts(Account.newBuilder().setUserName(a.name)
                    .setRole(a.role.equals(BearerToken.ADMIN) ? AccountRole.ROLE_ADMIN : AccountRole.ROLE_USER));
        }
        return b.build();
    }

    // ---------------------------------------------------------------- snapshot

    Message genSnapshot(Call c) {
        return ConfigSnapShotResponse.newBuilder().setConfigSnapshot(snapshots.generate()).build();
    }

    Message loadSnapshot(Call c) {
        LoadConfigSnapshotRequest q = c.q();
        snapshots.load(q.getConfigSnapshot());
        return CommonResponse.getDefaultInstance();
    }

    // ---------------------------------------------------------------- cluster, health, metrics, logging

    Message metrics(Call c) {
        GetMetricsResponse.Builder b = GetMetricsResponse.newBuilder().setTimestamp(System.currentTimeMillis())
                .setExtraData("");
        calls.forEach((api, n) -> {
            MetricsTag tag = MetricsTag.newBuilder().setTagKey("api_name").setTagValue(api).build();
            b.addMetrics(MetricsData.newBuilder().setMetricName("service.query_counter")
                    .setMetricValue(MetricValue.newBuilder().setIntValue(n.get())).addMetricTags(tag));
            b.addMetrics(MetricsData.newBuilder().setMetricName("service.query_rt_us")
                    .setMetricValue(MetricValue.newBuilder().setFloatValue(lastRtUs.getOrDefault(api, 0L)))
                    .addMetricTags(tag));
        });
        return b.build();
    }

    /**
     * Never touches the database itself (a black-holed one would hang the probe): the election loop's last attempt
     * says whether the database answered, its time whether the loop is alive (§3.15).
     */
    Message health(Call c) {
        return CheckHealthResponse.newBuilder().setIsLeader(leadership.isLeader()).setIsHealth(leadership.healthy())
                .setElectorLastLoopTimeMs(leadership.lastLoopMillis()).build();
    }

    /** Expiry in epoch µs of the lease as last read (meaningful on the leader); the leader every node last saw. */
    Message clusterInfo(Call c) {
        return GetManagerClusterInfoResponse.newBuilder().setInfoUpdatedTime(0)
                .setSelfLeaderExpirationTime(leadership.isLeader() ? leadership.leaseExpiresAtMs() * 1000 : 0)
                .setSelfNodeId(leadership.nodeId()).setLeaderNodeId(leadership.leaderNodeId()).build();
    }

    /** Not leader → 9; else step down, release the lease at once, no campaign for campaign_delay_time_ms. */
    Message demote(Call c) {
        if (!leadership.demote()) {
            throw new ApiException(409, null, NOT_LEADER_MESSAGE, ErrorCode.SERVER_NOT_LEADER);
        }
        return CommonResponse.getDefaultInstance();
    }

    Message electorConfig(Call c) {
        return GetLeaderElectorConfigResponse.newBuilder().setCampaignDelayTimeMs(leadership.campaignDelayMs()).build();
    }

    Message updateElectorConfig(Call c) {
        UpdateLeaderElectorConfigRequest q = c.q();
        leadership.campaignDelayMs(Inputs.range("campaign_delay_time_ms", q.getCampaignDelayTimeMs(), 0,
                Inputs.MAX_CAMPAIGN_DELAY_MS));
        return CommonResponse.getDefaultInstance();
    }

    Message updateLogger(Call c) {
        UpdateLoggerRequest q = c.q();
        Level level = switch (q.getLogLevel().toUpperCase(Locale.ROOT)) {
            case "DEBUG" -> Level.FINE;
            case "INFO" -> Level.INFO;
            case "WARN" -> Level.WARNING;
            case "ERROR" -> Level.SEVERE;
            default -> throw ApiException.invalid("log_level", "log_level must be DEBUG, INFO, WARN or ERROR, got '"
                    + Text.safe(q.getLogLevel()) + "'");
        };
        Logger.getLogger("dev.kvpool").setLevel(level);
        return CommonResponse.getDefaultInstance();
    }
}
