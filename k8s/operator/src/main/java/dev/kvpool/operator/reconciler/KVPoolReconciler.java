package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolStatus;
import dev.kvpool.operator.model.MetadataPlaneModel;
import dev.kvpool.operator.model.PoolModel;
import dev.kvpool.operator.model.PoolStatusModel;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.ErrorStatusUpdateControl;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.Mappers;
import io.quarkiverse.operatorsdk.annotations.RBACRule;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Reconciles a {@link KVPool}: generates its credentials once, applies every object of {@link PoolModel} (server-side
 * apply in production), prunes what a spec change made obsolete, and reports Ready / Progressing / Degraded from the
 * workloads' own status ({@link PoolStatusModel}), with a Kubernetes Event on every transition.
 *
 * <p>The owned Deployments, StatefulSets and DaemonSets are watched (informers, mapped back through their owner
 * reference), so a pod becoming ready or a rollout stalling triggers a reconcile at once; the periodic recheck is
 * only a safety net. Deleting the KVPool deletes its objects through their owner references (Kubernetes' garbage
 * collector); the generated credential Secrets are kept on purpose ({@link Credentials}).
 */
@ControllerConfiguration(name = "kvpool")
@RBACRule(apiGroups = "apps", resources = {"deployments", "statefulsets", "daemonsets"},
        verbs = {"get", "list", "watch", "create", "update", "patch", "delete"})
@RBACRule(apiGroups = "", resources = {"services", "configmaps"},
        verbs = {"get", "list", "watch", "create", "update", "patch", "delete"})
@RBACRule(apiGroups = "", resources = "secrets", verbs = {"get", "list", "watch", "create"})
@RBACRule(apiGroups = "", resources = "events", verbs = {"create", "patch"})
@RBACRule(apiGroups = "policy", resources = "poddisruptionbudgets",
        verbs = {"get", "list", "watch", "create", "update", "patch", "delete"})
@RBACRule(apiGroups = "networking.k8s.io", resources = "networkpolicies",
        verbs = {"get", "list", "watch", "create", "update", "patch", "delete"})
@RBACRule(apiGroups = "monitoring.coreos.com", resources = {"servicemonitors", "prometheusrules"},
        verbs = {"get", "list", "watch", "create", "update", "patch", "delete"})
public class KVPoolReconciler implements Reconciler<KVPool> {
    private static final Logger LOG = Logger.getLogger(KVPoolReconciler.class);
    /** The control plane's bootstrap admin account, whose password the operator generates. */
    public static final String ADMIN_USER = "admin";
    public static final String ADMIN_SECRET_SUFFIX = "-admin";
    /** The operator-role account the metadata planes and data agents log in to the control plane with. */
    public static final String SERVICES_USER = "kvpool-services";
    static final Duration RECHECK_WHILE_PROGRESSING = Duration.ofSeconds(30);
    static final Duration RECHECK_WHILE_READY = Duration.ofMinutes(5);

    private final KubernetesClient client;
    private final Applier applier;
    private final Credentials credentials;
    private final KubeEvents events;

    public KVPoolReconciler(KubernetesClient client,
                            @ConfigProperty(name = "kvpool.operator.server-side-apply", defaultValue = "true")
                            boolean serverSideApply) {
        this.client = client;
        this.applier = new Applier(client, serverSideApply);
        this.credentials = new Credentials(client);
        this.events = new KubeEvents(client);
    }

    public static String adminSecretName(KVPool pool) {
        return pool.getMetadata().getName() + ADMIN_SECRET_SUFFIX;
    }

    @Override
    public List<EventSource<?, KVPool>> prepareEventSources(EventSourceContext<KVPool> context) {
        List<EventSource<?, KVPool>> sources = new ArrayList<>();
        sources.add(owned(Deployment.class, context));
        sources.add(owned(StatefulSet.class, context));
        sources.add(owned(DaemonSet.class, context));
        return sources;
    }

