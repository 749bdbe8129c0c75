package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.util.ArrayList;
import java.util.List;

/**
 * Every Kubernetes object one {@link KVPool} needs, in the order they are applied (engines before the planes that
 * use them). The reconciler applies this list and the static manifests under {@code k8s/} are rendered from it, so
 * the operator and the manifests cannot disagree. Pure: no client, no I/O.
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
        ControlPlaneModel cp = ControlPlaneModel.of(pool);
        out.add(cp.deployment());
        out.add(cp.service());
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
}
