package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.model.PoolStatusModel;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Applies the desired objects of a pool and removes the ones a spec change made obsolete.
 *
 * <p>Production applies with server-side apply under the field manager {@value #FIELD_MANAGER}, forcing conflicts:
 * the operator owns the fields it sets, while fields others set (an HPA's replicas on another object, an admission
 * webhook's sidecar) stay theirs. The fabric8 mock server the tests run against rejects server-side apply, so tests
 * switch to create-or-replace ({@code kvpool.operator.server-side-apply=false}).
 *
 * <p>Pruning deletes only stateless kinds. A StatefulSet, a CloudNativePG Cluster or a Strimzi Kafka that is no longer
 * desired (managed engine switched to an existing one) holds data: it is kept and reported, never deleted here.
 */
final class Applier {
    static final String FIELD_MANAGER = "kvpool-operator";
    static final String MANAGED_BY = "app.kubernetes.io/managed-by=kvpool-operator";

    /** Stateless kinds the pool's model produces and pruning may delete, typed. */
    static final List<Class<? extends HasMetadata>> PRUNABLE = List.of(Deployment.class, DaemonSet.class,
            Service.class, PodDisruptionBudget.class, NetworkPolicy.class, ConfigMap.class);
    /** Stateless custom kinds (monitoring); absent CRDs are skipped. */
    static final List<ResourceDefinitionContext> PRUNABLE_CUSTOM = List.of(
            custom("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors"),
            custom("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules"));

    private final KubernetesClient client;
    private final boolean serverSideApply;

    Applier(KubernetesClient client, boolean serverSideApply) {
        this.client = client;
        this.serverSideApply = serverSideApply;
    }

    /** What applying left behind: the objects as the API server returned them, and the refusals. */
    record Result(List<HasMetadata> applied, List<PoolStatusModel.Problem> problems) {
    }

    Result apply(List<HasMetadata> desired) {
        List<HasMetadata> applied = new ArrayList<>();
        List<PoolStatusModel.Problem> problems = new ArrayList<>();
        for (HasMetadata d : desired) {
            try {
                applied.add(serverSideApply
                        ? client.resource(d).fieldManager(FIELD_MANAGER).forceConflicts().serverSideApply()
                        : createOrReplaceIfChanged(d));
            } catch (KubernetesClientException e) {
                problems.add(refusal(d, e));
            }
        }
        return new Result(applied, problems);
    }

    /**
     * The tests' stand-in for server-side apply: writes only when the object differs, like an apply that changes
     * nothing is a no-op on a real API server (otherwise every write would wake the informers and loop).
     */
    private HasMetadata createOrReplaceIfChanged(HasMetadata d) {
        HasMetadata existing = client.resource(d).get();
        if (existing == null) {
            return client.resource(d).createOr(NonDeletingOperation::update);
        }
        if (content(existing).equals(content(d))) {
            return existing;
        }
        return client.resource(d).update();
    }

    /** What the operator owns of an object: everything but the server's metadata and the status. */
    static JsonNode content(HasMetadata o) {
        ObjectNode n = Serialization.jsonMapper().valueToTree(o);
        n.remove("status");
        ObjectNode meta = (ObjectNode) n.path("metadata");
        meta.retain("name", "namespace", "labels", "annotations", "ownerReferences");
        return n;
    }

    static PoolStatusModel.Problem refusal(HasMetadata d, KubernetesClientException e) {
        String what = d.getKind() + " " + d.getMetadata().getName();
        if (e.getCode() == 404 && d instanceof GenericKubernetesResource) {
            // the custom resource's definition is not installed: CloudNativePG, Strimzi or the Prometheus operator
            return new PoolStatusModel.Problem("CustomResourceDefinitionMissing", what + ": the API server does not "
                    + "know " + d.getApiVersion() + " " + d.getKind() + " (install its operator, or turn the feature off)");
        }
        String msg = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage()
                : e.getMessage();
        return new PoolStatusModel.Problem("ApplyFailed", what + " refused (HTTP " + e.getCode() + "): " + msg);
    }

    /**
     * Deletes this pool's stateless objects that are no longer desired; returns the stateful ones kept for the
     * user to remove (names), so the status can say so.
     */
    List<String> prune(String namespace, String pool, List<HasMetadata> desired) {
        Set<String> keep = new HashSet<>();
        for (HasMetadata d : desired) {
            keep.add(key(d.getKind(), d.getMetadata().getName()));
        }
        String selector = MANAGED_BY + ",app.kubernetes.io/instance=" + pool;
        for (Class<? extends HasMetadata> kind : PRUNABLE) {
            for (HasMetadata o : client.resources(kind).inNamespace(namespace).withLabelSelector(selector).list()
                    .getItems()) {
                if (!keep.contains(key(o.getKind(), o.getMetadata().getName()))) {
                    client.resource(o).delete();
                }
            }
        }
        for (ResourceDefinitionContext ctx : PRUNABLE_CUSTOM) {
            try {
                for (GenericKubernetesResource o : client.genericKubernetesResources(ctx).inNamespace(namespace)
                        .withLabelSelector(selector).list().getItems()) {
                    if (!keep.contains(key(ctx.getKind(), o.getMetadata().getName()))) {
                        client.genericKubernetesResources(ctx).inNamespace(namespace)
                                .withName(o.getMetadata().getName()).delete();
                    }
                }
            } catch (KubernetesClientException e) {
                if (e.getCode() != 404) {
                    throw e;
                }
            }
        }
        List<String> kept = new ArrayList<>();
        for (HasMetadata o : client.apps().statefulSets().inNamespace(namespace).withLabelSelector(selector).list()
                .getItems()) {
            if (!keep.contains(key(o.getKind(), o.getMetadata().getName()))) {
                kept.add("StatefulSet " + o.getMetadata().getName());
            }
        }
        return kept;
    }

    private static String key(String kind, String name) {
        return kind + "/" + name;
    }

    private static ResourceDefinitionContext custom(String group, String version, String kind, String plural) {
        return new ResourceDefinitionContext.Builder().withGroup(group).withVersion(version).withKind(kind)
                .withPlural(plural).withNamespaced(true).build();
    }
}
