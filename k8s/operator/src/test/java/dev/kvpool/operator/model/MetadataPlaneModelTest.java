package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.SecretKeyRef;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.WeightedPodAffinityTerm;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The desired metadata plane, without any Kubernetes. */
class MetadataPlaneModelTest {

    static KVPool pool() {
        KVPool p = ControlPlaneModelTest.pool();
        p.getSpec().engines.redis = new KVPoolSpec.Redis();
        p.getSpec().engines.redis.urlSecretRef = new SecretKeyRef("prod-redis", "redis-url");
        return p;
    }

    static Container container(Deployment d) {
        return d.getSpec().getTemplate().getSpec().getContainers().getFirst();
    }

    static Map<String, EnvVar> env(Deployment d) {
        return container(d).getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    }

    @Test
    void deploymentIsNamedLabelledOwnedWithTwoReplicasByDefault() {
        Deployment d = MetadataPlaneModel.of(pool()).deployment();
        assertEquals("prod-metadata-plane", d.getMetadata().getName());
        assertEquals("llm", d.getMetadata().getNamespace());
        Map<String, String> labels = d.getMetadata().getLabels();
        assertEquals("kvpool-metadata-plane", labels.get("app.kubernetes.io/name"));
        assertEquals("prod", labels.get("app.kubernetes.io/instance"));
        assertEquals("metadata-plane", labels.get("app.kubernetes.io/component"));
        assertEquals("0.4.2", labels.get("app.kubernetes.io/version"));
        assertEquals("kvpool-operator", labels.get("app.kubernetes.io/managed-by"));
        assertEquals("kvpool", labels.get("app.kubernetes.io/part-of"));
        OwnerReference o = d.getMetadata().getOwnerReferences().getFirst();
        assertEquals("kvpool.dev/v1alpha1", o.getApiVersion());
        assertEquals("KVPool", o.getKind());
        assertEquals("prod", o.getName());
        assertEquals("uid-1", o.getUid());
        assertTrue(o.getController());
        Map<String, String> sel = d.getSpec().getSelector().getMatchLabels();
        assertNull(sel.get("app.kubernetes.io/version"));
        assertTrue(d.getSpec().getTemplate().getMetadata().getLabels().entrySet().containsAll(sel.entrySet()));
        // the control plane's pods are never selected
        assertFalse(sel.entrySet().containsAll(ControlPlaneModel.of(pool()).selector().entrySet()));
        assertEquals(2, d.getSpec().getReplicas());
        KVPool noBlock = pool();
        noBlock.getSpec().metadataPlane = null;
        assertEquals(2, MetadataPlaneModel.of(noBlock).deployment().getSpec().getReplicas());
    }

    @Test
    void containerRunsTheVersionedImageWithPortsAndProbes() {
        Container c = container(MetadataPlaneModel.of(pool()).deployment());
        assertEquals("ghcr.io/kvpool/kvpool-metadata-plane:0.4.2", c.getImage());
        assertEquals(Map.of("http", 6382, "grpc", 6381), c.getPorts().stream()
                .collect(Collectors.toMap(p -> p.getName(), p -> p.getContainerPort())));
        assertEquals("/q/health/started", c.getStartupProbe().getHttpGet().getPath());
        assertEquals("http", c.getStartupProbe().getHttpGet().getPort().getStrVal());
        // a large index loads for minutes: the startup probe allows far more than liveness would
        int startupSeconds = c.getStartupProbe().getPeriodSeconds() * c.getStartupProbe().getFailureThreshold();
        assertTrue(startupSeconds >= 15 * 60, "startup window " + startupSeconds + " s");
        assertEquals("/q/health/ready", c.getReadinessProbe().getHttpGet().getPath());
        assertEquals("/q/health/live", c.getLivenessProbe().getHttpGet().getPath());
        assertEquals("http", c.getLivenessProbe().getHttpGet().getPort().getStrVal());
    }

