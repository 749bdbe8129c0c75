package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.controlplane.ControlPlaneApi;
import dev.kvpool.operator.controlplane.ControlPlanes;
import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolStatus;
import dev.kvpool.operator.crd.PoolSecrets;
import dev.kvpool.operator.model.ControlPlaneModel;
import dev.kvpool.operator.model.MetadataPlaneModel;
import dev.kvpool.operator.model.PoolModel;
import dev.kvpool.operator.model.PoolStatusModel;
import dev.kvpool.operator.model.ValkeyModel;
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
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
@RBACRule(apiGroups = "postgresql.cnpg.io", resources = "clusters",
        verbs = {"get", "list", "watch", "create", "update", "patch"})
@RBACRule(apiGroups = "kafka.strimzi.io", resources = {"kafkas", "kafkanodepools", "kafkatopics"},
        verbs = {"get", "list", "watch", "create", "update", "patch"})
public class KVPoolReconciler implements Reconciler<KVPool> {
    private static final Logger LOG = Logger.getLogger(KVPoolReconciler.class);
    /** The operator-role account the metadata planes and data agents log in to the control plane with. */
    public static final String SERVICES_USER = "kvpool-services";
    static final Duration RECHECK_WHILE_PROGRESSING = Duration.ofSeconds(30);
    static final Duration RECHECK_WHILE_READY = Duration.ofMinutes(5);

    private final KubernetesClient client;
    private final Applier applier;
    private final Credentials credentials;
    private final KubeEvents events;
    private final ControlPlanes controlPlanes;

    public KVPoolReconciler(KubernetesClient client, ControlPlanes controlPlanes,
                            @ConfigProperty(name = "kvpool.operator.server-side-apply", defaultValue = "true")
                            boolean serverSideApply) {
        this.client = client;
        this.applier = new Applier(client, serverSideApply);
        this.credentials = new Credentials(client);
        this.events = new KubeEvents(client);
        this.controlPlanes = controlPlanes;
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
        List<PoolStatusModel.Problem> invalid = PoolModel.of(pool).problems();
        if (!invalid.isEmpty()) {
            // refused before anything is applied: what runs keeps running as it was; the spec's fix wakes us again
            KVPoolStatus status = PoolStatusModel.status(pool, List.of(), invalid, Instant.now());
            announce(pool, status);
            pool.setStatus(status);
            return UpdateControl.patchStatus(pool).rescheduleAfter(RECHECK_WHILE_READY);
        }
        List<PoolStatusModel.Problem> problems = new ArrayList<>();
        credentials.ensure(pool, PoolSecrets.adminSecretName(pool.getMetadata().getName()),
                PoolSecrets.DEFAULT_ADMIN_USERNAME);
        Map<String, String> services = credentials.ensure(pool, MetadataPlaneModel.of(pool).accountSecretName(),
                SERVICES_USER);

        // generated passwords of managed engines: created once, never rewritten (the engine's data depends on them)
        PoolModel.of(pool).createOnce(ValkeyModel::newPassword).forEach(credentials::createIfAbsent);
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
        boolean controlPlaneUp = rollouts.stream().anyMatch(r -> ControlPlaneModel.COMPONENT.equals(r.component())
                && r.ready() > 0);
        if (controlPlaneUp) {
            PoolStatusModel.Problem p = ensureServicesAccount(pool, services);
            if (p != null) {
                problems.add(p);
            }
        }
        KVPoolStatus status = PoolStatusModel.status(pool, rollouts, problems, Instant.now());
        announce(pool, status);
        pool.setStatus(status);
        boolean ready = is(status, Condition.Type.Ready);
        return UpdateControl.patchStatus(pool)
                .rescheduleAfter(ready ? RECHECK_WHILE_READY : RECHECK_WHILE_PROGRESSING);
    }

    /**
     * The operator-role account the metadata planes and data agents log in with ({@value #SERVICES_USER}, password from
     * the generated Secret): created once the control plane answers, its password put back if it no longer matches
     * the Secret (a database restored from a backup, a change in the console). Returns the refusal, if any.
     */
    PoolStatusModel.Problem ensureServicesAccount(KVPool pool, Map<String, String> secret) {
        String path = "/api/v1/accounts/" + ControlPlaneApi.segment(SERVICES_USER);
        String password = secret.get(PoolSecrets.PASSWORD_KEY);
        try {
            ControlPlaneApi admin = controlPlanes.forPool(pool);
            ControlPlaneApi.Reply r = admin.get(path);
            if (r.status() == 404) {
                ControlPlaneApi.Reply c = admin.post("/api/v1/accounts", ControlPlaneApi.JSON.createObjectNode()
                        .put("name", SERVICES_USER).put("password", password).put("role", "operator"));
                return c.ok() ? null : new PoolStatusModel.Problem("ServicesAccountRefused", "creating account '"
                        + SERVICES_USER + "' in the control plane: HTTP " + c.status() + " " + c.detail());
            }
            if (!r.ok()) {
                return new PoolStatusModel.Problem("ServicesAccountRefused", "reading account '" + SERVICES_USER
                        + "': HTTP " + r.status() + " " + r.detail());
            }
            String role = r.body().path("role").asText("");
            if (!"operator".equals(role)) {
                // never demote or promote an account someone else made under this name
                return new PoolStatusModel.Problem("ServicesAccountConflict", "account '" + SERVICES_USER
                        + "' exists in the control plane with role '" + role + "', not operator: rename or delete it");
            }
            try {
                new ControlPlaneApi(controlPlanes.url(pool), SERVICES_USER, password, Duration.ofSeconds(10))
                        .get("/api/v1/services");
                return null;
            } catch (ControlPlaneApi.CredentialsRefused refused) {
                ControlPlaneApi.Reply u = admin.put(path, r.etag(), ControlPlaneApi.JSON.createObjectNode()
                        .put("password", password));
                return u.ok() ? null : new PoolStatusModel.Problem("ServicesAccountRefused", "resetting the password"
                        + " of '" + SERVICES_USER + "': HTTP " + u.status() + " " + u.detail());
            }
        } catch (ControlPlanes.MissingCredentials | IOException e) {
            return new PoolStatusModel.Problem("ControlPlaneUnavailable", "account '" + SERVICES_USER + "': "
                    + e.getMessage());
        }
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
