package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TolerationBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The desired data agents, without any Kubernetes. */
class DataAgentModelTest {

    static KVPool pool() {
        KVPool p = MetadataPlaneModelTest.pool();
        p.getSpec().dataAgent = new KVPoolSpec.DataAgent();
        return p;
    }

    static PodSpec podSpec(DaemonSet d) {
        return d.getSpec().getTemplate().getSpec();
    }

    static Container container(DaemonSet d) {
        return podSpec(d).getContainers().getFirst();
    }

    static Map<String, EnvVar> env(DaemonSet d) {
        return container(d).getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    }

    static Map<String, Volume> volumes(DaemonSet d) {
        return podSpec(d).getVolumes().stream().collect(Collectors.toMap(Volume::getName, v -> v));
    }

    static Map<String, String> mounts(Container c) {
        return c.getVolumeMounts().stream().collect(Collectors.toMap(VolumeMount::getName, VolumeMount::getMountPath));
    }

    static DaemonSet ds(KVPool p) {
        return DataAgentModel.of(p).daemonSet();
    }

    @Test
    void daemonSetIsNamedLabelledOwnedAndRunsTheVersionedImage() {
        DaemonSet d = ds(pool());
        assertEquals("prod-data-agent", d.getMetadata().getName());
        assertEquals("llm", d.getMetadata().getNamespace());
        assertEquals("data-agent", d.getMetadata().getLabels().get("app.kubernetes.io/component"));
        assertEquals("KVPool", d.getMetadata().getOwnerReferences().getFirst().getKind());
        assertTrue(d.getMetadata().getOwnerReferences().getFirst().getController());
        Map<String, String> sel = d.getSpec().getSelector().getMatchLabels();
        assertNull(sel.get("app.kubernetes.io/version"));
        assertTrue(d.getSpec().getTemplate().getMetadata().getLabels().entrySet().containsAll(sel.entrySet()));
        assertFalse(sel.entrySet().containsAll(MetadataPlaneModel.of(pool()).selector().entrySet()));
        assertEquals("ghcr.io/kvpool/kvpool-data-agent:0.4.2", container(d).getImage());
        assertEquals(Map.of("api", 6390, "metrics", 6389), container(d).getPorts().stream()
                .collect(Collectors.toMap(p -> p.getName(), p -> p.getContainerPort())));
        assertEquals("RollingUpdate", d.getSpec().getUpdateStrategy().getType());
        // no dataAgent block at all: the same agent with defaults
        KVPool none = pool();
        none.getSpec().dataAgent = null;
        assertEquals(d, ds(none));
    }

    @Test
    void probesAskTheAgentsStatusOnItsApiPort() {
        Container c = container(ds(pool()));
        for (var probe : List.of(c.getStartupProbe(), c.getReadinessProbe(), c.getLivenessProbe())) {
            assertEquals("/v1/status", probe.getHttpGet().getPath());
            assertEquals("api", probe.getHttpGet().getPort().getStrVal());
        }
        assertTrue(c.getStartupProbe().getPeriodSeconds() * c.getStartupProbe().getFailureThreshold() >= 300);
    }

    @Test
    void runsOnTheSelectedGpuNodesWithTheirTolerations() {
        KVPool p = pool();
        p.getSpec().dataAgent.nodeSelector = Map.of("nvidia.com/gpu.present", "true");
        Toleration t = new TolerationBuilder().withKey("nvidia.com/gpu").withOperator("Exists")
                .withEffect("NoSchedule").build();
        p.getSpec().dataAgent.tolerations = List.of(t);
        PodSpec pod = podSpec(ds(p));
        assertEquals(Map.of("nvidia.com/gpu.present", "true"), pod.getNodeSelector());
        assertEquals(List.of(t), pod.getTolerations());
        assertFalse(Boolean.TRUE.equals(pod.getHostNetwork()), "pod network: NetworkPolicies apply");
        PodSpec plain = podSpec(ds(pool()));
        assertTrue(plain.getNodeSelector() == null || plain.getNodeSelector().isEmpty());
        assertTrue(plain.getTolerations() == null || plain.getTolerations().isEmpty());
    }

