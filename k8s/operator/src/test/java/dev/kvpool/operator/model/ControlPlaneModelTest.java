package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The desired control plane, without any Kubernetes. */
class ControlPlaneModelTest {

    static KVPool pool() {
        KVPool p = new KVPool();
        p.setMetadata(new ObjectMetaBuilder().withName("prod").withNamespace("llm").withUid("uid-1").build());
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = "0.4.2";
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.postgres.secretRef = new SecretRef("prod-db");
        p.setSpec(spec);
        return p;
    }

    @Test
    void deploymentIsNamedLabelledAndOwned() {
        Deployment d = ControlPlaneModel.of(pool()).deployment();
        assertEquals("prod-control-plane", d.getMetadata().getName());
        assertEquals("llm", d.getMetadata().getNamespace());
        assertEquals("prod", d.getMetadata().getLabels().get("app.kubernetes.io/instance"));
        assertEquals("control-plane", d.getMetadata().getLabels().get("app.kubernetes.io/component"));
        assertEquals("0.4.2", d.getMetadata().getLabels().get("app.kubernetes.io/version"));
        assertEquals("kvpool-operator", d.getMetadata().getLabels().get("app.kubernetes.io/managed-by"));
        OwnerReference o = d.getMetadata().getOwnerReferences().getFirst();
        assertEquals("kvpool.dev/v1alpha1", o.getApiVersion());
        assertEquals("KVPool", o.getKind());
        assertEquals("prod", o.getName());
        assertEquals("uid-1", o.getUid());
        assertTrue(o.getController());
        // the selector is a stable subset of the pod labels (no version: an upgrade must not orphan pods)
        Map<String, String> sel = d.getSpec().getSelector().getMatchLabels();
        assertNull(sel.get("app.kubernetes.io/version"));
        assertTrue(d.getSpec().getTemplate().getMetadata().getLabels().entrySet().containsAll(sel.entrySet()));
        assertEquals(1, d.getSpec().getReplicas());
    }

    @Test
    void containerRunsTheVersionedImageWithPortsProbesAndNonRoot() {
        Deployment d = ControlPlaneModel.of(pool()).deployment();
        Container c = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
        assertEquals("ghcr.io/kvpool/kvpool-control-plane:0.4.2", c.getImage());
        assertEquals(Map.of("http", 6492, "grpc", 6491), c.getPorts().stream()
                .collect(Collectors.toMap(p -> p.getName(), p -> p.getContainerPort())));
        assertEquals("/q/health/ready", c.getReadinessProbe().getHttpGet().getPath());
        assertEquals("/q/health/live", c.getLivenessProbe().getHttpGet().getPath());
        assertEquals("http", c.getLivenessProbe().getHttpGet().getPort().getStrVal());
        assertTrue(d.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot());
        assertTrue(c.getSecurityContext().getRunAsNonRoot());
        assertEquals(false, c.getSecurityContext().getAllowPrivilegeEscalation());
        assertEquals("ALL", c.getSecurityContext().getCapabilities().getDrop().getFirst());
    }

    @Test
    void databaseSettingsComeFromTheSecret() {
        Container c = ControlPlaneModel.of(pool()).deployment().getSpec().getTemplate().getSpec().getContainers()
                .getFirst();
        Map<String, EnvVar> env = c.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
        assertEquals("postgresql", env.get("QUARKUS_DATASOURCE_DB_KIND").getValue());
        for (var e : Map.of("QUARKUS_DATASOURCE_JDBC_URL", "url", "QUARKUS_DATASOURCE_USERNAME", "username",
                "QUARKUS_DATASOURCE_PASSWORD", "password").entrySet()) {
            EnvVar v = env.get(e.getKey());
            assertNull(v.getValue(), "no secret value inline: " + e.getKey());
            assertEquals("prod-db", v.getValueFrom().getSecretKeyRef().getName());
            assertEquals(e.getValue(), v.getValueFrom().getSecretKeyRef().getKey());
        }
    }

    @Test
    void readOnlyRootGetsWritableTmpAndDataDir() {
        Deployment d = ControlPlaneModel.of(pool()).deployment();
        Container c = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
        assertTrue(c.getSecurityContext().getReadOnlyRootFilesystem());
        assertWritableTmpAndDataDir(d);
    }

