package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolStatus;
import dev.kvpool.operator.model.ControlPlaneModel;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.quarkiverse.operatorsdk.annotations.RBACRule;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * First slice of the KVPool reconciler: applies the control plane's Deployment and Service from
 * {@link ControlPlaneModel} and reports Ready/Progressing. The metadata plane, data agents, managed engines and
 * the child resources (storages, groups, tenants) are not reconciled yet (k8s/README.md).
 */
@ControllerConfiguration(name = "kvpool")
@RBACRule(apiGroups = "apps", resources = "deployments",
        verbs = {"get", "list", "watch", "create", "update", "patch"})
@RBACRule(apiGroups = "", resources = "services", verbs = {"get", "list", "watch", "create", "update", "patch"})
public class KVPoolReconciler implements Reconciler<KVPool> {
    static final Duration RECHECK_WHILE_PROGRESSING = Duration.ofSeconds(10);

    private final KubernetesClient client;

    public KVPoolReconciler(KubernetesClient client) {
        this.client = client;
    }

    @Override
    public UpdateControl<KVPool> reconcile(KVPool pool, Context<KVPool> context) {
        ControlPlaneModel model = ControlPlaneModel.of(pool);
        Deployment applied = apply(model.deployment());
        apply(model.service());

        int want = applied.getSpec().getReplicas() == null ? 1 : applied.getSpec().getReplicas();
        Integer ready = applied.getStatus() == null ? null : applied.getStatus().getReadyReplicas();
        boolean isReady = ready != null && ready >= want;

        KVPoolStatus status = new KVPoolStatus();
        status.observedGeneration = pool.getMetadata().getGeneration();
        Condition.Status readyStatus = isReady ? Condition.Status.True : Condition.Status.False;
        String since = sinceOf(pool, Condition.Type.Ready, readyStatus);
        status.conditions = List.of(
                new Condition(Condition.Type.Ready, readyStatus, isReady ? "ControlPlaneReady" : "ControlPlaneStarting",
                        "control plane " + (ready == null ? 0 : ready) + "/" + want + " ready", since),
                new Condition(Condition.Type.Progressing, isReady ? Condition.Status.False : Condition.Status.True,
                        isReady ? "Reconciled" : "WaitingForControlPlane", null,
                        sinceOf(pool, Condition.Type.Progressing,
                                isReady ? Condition.Status.False : Condition.Status.True)));
        status.endpoints = new KVPoolStatus.Endpoints();
        String host = model.name() + "." + pool.getMetadata().getNamespace() + ".svc";
        status.endpoints.controlPlaneHttp = "http://" + host + ":" + ControlPlaneModel.HTTP_PORT;
        status.endpoints.controlPlaneGrpc = host + ":" + ControlPlaneModel.GRPC_PORT;
        status.versions = new KVPoolStatus.Versions();
        status.versions.controlPlane = pool.getSpec().version;
        pool.setStatus(status);
        UpdateControl<KVPool> control = UpdateControl.patchStatus(pool);
        return isReady ? control : control.rescheduleAfter(RECHECK_WHILE_PROGRESSING);
    }

    private <T extends HasMetadata> T apply(T desired) {
        return client.resource(desired).createOr(NonDeletingOperation::update);
    }

    /** Keeps lastTransitionTime while a condition's status does not change. */
    private static String sinceOf(KVPool pool, Condition.Type type, Condition.Status status) {
        if (pool.getStatus() != null && pool.getStatus().conditions != null) {
            for (Condition c : pool.getStatus().conditions) {
                if (c.type == type && c.status == status && c.lastTransitionTime != null) {
                    return c.lastTransitionTime;
                }
            }
        }
        return Instant.now().toString();
    }
}