    @Test
    void runsNonRootOnAReadOnlyRootWithWritableVolumes() {
        Deployment d = MetadataPlaneModel.of(pool()).deployment();
        var pod = d.getSpec().getTemplate().getSpec();
        assertTrue(pod.getSecurityContext().getRunAsNonRoot());
        assertEquals(185L, pod.getSecurityContext().getRunAsUser());
        assertEquals("RuntimeDefault", pod.getSecurityContext().getSeccompProfile().getType());
        Container c = container(d);
        assertTrue(c.getSecurityContext().getRunAsNonRoot());
        assertEquals(false, c.getSecurityContext().getAllowPrivilegeEscalation());
        assertTrue(c.getSecurityContext().getReadOnlyRootFilesystem());
        assertEquals("ALL", c.getSecurityContext().getCapabilities().getDrop().getFirst());
        ControlPlaneModelTest.assertWritableTmpAndDataDir(d);
        // the same pod hardening as the control plane
        var cp = ControlPlaneModel.of(pool()).deployment().getSpec().getTemplate().getSpec();
        assertEquals(cp.getSecurityContext(), pod.getSecurityContext());
        assertEquals(cp.getContainers().getFirst().getSecurityContext(), c.getSecurityContext());
        assertEquals(cp.getVolumes(), pod.getVolumes());
    }

    @Test
    void sharesTheIndexInRedisFromTheSecret() {
        Map<String, EnvVar> env = env(MetadataPlaneModel.of(pool()).deployment());
        assertEquals("redis", env.get("KVPOOL_META_STORE").getValue());
        EnvVar url = env.get("KVPOOL_REDIS_URL");
        assertNull(url.getValue(), "no Redis URL inline");
        assertEquals("prod-redis", url.getValueFrom().getSecretKeyRef().getName());
        assertEquals("redis-url", url.getValueFrom().getSecretKeyRef().getKey());
    }

    @Test
    void takesItsConfigurationFromTheControlPlaneService() {
        MetadataPlaneModel m = MetadataPlaneModel.of(pool());
        Map<String, EnvVar> env = env(m.deployment());
        assertEquals("http://prod-control-plane:6492", env.get("KVPOOL_CONTROL_PLANE_URL").getValue());
        assertEquals("http://" + ControlPlaneModel.of(pool()).name() + ":" + ControlPlaneModel.HTTP_PORT,
                env.get("KVPOOL_CONTROL_PLANE_URL").getValue());
        for (var e : Map.of("KVPOOL_CONTROL_PLANE_USER", "username", "KVPOOL_CONTROL_PLANE_PASSWORD", "password")
                .entrySet()) {
            EnvVar v = env.get(e.getKey());
            assertNull(v.getValue(), "no credential inline: " + e.getKey());
            assertEquals("prod-metadata-plane-account", v.getValueFrom().getSecretKeyRef().getName());
            assertEquals(e.getValue(), v.getValueFrom().getSecretKeyRef().getKey());
        }
    }

    @Test
    void kafkaBootstrapWhenGiven() {
        assertNull(env(MetadataPlaneModel.of(pool()).deployment()).get("KVPOOL_KAFKA_BOOTSTRAP"));
        KVPool p = pool();
        p.getSpec().engines.kafka = new KVPoolSpec.Kafka();
        p.getSpec().engines.kafka.bootstrap = "kafka:9092";
        assertEquals("kafka:9092", env(MetadataPlaneModel.of(p).deployment()).get("KVPOOL_KAFKA_BOOTSTRAP").getValue());
    }

    @Test
    void managedRedisTakesTheUrlFromTheValkeySecret() {
        KVPool p = pool();
        p.getSpec().engines.redis.urlSecretRef = null;
        p.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        Map<String, EnvVar> env = env(MetadataPlaneModel.of(p).deployment());
        EnvVar url = env.get("KVPOOL_REDIS_URL");
        assertNull(url.getValue(), "no Redis URL inline");
        assertEquals("prod-valkey", url.getValueFrom().getSecretKeyRef().getName());
        assertEquals("url", url.getValueFrom().getSecretKeyRef().getKey());
        assertEquals("redis", env.get("KVPOOL_META_STORE").getValue());
    }

