package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.KVPoolStatus;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.DaemonSetStatusBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentConditionBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentStatusBuilder;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PoolStatusModelTest {
    static final Instant T0 = Instant.parse("2026-11-27T10:00:00Z");

    static KVPool pool(String version) {
        KVPool p = new KVPool();
        p.setMetadata(new ObjectMetaBuilder().withName("demo").withNamespace("ns").withGeneration(3L).build());
        KVPoolSpec s = new KVPoolSpec();
        s.version = version;
        s.engines = new KVPoolSpec.Engines();
        s.engines.postgres = new KVPoolSpec.Postgres();
        s.engines.postgres.secretRef = new SecretRef("db");
        p.setSpec(s);
        return p;
    }

    /** A Deployment of the model, as the API server would report it with {@code ready} pods of the current spec. */
    static Deployment deployment(KVPool pool, Deployment d, int ready, boolean stalled) {
        d.getMetadata().setGeneration(5L);
        var st = new DeploymentStatusBuilder().withObservedGeneration(5L).withReplicas(d.getSpec().getReplicas())
                .withUpdatedReplicas(d.getSpec().getReplicas()).withReadyReplicas(ready);
        if (stalled) {
            st.addToConditions(new DeploymentConditionBuilder().withType("Progressing").withStatus("False")
                    .withReason("ProgressDeadlineExceeded").withMessage("ReplicaSet demo-x has timed out progressing.")
                    .build());
        }
        d.setStatus(st.build());
        return d;
    }

    static Condition cond(KVPoolStatus s, Condition.Type t) {
        return s.conditions.stream().filter(c -> c.type == t).findFirst().orElseThrow();
    }

    @Test
    void everyWorkloadRolledOutIsReadyAndMovesTheVersions() {
        KVPool p = pool("1.2.0");
        var cp = deployment(p, ControlPlaneModel.of(p).deployment(), 1, false);
        var mp = deployment(p, MetadataPlaneModel.of(p).deployment(), 2, false);
        KVPoolStatus s = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(cp), PoolStatusModel.rollout(mp)),
                List.of(), T0);
        assertEquals(Condition.Status.True, cond(s, Condition.Type.Ready).status);
        assertEquals(Condition.Status.False, cond(s, Condition.Type.Progressing).status);
        assertEquals(Condition.Status.False, cond(s, Condition.Type.Degraded).status);
        assertEquals("1.2.0", s.versions.controlPlane);
        assertEquals("1.2.0", s.versions.metadataPlane);
        assertNull(s.versions.dataAgent);
        assertEquals(3L, s.observedGeneration);
        assertEquals("http://demo-metadata-plane.ns.svc:6382", s.endpoints.metadataPlane);
        assertEquals("http://demo-control-plane.ns.svc:6492/", s.endpoints.console);
    }

    @Test
    void aRollingUpgradeKeepsTheRunningVersionAndIsProgressing() {
        KVPool p = pool("1.3.0");
        KVPoolStatus before = new KVPoolStatus();
        before.versions = new KVPoolStatus.Versions();
        before.versions.controlPlane = "1.2.0";
        before.versions.metadataPlane = "1.2.0";
        p.setStatus(before);
        var cp = deployment(p, ControlPlaneModel.of(p).deployment(), 1, false);
        var mp = MetadataPlaneModel.of(p).deployment();
        mp.getMetadata().setGeneration(6L);
        mp.setStatus(new DeploymentStatusBuilder().withObservedGeneration(6L).withReplicas(3).withUpdatedReplicas(1)
                .withReadyReplicas(2).build()); // surge: one new pod, two old
        KVPoolStatus s = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(cp), PoolStatusModel.rollout(mp)),
                List.of(), T0);
        assertEquals(Condition.Status.False, cond(s, Condition.Type.Ready).status);
        assertEquals("ComponentsNotReady", cond(s, Condition.Type.Ready).reason);
        assertEquals(Condition.Status.True, cond(s, Condition.Type.Progressing).status);
        assertTrue(cond(s, Condition.Type.Progressing).message.contains("Deployment demo-metadata-plane 2/2 ready, rolling out"),
                cond(s, Condition.Type.Progressing).message);
        assertEquals("1.3.0", s.versions.controlPlane);
        assertEquals("1.2.0", s.versions.metadataPlane, "old pods still serve: the version has not moved");
    }

    @Test
    void aStalledRolloutIsDegradedWithTheDeploymentsMessage() {
        KVPool p = pool("1.2.0");
        var mp = deployment(p, MetadataPlaneModel.of(p).deployment(), 0, true);
        KVPoolStatus s = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(mp)), List.of(), T0);
        Condition d = cond(s, Condition.Type.Degraded);
        assertEquals(Condition.Status.True, d.status);
        assertEquals("RolloutStalled", d.reason);
        assertTrue(d.message.contains("timed out progressing"), d.message);
        assertEquals(Condition.Status.False, cond(s, Condition.Type.Progressing).status,
                "a stalled rollout is not progressing");
    }

    @Test
    void aRefusalIsDegradedAndNotReadyEvenWithEveryPodUp() {
        KVPool p = pool("1.2.0");
        var cp = deployment(p, ControlPlaneModel.of(p).deployment(), 1, false);
        var problem = new PoolStatusModel.Problem("CustomResourceDefinitionMissing",
                "ServiceMonitor demo: the API server does not know monitoring.coreos.com/v1 ServiceMonitor");
        KVPoolStatus s = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(cp)), List.of(problem), T0);
        assertEquals(Condition.Status.False, cond(s, Condition.Type.Ready).status);
        assertEquals("CustomResourceDefinitionMissing", cond(s, Condition.Type.Ready).reason);
        assertEquals("CustomResourceDefinitionMissing", cond(s, Condition.Type.Degraded).reason);
        assertTrue(cond(s, Condition.Type.Degraded).message.contains("ServiceMonitor demo"));
    }

    @Test
    void lastTransitionTimeStaysWhileTheStatusStays() {
        KVPool p = pool("1.2.0");
        var cp = deployment(p, ControlPlaneModel.of(p).deployment(), 1, false);
        KVPoolStatus first = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(cp)), List.of(), T0);
        p.setStatus(first);
        KVPoolStatus second = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(cp)), List.of(),
                T0.plusSeconds(600));
        assertEquals(T0.toString(), cond(second, Condition.Type.Ready).lastTransitionTime);
        p.setStatus(second);
        var down = deployment(p, ControlPlaneModel.of(p).deployment(), 0, false);
        KVPoolStatus third = PoolStatusModel.status(p, List.of(PoolStatusModel.rollout(down)), List.of(),
                T0.plusSeconds(900));
        assertEquals(T0.plusSeconds(900).toString(), cond(third, Condition.Type.Ready).lastTransitionTime);
    }

    @Test
    void aDaemonSetOnNoMatchingNodeIsReadyAndOneWithUnreadyAgentsIsNot() {
        DaemonSet ds = new DaemonSet();
        ds.setMetadata(new ObjectMetaBuilder().withName("demo-data-agent").withGeneration(1L)
                .withLabels(Map.of("app.kubernetes.io/component", "data-agent")).build());
        ds.setStatus(new DaemonSetStatusBuilder().withObservedGeneration(1L).withDesiredNumberScheduled(0)
                .withNumberReady(0).withUpdatedNumberScheduled(0).build());
        assertTrue(PoolStatusModel.rollout(ds).done());
        ds.setStatus(new DaemonSetStatusBuilder().withObservedGeneration(1L).withDesiredNumberScheduled(4)
                .withNumberReady(3).withUpdatedNumberScheduled(4).build());
        var r = PoolStatusModel.rollout(ds);
        assertFalse(r.done());
        assertEquals("data-agent", r.component());
    }

    @Test
    void engineCustomResourcesAreReadyByTheirReadyCondition() {
        GenericKubernetesResource kafka = new GenericKubernetesResourceBuilder().withApiVersion("kafka.strimzi.io/v1beta2")
                .withKind("Kafka").withNewMetadata().withName("demo-kafka").endMetadata().build();
        assertFalse(PoolStatusModel.rollout(kafka).done());
        kafka.setAdditionalProperty("status", Map.of("conditions",
                List.of(Map.of("type", "Ready", "status", "True"))));
        assertTrue(PoolStatusModel.rollout(kafka).done());
        GenericKubernetesResource monitor = new GenericKubernetesResourceBuilder()
                .withApiVersion("monitoring.coreos.com/v1").withKind("ServiceMonitor")
                .withNewMetadata().withName("demo").endMetadata().build();
        assertNull(PoolStatusModel.rollout(monitor), "monitoring objects have no rollout to wait for");
    }
}
