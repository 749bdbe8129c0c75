package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Secret;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Every Kubernetes object one {@link KVPool} needs, in the order they are applied (engines before the planes that
 * use them). The reconciler applies this list and the static manifests under {@code k8s/} are rendered from it, so
 * the operator and the manifests cannot disagree. Managed engines (CloudNativePG, Strimzi, Valkey) come first when
 * {@code spec.engines.*.managed} is set; their generated Secrets are in {@link #createOnce}. Pure: no client, no I/O.
 */
public final class PoolModel {
    private final KVPool pool;

    private PoolModel(KVPool pool) {
        this.pool = pool;
    }

    public static PoolModel of(KVPool pool) {
        return new PoolModel(pool);
    }

    public List<HasMetadata> desired() {
        List<HasMetadata> out = new ArrayList<>();
        EngineEndpoints engines = EngineEndpoints.of(pool);
        if (engines.managedPostgres()) {
            out.add(PostgresModel.of(pool).cluster());
        }
        if (engines.managedKafka()) {
            KafkaModel k = KafkaModel.of(pool);
            out.add(k.nodePool());
            out.add(k.kafka());
            out.addAll(k.topics());
        }
        if (engines.managedRedis()) {
            ValkeyModel v = ValkeyModel.of(pool);
            out.add(v.headlessService());
            out.add(v.service());
            out.add(v.statefulSet());
        }
        ControlPlaneModel cp = ControlPlaneModel.of(pool);
        out.add(cp.deployment());
        out.add(cp.service());
        if (cp.podDisruptionBudget() != null) {
            out.add(cp.podDisruptionBudget());
        }
        MetadataPlaneModel mp = MetadataPlaneModel.of(pool);
        out.add(mp.deployment());
        out.add(mp.service());
        out.add(mp.podDisruptionBudget());
        DataAgentModel agent = DataAgentModel.of(pool);
        if (agent.enabled()) {
            out.add(agent.daemonSet());
            out.add(agent.service());
        }
        NetworkPolicyModel network = NetworkPolicyModel.of(pool);
        if (network.enabled()) {
            out.addAll(network.policies());
        }
        MonitoringModel monitoring = MonitoringModel.of(pool);
        if (monitoring.serviceMonitorEnabled()) {
            out.add(monitoring.serviceMonitor());
        }
        if (monitoring.prometheusRuleEnabled()) {
            out.add(monitoring.prometheusRule());
        }
        if (monitoring.dashboardEnabled()) {
            out.add(monitoring.dashboardConfigMap());
        }
        return out;
    }

    /**
     * What makes this KVPool impossible to run as written, checked before anything is applied (the reconciler then
     * leaves the running objects as they are and reports the problems as Degraded with a Warning event).
     */
    public List<PoolStatusModel.Problem> problems() {
        List<PoolStatusModel.Problem> out = new ArrayList<>();
        String cp = ControlPlaneModel.of(pool).replicasProblem();
        if (cp != null) {
            out.add(new PoolStatusModel.Problem(CONTROL_PLANE_REPLICAS_INVALID, cp));
        }
        return out;
    }

    /** The Degraded reason of {@link ControlPlaneModel#replicasProblem()}. */
    public static final String CONTROL_PLANE_REPLICAS_INVALID = "ControlPlaneReplicasInvalid";

    /**
     * Objects that hold generated passwords: the reconciler creates each only while it is absent and never updates
     * it (a new password would lock the planes out of a running engine), before the objects of {@link #desired()}.
     * {@code passwords} makes one per Secret ({@link ValkeyModel#newPassword()} in production, fixed in tests).
     */
    public List<Secret> createOnce(Supplier<String> passwords) {
        List<Secret> out = new ArrayList<>();
        if (EngineEndpoints.of(pool).managedRedis()) {
            out.add(ValkeyModel.of(pool).secret(passwords.get()));
        }
        return out;
    }
}