    @Test
    void nonRootUnprivilegedRuntimeDefaultByDefault() {
        DaemonSet d = ds(pool());
        PodSpec pod = podSpec(d);
        assertTrue(pod.getSecurityContext().getRunAsNonRoot());
        assertEquals(185L, pod.getSecurityContext().getRunAsUser());
        assertEquals(185L, pod.getSecurityContext().getFsGroup());
        assertEquals("RuntimeDefault", pod.getSecurityContext().getSeccompProfile().getType());
        var sc = container(d).getSecurityContext();
        assertEquals(false, sc.getPrivileged());
        assertEquals(false, sc.getAllowPrivilegeEscalation());
        assertTrue(sc.getReadOnlyRootFilesystem());
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
        assertTrue(sc.getCapabilities().getAdd() == null || sc.getCapabilities().getAdd().isEmpty());
        assertTrue(pod.getInitContainers().isEmpty(), "nothing to chown without host directories");
    }

    @Test
    void lockMemoryAddsOnlyIpcLockAndRunsAsRoot() {
        KVPool p = pool();
        p.getSpec().dataAgent.lockMemory = true;
        DaemonSet d = ds(p);
        var sc = container(d).getSecurityContext();
        assertEquals(List.of("IPC_LOCK"), sc.getCapabilities().getAdd());
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
        assertEquals(false, sc.getPrivileged());
        assertEquals(false, sc.getAllowPrivilegeEscalation());
        assertEquals(false, sc.getRunAsNonRoot());
        assertEquals(0L, podSpec(d).getSecurityContext().getRunAsUser());
    }

    @Test
    void privilegedOnlyWhenAsked() {
        assertNotEquals(Boolean.TRUE, container(ds(pool())).getSecurityContext().getPrivileged());
        KVPool p = pool();
        p.getSpec().dataAgent.lockMemory = true;
        p.getSpec().dataAgent.gpus = 2;
        p.getSpec().dataAgent.seccompProfile = KVPoolSpec.SeccompProfile.Unconfined;
        assertNotEquals(Boolean.TRUE, container(ds(p)).getSecurityContext().getPrivileged());
        p.getSpec().dataAgent.privileged = true;
        var sc = container(ds(p)).getSecurityContext();
        assertEquals(true, sc.getPrivileged());
        // the API server refuses privileged with allowPrivilegeEscalation: false
        assertNull(sc.getAllowPrivilegeEscalation());
    }