    private static <R extends HasMetadata> EventSource<R, KVPool> owned(Class<R> kind,
                                                                        EventSourceContext<KVPool> context) {
        return new InformerEventSource<>(InformerEventSourceConfiguration.from(kind, KVPool.class)
                .withName("owned-" + kind.getSimpleName().toLowerCase(java.util.Locale.ROOT))
                .withLabelSelector(Applier.MANAGED_BY)
                .withSecondaryToPrimaryMapper(Mappers.fromOwnerReferences(KVPool.class))
                .build(), context);
    }

    @Override
    public UpdateControl<KVPool> reconcile(KVPool pool, Context<KVPool> context) {
        String ns = pool.getMetadata().getNamespace();
        List<PoolStatusModel.Problem> problems = new ArrayList<>();
        credentials.ensure(pool, adminSecretName(pool), ADMIN_USER);
        credentials.ensure(pool, MetadataPlaneModel.of(pool).accountSecretName(), SERVICES_USER);

        List<HasMetadata> desired = PoolModel.of(pool).desired();
        Applier.Result applied = applier.apply(desired);
        problems.addAll(applied.problems());
        if (applied.problems().isEmpty()) {
            // prune only after a complete apply: a half-applied spec must not delete what still serves traffic
            List<String> kept = applier.prune(ns, pool.getMetadata().getName(), desired);
            if (!kept.isEmpty()) {
                LOG.infof("KVPool %s/%s: kept %s (stateful, no longer desired; delete by hand)", ns,
                        pool.getMetadata().getName(), kept);
            }
        }
        List<PoolStatusModel.Rollout> rollouts = applied.applied().stream().map(PoolStatusModel::rollout)
                .filter(Objects::nonNull).toList();
        KVPoolStatus status = PoolStatusModel.status(pool, rollouts, problems, Instant.now());
        announce(pool, status);
        pool.setStatus(status);
        boolean ready = is(status, Condition.Type.Ready);
        return UpdateControl.patchStatus(pool)
                .rescheduleAfter(ready ? RECHECK_WHILE_READY : RECHECK_WHILE_PROGRESSING);
    }

    @Override
    public ErrorStatusUpdateControl<KVPool> updateErrorStatus(KVPool pool, Context<KVPool> context, Exception e) {
        // an unexpected failure (API server unreachable, a bug): Degraded with the reason, retried by JOSDK's backoff
        String msg = e.getClass().getSimpleName() + ": " + e.getMessage();
        KVPoolStatus status = PoolStatusModel.status(pool, List.of(),
                List.of(new PoolStatusModel.Problem("ReconcileError", msg)), Instant.now());
        announce(pool, status);
        pool.setStatus(status);
        return ErrorStatusUpdateControl.patchStatus(pool);
    }

    /** One Event per transition of Ready or Degraded, not one per reconcile. */
    private void announce(KVPool pool, KVPoolStatus next) {
        Condition readyNow = find(next, Condition.Type.Ready), degradedNow = find(next, Condition.Type.Degraded);
        Condition readyWas = find(pool.getStatus(), Condition.Type.Ready);
        Condition degradedWas = find(pool.getStatus(), Condition.Type.Degraded);
        if (degradedNow != null && degradedNow.status == Condition.Status.True
                && (degradedWas == null || degradedWas.status != Condition.Status.True
                    || !Objects.equals(degradedWas.message, degradedNow.message))) {
            events.warning(pool, degradedNow.reason, degradedNow.message);
        }
        if (readyNow != null && readyNow.status == Condition.Status.True
                && (readyWas == null || readyWas.status != Condition.Status.True)) {
            events.normal(pool, "Ready", readyNow.message);
        }
    }

    private static boolean is(KVPoolStatus s, Condition.Type type) {
        Condition c = find(s, type);
        return c != null && c.status == Condition.Status.True;
    }

    private static Condition find(KVPoolStatus s, Condition.Type type) {
        if (s == null || s.conditions == null) {
            return null;
        }
        return s.conditions.stream().filter(c -> c.type == type).findFirst().orElse(null);
    }
}