    /** Both emptyDirs are declared and mounted, and KVPOOL_DATA_DIR points at the data mount. */
    static void assertWritableTmpAndDataDir(Deployment d) {
        var pod = d.getSpec().getTemplate().getSpec();
        Map<String, Volume> volumes = pod.getVolumes().stream().collect(Collectors.toMap(Volume::getName, v -> v));
        Map<String, String> mounts = pod.getContainers().getFirst().getVolumeMounts().stream()
                .collect(Collectors.toMap(VolumeMount::getMountPath, VolumeMount::getName));
        String tmp = mounts.get("/tmp");
        assertNotNull(tmp, "/tmp is mounted");
        assertNotNull(volumes.get(tmp).getEmptyDir(), "/tmp is an emptyDir");
        Map<String, EnvVar> env = pod.getContainers().getFirst().getEnv().stream()
                .collect(Collectors.toMap(EnvVar::getName, e -> e));
        String dataDir = env.get("KVPOOL_DATA_DIR").getValue();
        String data = mounts.get(dataDir);
        assertNotNull(data, "KVPOOL_DATA_DIR " + dataDir + " is a mount");
        assertNotNull(volumes.get(data).getEmptyDir(), "the data dir is an emptyDir");
        assertNotEquals(tmp, data);
    }

    @Test
    void specOverridesImageReplicasAndResources() {
        KVPool p = pool();
        p.getSpec().image = "registry.local/kv";
        p.getSpec().controlPlane.replicas = 1;
        p.getSpec().controlPlane.resources = new ResourceRequirementsBuilder()
                .addToLimits("memory", new Quantity("1Gi")).build();
        Deployment d = ControlPlaneModel.of(p).deployment();
        Container c = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
        assertEquals("registry.local/kv/kvpool-control-plane:0.4.2", c.getImage());
        assertEquals(1, d.getSpec().getReplicas());
        assertEquals(new Quantity("1Gi"), c.getResources().getLimits().get("memory"));
    }

    @Test
    void serviceExposesBothPortsToTheDeploymentsPods() {
        ControlPlaneModel m = ControlPlaneModel.of(pool());
        Service s = m.service();
        assertEquals("prod-control-plane", s.getMetadata().getName());
        assertEquals("ClusterIP", s.getSpec().getType());
        assertEquals(m.deployment().getSpec().getSelector().getMatchLabels(), s.getSpec().getSelector());
        assertEquals(Map.of("http", 6492, "grpc", 6491), s.getSpec().getPorts().stream()
                .collect(Collectors.toMap(ServicePort::getName, ServicePort::getPort)));
        assertEquals("KVPool", s.getMetadata().getOwnerReferences().getFirst().getKind());
    }

    @Test
    void isDeterministic() {
        assertEquals(ControlPlaneModel.of(pool()).deployment(), ControlPlaneModel.of(pool()).deployment());
        assertEquals(ControlPlaneModel.of(pool()).service(), ControlPlaneModel.of(pool()).service());
    }

    @Test
    void managedPostgresTakesCloudNativePgsAppSecret() {
        KVPool p = pool();
        p.getSpec().engines.postgres.secretRef = null;
        p.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        Map<String, EnvVar> env = ControlPlaneModel.of(p).deployment().getSpec().getTemplate().getSpec()
                .getContainers().getFirst().getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
        assertEquals("postgresql", env.get("QUARKUS_DATASOURCE_DB_KIND").getValue());
        for (var e : Map.of("QUARKUS_DATASOURCE_JDBC_URL", "jdbc-uri", "QUARKUS_DATASOURCE_USERNAME", "username",
                "QUARKUS_DATASOURCE_PASSWORD", "password").entrySet()) {
            EnvVar v = env.get(e.getKey());
            assertNull(v.getValue(), "no secret value inline: " + e.getKey());
            assertEquals("prod-postgres-app", v.getValueFrom().getSecretKeyRef().getName());
            assertEquals(e.getValue(), v.getValueFrom().getSecretKeyRef().getKey());
        }
    }

    @Test
    void noPostgresNoDatabaseEnv() {
        KVPool p = pool();
        p.getSpec().engines.postgres = null;
        assertEquals(List.of("KVPOOL_DATA_DIR", "KVPOOL_ADMIN_PASSWORD", ControlPlaneModel.ADVERTISED_HOST_ENV),
                ControlPlaneModel.of(p).deployment().getSpec().getTemplate()
                .getSpec().getContainers().getFirst().getEnv().stream().map(EnvVar::getName).toList());
    }

    @Test
    void refusesAPoolWithoutNameOrVersion() {
        KVPool p = pool();
        p.getSpec().version = null;
        assertThrows(IllegalArgumentException.class, () -> ControlPlaneModel.of(p));
        KVPool q = pool();
        q.getMetadata().setName(null);
        assertThrows(IllegalArgumentException.class, () -> ControlPlaneModel.of(q));
    }

