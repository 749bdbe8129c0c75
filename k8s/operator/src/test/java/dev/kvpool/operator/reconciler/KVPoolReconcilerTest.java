package dev.kvpool.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.DaemonSetStatusBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentStatusBuilder;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The KVPool reconciler against the fabric8 mock server in CRUD mode (no kube-apiserver can run here): it runs no
 * pods and no garbage collector, so the tests play the kubelet (Deployment status) and check owner references
 * instead of cascading deletes.
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true)
class KVPoolReconcilerTest {
    static final String NS = "kvpool-test";

    @Inject
    KubernetesClient client;

    static KVPool pool(String name, String version) {
        KVPool pool = new KVPool();
        pool.setMetadata(new ObjectMetaBuilder().withName(name).withNamespace(NS).build());
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = version;
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.postgres.secretRef = new SecretRef(name + "-db");
        pool.setSpec(spec);
        return pool;
    }

    @Test
    void appliesEveryObjectWithOwnerReferencesAndReportsStatus() {
        client.resource(pool("demo", "0.4.2")).create();

        Deployment d = await(() -> client.apps().deployments().inNamespace(NS).withName("demo-control-plane").get());
        assertEquals("ghcr.io/kvpool/kvpool-control-plane:0.4.2",
                d.getSpec().getTemplate().getSpec().getContainers().getFirst().getImage());
        assertEquals("demo", d.getMetadata().getOwnerReferences().getFirst().getName());
        assertTrue(d.getMetadata().getOwnerReferences().getFirst().getController());
        Service s = await(() -> client.services().inNamespace(NS).withName("demo-control-plane").get());
        assertEquals(2, s.getSpec().getPorts().size());
        Deployment mp = await(() -> client.apps().deployments().inNamespace(NS).withName("demo-metadata-plane").get());
        assertEquals(2, mp.getSpec().getReplicas());
        PodDisruptionBudget pdb = await(() -> client.policy().v1().podDisruptionBudget().inNamespace(NS)
                .withName("demo-metadata-plane").get());
        assertEquals("demo", pdb.getMetadata().getOwnerReferences().getFirst().getName());

        // credentials: generated once, kept without an owner reference (the database may outlive the resource)
        Secret admin = await(() -> client.secrets().inNamespace(NS).withName("demo-admin").get());
        assertTrue(admin.getMetadata().getOwnerReferences() == null || admin.getMetadata().getOwnerReferences().isEmpty());
        assertNotNull(await(() -> client.secrets().inNamespace(NS).withName("demo-metadata-plane-account").get()));

        KVPool reconciled = await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("demo").get();
            return p.getStatus() != null && p.getStatus().observedGeneration != null ? p : null;
        });
        assertEquals(reconciled.getMetadata().getGeneration(), reconciled.getStatus().observedGeneration);
        Condition ready = condition(reconciled, Condition.Type.Ready);
        assertEquals(Condition.Status.False, ready.status, "no pods run on the mock server");
        assertEquals(Condition.Status.True, condition(reconciled, Condition.Type.Progressing).status);
        assertNotNull(ready.lastTransitionTime);
        assertEquals("http://demo-control-plane.kvpool-test.svc:6492", reconciled.getStatus().endpoints.controlPlaneHttp);
        assertNull(reconciled.getStatus().versions.controlPlane, "nothing rolled out yet");
    }

    @Test
    void podsReadyButTheControlPlaneUnreachableIsDegradedAndScalingRollsAgain() {
        client.resource(pool("scale", "1.0.0")).create();
        Deployment cp = await(() -> client.apps().deployments().inNamespace(NS).withName("scale-control-plane").get());
        Deployment mp = await(() -> client.apps().deployments().inNamespace(NS).withName("scale-metadata-plane").get());
        String adminPassword = client.secrets().inNamespace(NS).withName("scale-admin").get().getData().get("password");

        DaemonSet agents = await(() -> client.apps().daemonSets().inNamespace(NS).withName("scale-data-agent").get());

        // play the kubelet: every replica of both Deployments and the agent on each node become ready; the informer
        // wakes the reconciler, which then creates the services' account in the control plane — whose Service has no
        // pods behind it here (ControlPlaneObjectReconcilersIT has the ready pool against a real control plane)
        markReady(cp);
        markReady(mp);
        markReady(agents);
        KVPool degraded = await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("scale").get();
            Condition c = p.getStatus() == null ? null : condition(p, Condition.Type.Degraded);
            return c != null && c.status == Condition.Status.True ? p : null;
        });
        assertEquals("ControlPlaneUnavailable", condition(degraded, Condition.Type.Degraded).reason);
        assertTrue(condition(degraded, Condition.Type.Degraded).message.contains("kvpool-services"));
        assertEquals(Condition.Status.False, condition(degraded, Condition.Type.Ready).status);
        assertEquals("1.0.0", degraded.getStatus().versions.controlPlane, "the pods themselves rolled out");
        assertEquals("1.0.0", degraded.getStatus().versions.metadataPlane);
        Event e = await(() -> events("scale").stream().filter(ev -> "ControlPlaneUnavailable".equals(ev.getReason()))
                .findFirst().orElse(null));
        assertEquals("Warning", e.getType());
        assertEquals("KVPool", e.getInvolvedObject().getKind());

        // scale the metadata plane: the Deployment follows, the pool is not ready until the new replica is
        client.resources(KVPool.class).inNamespace(NS).withName("scale").edit(p -> {
            p.getSpec().metadataPlane.replicas = 4;
            return p;
        });
        await(() -> {
            Deployment d = client.apps().deployments().inNamespace(NS).withName("scale-metadata-plane").get();
            return d.getSpec().getReplicas() == 4 ? d : null;
        });
        await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("scale").get();
            return condition(p, Condition.Type.Ready).status == Condition.Status.False
                    && condition(p, Condition.Type.Progressing).message != null
                    && condition(p, Condition.Type.Progressing).message.matches(".*Deployment scale-metadata-plane [0-4]/4 ready.*")
                    ? p : null;
        });
        assertEquals(adminPassword, client.secrets().inNamespace(NS).withName("scale-admin").get().getData()
                .get("password"), "a generated password is never rewritten");
    }

    @Test
    void anObjectNoLongerDesiredIsPrunedAndAStalledRolloutIsDegraded() {
        KVPool created = client.resource(pool("prune", "1.0.0")).create();
        Deployment cp = await(() -> client.apps().deployments().inNamespace(NS).withName("prune-control-plane").get());
        // a Deployment an older operator version created for this pool, which the model no longer has
        Deployment stray = new DeploymentBuilder(cp).withNewMetadata().withName("prune-obsolete").withNamespace(NS)
                .withLabels(cp.getMetadata().getLabels()).withOwnerReferences(cp.getMetadata().getOwnerReferences())
                .endMetadata().withStatus(null).build();
        client.resource(stray).create();
        await(() -> client.apps().deployments().inNamespace(NS).withName("prune-obsolete").get() == null ? "gone" : null);
        assertNotNull(client.apps().deployments().inNamespace(NS).withName("prune-control-plane").get());

        // the rollout passes its progress deadline: Degraded, with the Deployment's own words, and a Warning event
        cp = client.apps().deployments().inNamespace(NS).withName("prune-control-plane").get();
        cp.setStatus(new DeploymentStatusBuilder().withObservedGeneration(cp.getMetadata().getGeneration())
                .withReplicas(1).withUpdatedReplicas(1).withReadyReplicas(0)
                .addNewCondition().withType("Progressing").withStatus("False").withReason("ProgressDeadlineExceeded")
                .withMessage("ReplicaSet \"prune-control-plane-1\" has timed out progressing.").endCondition()
                .build());
        client.resource(cp).updateStatus();
        KVPool degraded = await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("prune").get();
            Condition c = p.getStatus() == null ? null : condition(p, Condition.Type.Degraded);
            return c != null && c.status == Condition.Status.True ? p : null;
        });
        assertEquals("RolloutStalled", condition(degraded, Condition.Type.Degraded).reason);
        assertTrue(condition(degraded, Condition.Type.Degraded).message.contains("timed out progressing"));
        Event w = await(() -> events("prune").stream().filter(ev -> "RolloutStalled".equals(ev.getReason()))
                .findFirst().orElse(null));
        assertEquals("Warning", w.getType());
        assertEquals(created.getMetadata().getUid(), w.getInvolvedObject().getUid());
    }

    @Test
    void severalControlPlaneReplicasWithoutPostgresAreRefusedThenRunWithABudget() {
        KVPool bad = pool("ha", "1.0.0");
        bad.getSpec().engines.postgres = null; // the mock server does not enforce the CRD's required field
        bad.getSpec().controlPlane.replicas = 3;
        KVPool created = client.resource(bad).create();
        KVPool degraded = await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("ha").get();
            Condition c = p.getStatus() == null ? null : condition(p, Condition.Type.Degraded);
            return c != null && c.status == Condition.Status.True ? p : null;
        });
        Condition c = condition(degraded, Condition.Type.Degraded);
        assertEquals("ControlPlaneReplicasInvalid", c.reason);
        assertTrue(c.message.contains("PostgreSQL"), c.message);
        assertEquals(Condition.Status.False, condition(degraded, Condition.Type.Ready).status);
        Event w = await(() -> events("ha").stream().filter(ev -> "ControlPlaneReplicasInvalid".equals(ev.getReason()))
                .findFirst().orElse(null));
        assertEquals("Warning", w.getType());
        assertEquals(created.getMetadata().getUid(), w.getInvolvedObject().getUid());
        assertNull(client.apps().deployments().inNamespace(NS).withName("ha-control-plane").get(),
                "nothing is applied for a refused spec");

        // with PostgreSQL the three replicas run, and a budget keeps one of them through drains
        client.resources(KVPool.class).inNamespace(NS).withName("ha").edit(p -> {
            p.getSpec().engines.postgres = new KVPoolSpec.Postgres();
            p.getSpec().engines.postgres.secretRef = new SecretRef("ha-db");
            return p;
        });
        Deployment cp = await(() -> client.apps().deployments().inNamespace(NS).withName("ha-control-plane").get());
        assertEquals(3, cp.getSpec().getReplicas());
        PodDisruptionBudget pdb = await(() -> client.policy().v1().podDisruptionBudget().inNamespace(NS)
                .withName("ha-control-plane").get());
        assertEquals(1, pdb.getSpec().getMinAvailable().getIntVal());
        assertEquals("ha", pdb.getMetadata().getOwnerReferences().getFirst().getName());
        await(() -> {
            Condition d = condition(client.resources(KVPool.class).inNamespace(NS).withName("ha").get(),
                    Condition.Type.Degraded);
            return d != null && !"ControlPlaneReplicasInvalid".equals(d.reason) ? d : null;
        });

        // back to one replica: the budget is pruned (minAvailable 1 of one pod would block every drain)
        client.resources(KVPool.class).inNamespace(NS).withName("ha").edit(p -> {
            p.getSpec().controlPlane.replicas = 1;
            return p;
        });
        await(() -> client.policy().v1().podDisruptionBudget().inNamespace(NS).withName("ha-control-plane").get() == null
                ? "pruned" : null);
        assertEquals(1, client.apps().deployments().inNamespace(NS).withName("ha-control-plane").get().getSpec()
                .getReplicas());
    }

    private void markReady(Deployment d) {
        Deployment now = client.apps().deployments().inNamespace(NS).withName(d.getMetadata().getName()).get();
        int n = now.getSpec().getReplicas();
        now.setStatus(new DeploymentStatusBuilder().withObservedGeneration(now.getMetadata().getGeneration())
                .withReplicas(n).withUpdatedReplicas(n).withReadyReplicas(n).withAvailableReplicas(n).build());
        client.resource(now).updateStatus();
    }

    private void markReady(DaemonSet d) {
        DaemonSet now = client.apps().daemonSets().inNamespace(NS).withName(d.getMetadata().getName()).get();
        now.setStatus(new DaemonSetStatusBuilder().withObservedGeneration(now.getMetadata().getGeneration())
                .withDesiredNumberScheduled(1).withCurrentNumberScheduled(1).withUpdatedNumberScheduled(1)
                .withNumberReady(1).withNumberAvailable(1).build());
        client.resource(now).updateStatus();
    }

    private List<Event> events(String pool) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> e.getInvolvedObject() != null && pool.equals(e.getInvolvedObject().getName())).toList();
    }

    static Condition condition(KVPool p, Condition.Type type) {
        if (p.getStatus() == null || p.getStatus().conditions == null) {
            return null;
        }
        return p.getStatus().conditions.stream().filter(c -> c.type == type).findFirst().orElse(null);
    }

    static <T> T await(Supplier<T> probe) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            T t = probe.get();
            if (t != null) {
                return t;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return fail("timed out");
    }
}