    @Test
    void prefersReplicasOnDifferentNodes() {
        MetadataPlaneModel m = MetadataPlaneModel.of(pool());
        var affinity = m.deployment().getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity();
        assertTrue(affinity.getRequiredDuringSchedulingIgnoredDuringExecution().isEmpty(),
                "preferred only: a one-node cluster still runs every replica");
        WeightedPodAffinityTerm t = affinity.getPreferredDuringSchedulingIgnoredDuringExecution().getFirst();
        assertEquals("kubernetes.io/hostname", t.getPodAffinityTerm().getTopologyKey());
        assertEquals(m.selector(), t.getPodAffinityTerm().getLabelSelector().getMatchLabels());
    }

    @Test
    void specOverridesImageReplicasAndResources() {
        KVPool p = pool();
        p.getSpec().image = "registry.local/kv";
        p.getSpec().metadataPlane.replicas = 5;
        p.getSpec().metadataPlane.resources = new ResourceRequirementsBuilder()
                .addToLimits("memory", new Quantity("8Gi")).build();
        Deployment d = MetadataPlaneModel.of(p).deployment();
        assertEquals("registry.local/kv/kvpool-metadata-plane:0.4.2", container(d).getImage());
        assertEquals(5, d.getSpec().getReplicas());
        assertEquals(new Quantity("8Gi"), container(d).getResources().getLimits().get("memory"));
    }

    @Test
    void serviceExposesBothPortsToTheDeploymentsPods() {
        MetadataPlaneModel m = MetadataPlaneModel.of(pool());
        Service s = m.service();
        assertEquals("prod-metadata-plane", s.getMetadata().getName());
        assertEquals("llm", s.getMetadata().getNamespace());
        assertEquals("ClusterIP", s.getSpec().getType());
        assertEquals(m.deployment().getSpec().getSelector().getMatchLabels(), s.getSpec().getSelector());
        assertEquals(Map.of("http", 6382, "grpc", 6381), s.getSpec().getPorts().stream()
                .collect(Collectors.toMap(ServicePort::getName, ServicePort::getPort)));
        assertEquals(Map.of("http", "http", "grpc", "grpc"), s.getSpec().getPorts().stream()
                .collect(Collectors.toMap(ServicePort::getName, sp -> sp.getTargetPort().getStrVal())));
        assertEquals("KVPool", s.getMetadata().getOwnerReferences().getFirst().getKind());
    }

    @Test
    void disruptionBudgetLetsOneReplicaGoAtATime() {
        MetadataPlaneModel m = MetadataPlaneModel.of(pool());
        PodDisruptionBudget pdb = m.podDisruptionBudget();
        assertEquals("policy/v1", pdb.getApiVersion());
        assertEquals("prod-metadata-plane", pdb.getMetadata().getName());
        assertEquals("llm", pdb.getMetadata().getNamespace());
        assertEquals(1, pdb.getSpec().getMaxUnavailable().getIntVal());
        assertNull(pdb.getSpec().getMinAvailable());
        assertEquals(m.deployment().getSpec().getSelector().getMatchLabels(), pdb.getSpec().getSelector().getMatchLabels());
        assertEquals(m.labels(), pdb.getMetadata().getLabels());
        assertEquals("prod", pdb.getMetadata().getOwnerReferences().getFirst().getName());
    }

    @Test
    void isDeterministic() {
        assertEquals(MetadataPlaneModel.of(pool()).deployment(), MetadataPlaneModel.of(pool()).deployment());
        assertEquals(MetadataPlaneModel.of(pool()).service(), MetadataPlaneModel.of(pool()).service());
        assertEquals(MetadataPlaneModel.of(pool()).podDisruptionBudget(),
                MetadataPlaneModel.of(pool()).podDisruptionBudget());
    }

    @Test
    void refusesAPoolWithoutNameOrVersion() {
        KVPool p = pool();
        p.getSpec().version = null;
        assertThrows(IllegalArgumentException.class, () -> MetadataPlaneModel.of(p));
        KVPool q = pool();
        q.getMetadata().setName(null);
        assertThrows(IllegalArgumentException.class, () -> MetadataPlaneModel.of(q));
    }
}
