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
        return out;
    }
}