    @Test
    void oneReplicaByDefaultWithoutADisruptionBudget() {
        ControlPlaneModel m = ControlPlaneModel.of(pool());
        assertEquals(1, m.deployment().getSpec().getReplicas());
        assertNull(m.podDisruptionBudget(), "minAvailable 1 of one pod would block every node drain");
        assertNull(m.replicasProblem());
        assertTrue(PoolModel.of(pool()).problems().isEmpty());
        assertTrue(PoolModel.of(pool()).desired().stream().noneMatch(o -> o instanceof PodDisruptionBudget
                && o.getMetadata().getName().equals("prod-control-plane")));
    }

    @Test
    void severalReplicasOverPostgresGetABudgetAndSpreadAcrossNodes() {
        KVPool p = pool();
        p.getSpec().controlPlane.replicas = 3;
        ControlPlaneModel m = ControlPlaneModel.of(p);
        Deployment d = m.deployment();
        assertEquals(3, d.getSpec().getReplicas());
        PodDisruptionBudget pdb = m.podDisruptionBudget();
        assertEquals("prod-control-plane", pdb.getMetadata().getName());
        assertEquals(1, pdb.getSpec().getMinAvailable().getIntVal());
        assertNull(pdb.getSpec().getMaxUnavailable());
        assertEquals(m.selector(), pdb.getSpec().getSelector().getMatchLabels());
        assertTrue(d.getSpec().getTemplate().getMetadata().getLabels().entrySet()
                .containsAll(pdb.getSpec().getSelector().getMatchLabels().entrySet()), "the budget selects the pods");
        assertTrue(PoolModel.of(p).desired().contains(pdb));

        var terms = d.getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity()
                .getPreferredDuringSchedulingIgnoredDuringExecution();
        assertEquals(1, terms.size(), "preferred, not required: a one-node cluster still runs every replica");
        var required = d.getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity()
                .getRequiredDuringSchedulingIgnoredDuringExecution();
        assertTrue(required == null || required.isEmpty());
        assertEquals("kubernetes.io/hostname", terms.getFirst().getPodAffinityTerm().getTopologyKey());
        assertEquals(m.selector(), terms.getFirst().getPodAffinityTerm().getLabelSelector().getMatchLabels());

        Container c = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
        EnvVar host = c.getEnv().stream().filter(e -> e.getName().equals(ControlPlaneModel.ADVERTISED_HOST_ENV))
                .findFirst().orElseThrow();
        assertEquals("status.podIP", host.getValueFrom().getFieldRef().getFieldPath(), "each pod advertises its own IP");
        assertTrue(c.getEnv().stream().noneMatch(e -> e.getName().startsWith("KVCM_LEADER_ELECTOR_NODE_ID")),
                "the node id stays generated");
        // followers serve requests: readiness is the same probe whatever the replica count
        assertEquals("/q/health/ready", c.getReadinessProbe().getHttpGet().getPath());
        assertEquals(c.getReadinessProbe(), ControlPlaneModel.of(pool()).deployment().getSpec().getTemplate().getSpec()
                .getContainers().getFirst().getReadinessProbe());

        KVPool managed = pool();
        managed.getSpec().engines.postgres = new KVPoolSpec.Postgres();
        managed.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        managed.getSpec().controlPlane.replicas = KVPoolSpec.CONTROL_PLANE_MAX_REPLICAS;
        assertNull(ControlPlaneModel.of(managed).replicasProblem());
        assertEquals(KVPoolSpec.CONTROL_PLANE_MAX_REPLICAS, ControlPlaneModel.of(managed).deployment().getSpec().getReplicas());
    }

    @Test
    void severalReplicasWithoutPostgresAreRefused() {
        KVPool p = pool();
        p.getSpec().engines.postgres = null;
        p.getSpec().controlPlane.replicas = 2;
        String problem = ControlPlaneModel.of(p).replicasProblem();
        assertNotNull(problem);
        assertTrue(problem.contains("PostgreSQL") && problem.contains("spec.engines.postgres"), problem);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ControlPlaneModel.of(p).deployment());
        assertEquals(problem, e.getMessage());
        var problems = PoolModel.of(p).problems();
        assertEquals(1, problems.size());
        assertEquals(PoolModel.CONTROL_PLANE_REPLICAS_INVALID, problems.getFirst().reason());
        // one replica on H2 stays allowed (a trial pool)
        p.getSpec().controlPlane.replicas = 1;
        assertNull(ControlPlaneModel.of(p).replicasProblem());
    }

    @Test
    void replicasOutsideTheBoundAreRefused() {
        for (int n : new int[]{0, -1, KVPoolSpec.CONTROL_PLANE_MAX_REPLICAS + 1}) {
            KVPool p = pool();
            p.getSpec().controlPlane.replicas = n;
            assertNotNull(ControlPlaneModel.of(p).replicasProblem(), "replicas " + n);
            assertThrows(IllegalArgumentException.class, () -> ControlPlaneModel.of(p).deployment());
        }
    }
}