    @Test
    void seccompVariants() {
        KVPool p = pool();
        p.getSpec().dataAgent.seccompProfile = KVPoolSpec.SeccompProfile.Unconfined;
        var profile = podSpec(ds(p)).getSecurityContext().getSeccompProfile();
        assertEquals("Unconfined", profile.getType());
        assertNull(profile.getLocalhostProfile());
        p.getSpec().dataAgent.seccompProfile = KVPoolSpec.SeccompProfile.Localhost;
        p.getSpec().dataAgent.seccompLocalhostProfile = "profiles/kvpool-io-uring.json";
        profile = podSpec(ds(p)).getSecurityContext().getSeccompProfile();
        assertEquals("Localhost", profile.getType());
        assertEquals("profiles/kvpool-io-uring.json", profile.getLocalhostProfile());
        // Localhost needs its file, and the file needs Localhost
        p.getSpec().dataAgent.seccompLocalhostProfile = null;
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(p));
        KVPool q = pool();
        q.getSpec().dataAgent.seccompLocalhostProfile = "x.json";
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(q));
        for (String bad : List.of("/etc/x.json", "../x.json", "a/../../x.json", "a//b", "")) {
            KVPool r = pool();
            r.getSpec().dataAgent.seccompProfile = KVPoolSpec.SeccompProfile.Localhost;
            r.getSpec().dataAgent.seccompLocalhostProfile = bad;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(r), bad);
            assertTrue(e.getMessage().contains("seccompLocalhostProfile"), e.getMessage());
        }
    }

    @Test
    void shmIsAMemoryEmptyDirOfShmSizeAndTheSegmentFillsIt() {
        DaemonSet d = ds(pool());
        Volume shm = volumes(d).get("shm");
        assertEquals("Memory", shm.getEmptyDir().getMedium());
        assertEquals(new Quantity("1Gi"), shm.getEmptyDir().getSizeLimit());
        assertEquals("/dev/shm", mounts(container(d)).get("shm"));
        assertEquals("1024", env(d).get("KVPOOL_AGENT_SHM_MIB").getValue());
        KVPool p = pool();
        p.getSpec().dataAgent.shmSize = new Quantity("16Gi");
        d = ds(p);
        assertEquals(new Quantity("16Gi"), volumes(d).get("shm").getEmptyDir().getSizeLimit());
        assertEquals("16384", env(d).get("KVPOOL_AGENT_SHM_MIB").getValue());
        for (String bad : List.of("1Mi", "0", "-1Gi", "100Pi")) {
            KVPool q = pool();
            q.getSpec().dataAgent.shmSize = new Quantity(bad);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(q), bad);
            assertTrue(e.getMessage().startsWith("spec.dataAgent.shmSize"), e.getMessage());
        }
    }

    @Test
    void shmHostPathSharesTheSegmentWithEnginePods() {
        KVPool p = pool();
        p.getSpec().dataAgent.shmHostPath = "/dev/shm/kvpool";
        DaemonSet d = ds(p);
        Volume shm = volumes(d).get("shm");
        assertNull(shm.getEmptyDir());
        assertEquals("/dev/shm/kvpool", shm.getHostPath().getPath());
        assertEquals("DirectoryOrCreate", shm.getHostPath().getType());
        // created root-owned: the non-root agent gets it chowned
        Container init = podSpec(d).getInitContainers().getFirst();
        assertEquals(List.of("chown", "185:185", "/dev/shm"), init.getCommand());
    }

    @Test
    void nvmeDirectoriesAsHostPathsOrPerPodLocalVolumes() {
        DaemonSet plain = ds(pool());
        assertEquals("false", env(plain).get("KVPOOL_AGENT_NVME_ENABLED").getValue(), "no NVMe tier on the root disk");
        assertNull(env(plain).get("KVPOOL_AGENT_NVME_DIRS"));

        KVPool p = pool();
        KVPoolSpec.NvmeDir local = new KVPoolSpec.NvmeDir();
        local.storageClassName = "local-nvme";
        local.size = new Quantity("500Gi");
        p.getSpec().dataAgent.nvmeDirs = List.of(KVPoolSpec.NvmeDir.hostPath("/mnt/nvme0/kvpool"), local);
        p.getSpec().dataAgent.nvmeDeviceSize = new Quantity("400Gi");
        DaemonSet d = ds(p);
        Map<String, EnvVar> env = env(d);
        assertNull(env.get("KVPOOL_AGENT_NVME_ENABLED"));
        assertEquals("/var/lib/kvpool/nvme/0,/var/lib/kvpool/nvme/1", env.get("KVPOOL_AGENT_NVME_DIRS").getValue());
        assertEquals("409600", env.get("KVPOOL_AGENT_NVME_DEVICE_MIB").getValue());
        Map<String, Volume> v = volumes(d);
        assertEquals("/mnt/nvme0/kvpool", v.get("nvme-0").getHostPath().getPath());
        assertEquals("DirectoryOrCreate", v.get("nvme-0").getHostPath().getType());
        var claim = v.get("nvme-1").getEphemeral().getVolumeClaimTemplate().getSpec();
        assertEquals("local-nvme", claim.getStorageClassName());
        assertEquals(new Quantity("500Gi"), claim.getResources().getRequests().get("storage"));
        assertEquals(List.of("ReadWriteOnce"), claim.getAccessModes());
        Map<String, String> m = mounts(container(d));
        assertEquals("/var/lib/kvpool/nvme/0", m.get("nvme-0"));
        assertEquals("/var/lib/kvpool/nvme/1", m.get("nvme-1"));
        // only the host directory needs chowning (fsGroup covers the claimed volume)
        Container init = podSpec(d).getInitContainers().getFirst();
        assertEquals(List.of("chown", "185:185", "/var/lib/kvpool/nvme/0"), init.getCommand());
        assertEquals(List.of("CHOWN"), init.getSecurityContext().getCapabilities().getAdd());
        assertEquals(List.of("ALL"), init.getSecurityContext().getCapabilities().getDrop());
        assertEquals(0L, init.getSecurityContext().getRunAsUser());
        // as root (lockMemory) the agent owns what it creates: no init container
        p.getSpec().dataAgent.lockMemory = true;
        assertTrue(podSpec(ds(p)).getInitContainers().isEmpty());
    }

    @Test
    void hostPathsAreValidated() {
        for (String bad : List.of("relative/dir", "/", "/mnt/../etc", "/mnt/./x", "/mnt//x", "/mnt/x y", "/mnt/$(id)",
                "/" + "a".repeat(300))) {
            KVPool p = pool();
            p.getSpec().dataAgent.nvmeDirs = List.of(KVPoolSpec.NvmeDir.hostPath(bad));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(p), bad);
            assertTrue(e.getMessage().contains("nvmeDirs[0].hostPath"), e.getMessage());
            KVPool q = pool();
            q.getSpec().dataAgent.shmHostPath = bad;
            assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(q), bad);
            KVPool r = pool();
            r.getSpec().dataAgent.poolStorageRoots = List.of(new KVPoolSpec.HostDirectory(bad));
            assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(r), bad);
        }
        for (String good : List.of("/mnt/nvme0", "/mnt/.hidden/x", "/data/kv..pool/", "/x/..y")) {
            KVPool p = pool();
            p.getSpec().dataAgent.nvmeDirs = List.of(KVPoolSpec.NvmeDir.hostPath(good));
            DataAgentModel.of(p).daemonSet();
        }
        KVPool both = pool();
        KVPoolSpec.NvmeDir d = KVPoolSpec.NvmeDir.hostPath("/mnt/a");
        d.storageClassName = "local";
        d.size = new Quantity("1Gi");
        both.getSpec().dataAgent.nvmeDirs = List.of(d);
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(both));
        KVPool noSize = pool();
        KVPoolSpec.NvmeDir e = new KVPoolSpec.NvmeDir();
        e.storageClassName = "local";
        noSize.getSpec().dataAgent.nvmeDirs = List.of(e);
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(noSize));
        KVPool many = pool();
        List<KVPoolSpec.NvmeDir> dirs = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            dirs.add(KVPoolSpec.NvmeDir.hostPath("/mnt/nvme" + i));
        }
        many.getSpec().dataAgent.nvmeDirs = dirs;
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(many));
        KVPool twice = pool();
        twice.getSpec().dataAgent.nvmeDirs = List.of(KVPoolSpec.NvmeDir.hostPath("/mnt/a"),
                KVPoolSpec.NvmeDir.hostPath("/mnt/a/"));
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(twice));
        KVPool rootsTwice = pool();
        rootsTwice.getSpec().dataAgent.poolStorageRoots = List.of(new KVPoolSpec.HostDirectory("/mnt/nfs"),
                new KVPoolSpec.HostDirectory("/mnt/nfs"));
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(rootsTwice));
        // a pool root mounted at its host path must not cover the agent's own directories
        for (String over : List.of("/tmp", "/var/lib", "/var/lib/kvpool/x", "/dev/shm")) {
            KVPool p = pool();
            p.getSpec().dataAgent.poolStorageRoots = List.of(new KVPoolSpec.HostDirectory(over));
            assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(p), over);
        }
    }

    @Test
    void poolStorageRootsEnableTheGlobalPoolAtTheirHostPaths() {
        assertNull(env(ds(pool())).get("KVPOOL_AGENT_POOL_ENABLED"));
        KVPool p = pool();
        p.getSpec().dataAgent.poolStorageRoots = List.of(new KVPoolSpec.HostDirectory("/mnt/nfs/kvpool"));
        DaemonSet d = ds(p);
        assertEquals("true", env(d).get("KVPOOL_AGENT_POOL_ENABLED").getValue());
        assertEquals("/mnt/nfs/kvpool", env(d).get("KVPOOL_AGENT_POOL_STORAGE_ROOTS").getValue());
        // an unmounted storage fails the pod rather than writing blocks onto the node's root disk
        assertEquals("Directory", volumes(d).get("pool-0").getHostPath().getType());
        assertEquals("/mnt/nfs/kvpool", mounts(container(d)).get("pool-0"));
    }

    @Test
    void gpusOnlyWhenAsked() {
        DaemonSet plain = ds(pool());
        var res = container(plain).getResources();
        assertTrue(res == null || res.getLimits() == null || !res.getLimits().containsKey("nvidia.com/gpu"));
        assertNull(env(plain).get("KVPOOL_AGENT_GPU_ENABLED"));
        KVPool p = pool();
        p.getSpec().dataAgent.gpus = 1;
        p.getSpec().dataAgent.resources = new ResourceRequirementsBuilder()
                .addToLimits("memory", new Quantity("24Gi")).build();
        DaemonSet d = ds(p);
        assertEquals(new Quantity("1"), container(d).getResources().getLimits().get("nvidia.com/gpu"));
        assertEquals(new Quantity("24Gi"), container(d).getResources().getLimits().get("memory"));
        assertEquals("true", env(d).get("KVPOOL_AGENT_GPU_ENABLED").getValue());
        assertNull(p.getSpec().dataAgent.resources.getLimits().get("nvidia.com/gpu"), "the spec is not modified");
        p.getSpec().dataAgent.gpus = 17;
        assertThrows(IllegalArgumentException.class, () -> DataAgentModel.of(p));
    }

    @Test
    void hostTierSizeSplitsIntoRegions() {
        KVPool p = pool();
        p.getSpec().dataAgent.hostMemory = new Quantity("64Gi");
        p.getSpec().dataAgent.hostRegions = 4;
        Map<String, EnvVar> env = env(ds(p));
        assertEquals("4", env.get("KVPOOL_AGENT_HOST_REGIONS").getValue());
        assertEquals("16384", env.get("KVPOOL_AGENT_HOST_REGION_MIB").getValue());
        assertNull(env(ds(pool())).get("KVPOOL_AGENT_HOST_REGION_MIB"), "the agent's default");
        assertNull(env(ds(pool())).get("KVPOOL_AGENT_HOST_REGIONS"));
        KVPool q = pool();
        q.getSpec().dataAgent.hostRegions = 8;
        assertEquals("8", env(ds(q)).get("KVPOOL_AGENT_HOST_REGIONS").getValue());
        assertNull(env(ds(q)).get("KVPOOL_AGENT_HOST_REGION_MIB"));
    }

    @Test
    void talksToThePlanesWithTheMetadataPlanesAccount() {
        Map<String, EnvVar> env = env(ds(pool()));
        assertEquals("http://prod-metadata-plane:6382", env.get("KVPOOL_AGENT_POOL_META_URI").getValue());
        assertEquals("http://prod-control-plane:6492", env.get("KVPOOL_CONTROL_PLANE_URL").getValue());
        String secret = MetadataPlaneModel.of(pool()).accountSecretName();
        for (var e : Map.of("KVPOOL_CONTROL_PLANE_USER", "username", "KVPOOL_CONTROL_PLANE_PASSWORD", "password")
                .entrySet()) {
            EnvVar v = env.get(e.getKey());
            assertNull(v.getValue(), "no credential inline");
            assertEquals(secret, v.getValueFrom().getSecretKeyRef().getName());
            assertEquals(e.getValue(), v.getValueFrom().getSecretKeyRef().getKey());
        }
        assertEquals("spec.nodeName", env.get("KVPOOL_AGENT_ID").getValueFrom().getFieldRef().getFieldPath());
        assertEquals("0.0.0.0", env.get("KVPOOL_AGENT_HTTP_HOST").getValue());
        assertEquals("0.0.0.0", env.get("KVPOOL_AGENT_METRICS_HOST").getValue());
        assertEquals("/var/lib/kvpool", env.get("KVPOOL_DATA_DIR").getValue());
        assertNull(env.get("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS"));
        KVPool p = pool();
        p.getSpec().engines.kafka = new KVPoolSpec.Kafka();
        p.getSpec().engines.kafka.bootstrap = "kafka-0:9092,kafka-1:9092";
        assertEquals("kafka-0:9092,kafka-1:9092", env(ds(p)).get("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS").getValue());
    }

    @Test
    void serviceRoutesEnginesToTheirOwnNodesAgent() {
        DataAgentModel m = DataAgentModel.of(pool());
        Service s = m.service();
        assertEquals("prod-data-agent", s.getMetadata().getName());
        assertEquals("Local", s.getSpec().getInternalTrafficPolicy());
        assertEquals(m.daemonSet().getSpec().getSelector().getMatchLabels(), s.getSpec().getSelector());
        assertEquals(Map.of("api", 6390, "metrics", 6389), s.getSpec().getPorts().stream()
                .collect(Collectors.toMap(ServicePort::getName, ServicePort::getPort)));
    }

    @Test
    void writableVolumesUnderTheReadOnlyRoot() {
        DaemonSet d = ds(pool());
        Map<String, String> m = mounts(container(d));
        assertEquals("/tmp", m.get("tmp"));
        assertEquals("/var/lib/kvpool", m.get("data"));
        assertTrue(container(d).getSecurityContext().getReadOnlyRootFilesystem());
    }

    @Test
    void disabledAgentsAndDeterminism() {
        assertTrue(DataAgentModel.of(pool()).enabled());
        KVPool p = pool();
        p.getSpec().dataAgent.enabled = false;
        assertFalse(DataAgentModel.of(p).enabled());
        assertEquals(ds(pool()), ds(pool()));
        assertEquals(DataAgentModel.of(pool()).service(), DataAgentModel.of(pool()).service());
    }
}
