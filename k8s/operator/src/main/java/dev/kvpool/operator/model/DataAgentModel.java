package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SeccompProfileBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.DaemonSetBuilder;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The desired data agents of a {@link KVPool}: a DaemonSet on the nodes of {@code spec.dataAgent.nodeSelector}
 * (GPU nodes) and a node-local Service, as plain fabric8 objects. Pure, like {@link ControlPlaneModel}.
 *
 * <p><b>Network.</b> The agents stay on the pod network (no {@code hostNetwork}): on the host network they would take
 * the node's ports 6389/6390 (clashing with a second pool or a {@code ./kvpool up} on the node), and NetworkPolicies
 * do not apply to host-network pods, while the engine API takes no credentials. So the agent listens on the pod's
 * interfaces and engines reach <em>their node's</em> agent through the Service {@code <pool>-data-agent}, whose
 * {@code internalTrafficPolicy: Local} routes only to the agent on the caller's node; {@link NetworkPolicyModel}
 * admits only the engines to 6390.
 *
 * <p><b>Shared memory.</b> {@code /dev/shm} is a memory {@code emptyDir} of {@code shmSize} (a container's own is 64
 * MiB), and the agent's segment is sized to fill it. Engines in other pods map the agent's segment by the path
 * {@code /v1/status} reports, so they need a directory they share with the agent: {@code shmHostPath} mounts a host
 * directory as the agent's {@code /dev/shm} instead (the engines mount it at {@code /dev/shm} too).
 *
 * <p><b>Pinned memory.</b> io_uring fixed buffers (the host tier's regions) are charged to {@code RLIMIT_MEMLOCK}
 * unless the process has {@code CAP_IPC_LOCK}. Kubernetes cannot set ulimits: the limit is whatever the container
 * runtime passes on (often 8 MiB or 64 KiB). Without enough of it the agent logs that fixed buffers were not
 * registered and uses plain reads and writes. {@code lockMemory} adds {@code IPC_LOCK}; a capability added to a
 * non-root container reaches only its bounding set (Kubernetes sets no ambient capabilities, and
 * {@code allowPrivilegeEscalation: false} forbids file capabilities), so with {@code lockMemory} the agent runs as
 * uid 0, every other capability still dropped. Otherwise it runs as uid 185.
 *
 * <p><b>io_uring and seccomp.</b> containerd's and Docker's default seccomp profiles (2023 on) refuse
 * {@code io_uring_setup}; the agent then logs why and does O_DIRECT I/O through {@code FileChannel}. The default
 * stays {@code RuntimeDefault}: the agent works everywhere and the syscall filter stays on; {@code Localhost} (a
 * copy of the runtime's profile that allows {@code io_uring_setup/enter/register}, installed on the nodes) gives
 * io_uring with a filter, {@code Unconfined} gives it without one.
 *
 * <p><b>Disks.</b> Each NVMe directory is a {@code hostPath} (DirectoryOrCreate; its blocks and slot table outlive
 * the pod) or a generic ephemeral volume from a local-PV storage class (a DaemonSet has no volumeClaimTemplates; the
 * volume is bound on the pod's node and deleted with the pod, so its blocks do not outlive it). Host directories are
 * created root-owned, so a non-root agent gets them chowned by an init container (root, {@code CAP_CHOWN} only).
 * Pool storage roots are mounted at their host path (the metadata plane hands out the host's {@code file://} paths)
 * with type {@code Directory}: an unmounted storage must fail the pod, not fill the node's root disk.
 */
public final class DataAgentModel extends ComponentModel {
    public static final String COMPONENT = "data-agent";
    public static final int HTTP_PORT = 6390;
    public static final int METRICS_PORT = 6389;
    public static final String SHM_VOLUME = "shm";
    public static final String SHM_PATH = "/dev/shm";
    public static final String NVME_PATH = Workloads.DATA_PATH + "/nvme/";
    public static final Quantity DEFAULT_SHM = new Quantity("1Gi");
    public static final String GPU_RESOURCE = "nvidia.com/gpu";
    static final long MIB = 1024 * 1024;
    static final long MIN_SHM_MIB = 16;
    static final long MAX_MIB = 64L * 1024 * 1024; // 64 TiB: any larger size is a typo
    /** 60 × 10 s: preallocating slot files and reading back a large slot table take a while. */
    public static final int STARTUP_FAILURE_THRESHOLD = 60;
    private static final Pattern HOST_PATH = Pattern.compile(KVPoolSpec.HOST_PATH);
    private static final Pattern RELATIVE_PATH = Pattern.compile(KVPoolSpec.RELATIVE_PATH);

    private final KVPoolSpec.DataAgent spec;

    private DataAgentModel(KVPool pool) {
        super(pool, COMPONENT);
        this.spec = pool.getSpec().dataAgent == null ? new KVPoolSpec.DataAgent() : pool.getSpec().dataAgent;
        validate();
    }

    /** Refuses settings the API server would refuse, for KVPools it never saw (static manifests, tests). */
    public static DataAgentModel of(KVPool pool) {
        return new DataAgentModel(pool);
    }

    public boolean enabled() {
        return !Boolean.FALSE.equals(spec.enabled);
    }

    public DaemonSet daemonSet() {
        return new DaemonSetBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                    .withNewUpdateStrategy().withType("RollingUpdate")
                        .withNewRollingUpdate().withMaxUnavailable(new IntOrString(1)).endRollingUpdate()
                    .endUpdateStrategy()
                    .withNewTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withNodeSelector(spec.nodeSelector)
                            .withTolerations(spec.tolerations)
                            .withSecurityContext(podSecurityContext())
                            // a clean stop msyncs the slot tables and writes the event seq: give it time
                            .withTerminationGracePeriodSeconds(60L)
                            .withInitContainers(initContainers())
                            .withContainers(container())
                            .withVolumes(volumes())
                        .endSpec()
                    .endTemplate()
                .endSpec()
                .build();
    }

    /**
     * Engines call {@code http://<pool>-data-agent:6390} and land on their own node's agent. The API port is named
     * {@code api}, not {@code http}: the ServiceMonitor scrapes the planes' {@code http} ports, and the agent's
     * metrics are on {@code metrics}.
     */
    public Service service() {
        return new ServiceBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withType("ClusterIP")
                    .withInternalTrafficPolicy("Local")
                    .withSelector(selector())
                    .addNewPort().withName("api").withPort(HTTP_PORT).withTargetPort(new IntOrString("api")).withProtocol("TCP").endPort()
                    .addNewPort().withName("metrics").withPort(METRICS_PORT).withTargetPort(new IntOrString("metrics")).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    boolean runsAsRoot() {
        return Boolean.TRUE.equals(spec.lockMemory) || privileged();
    }

    boolean privileged() {
        return Boolean.TRUE.equals(spec.privileged);
    }

    int gpus() {
        return spec.gpus == null ? 0 : spec.gpus;
    }

    PodSecurityContext podSecurityContext() {
        PodSecurityContextBuilder b = new PodSecurityContextBuilder().withSeccompProfile(seccompProfile());
        if (runsAsRoot()) {
            return b.withRunAsNonRoot(false).withRunAsUser(0L).build();
        }
        // fsGroup: the per-pod NVMe volumes are made writable for the agent's group
        return b.withRunAsNonRoot(true).withRunAsUser(Workloads.RUN_AS_USER).withRunAsGroup(Workloads.RUN_AS_USER)
                .withFsGroup(Workloads.RUN_AS_USER).build();
    }

    SeccompProfile seccompProfile() {
        KVPoolSpec.SeccompProfile type = spec.seccompProfile == null
                ? KVPoolSpec.SeccompProfile.RuntimeDefault : spec.seccompProfile;
        SeccompProfileBuilder b = new SeccompProfileBuilder().withType(type.name());
        if (type == KVPoolSpec.SeccompProfile.Localhost) {
            b.withLocalhostProfile(spec.seccompLocalhostProfile);
        }
        return b.build();
    }

    SecurityContext containerSecurityContext() {
        if (privileged()) {
            // asked for explicitly; Kubernetes refuses privileged together with allowPrivilegeEscalation: false
            return new SecurityContextBuilder().withPrivileged(true).withReadOnlyRootFilesystem(true).build();
        }
        Capabilities caps = Boolean.TRUE.equals(spec.lockMemory)
                ? new CapabilitiesBuilder().withDrop("ALL").withAdd("IPC_LOCK").build()
                : new CapabilitiesBuilder().withDrop("ALL").build();
        return new SecurityContextBuilder()
                .withRunAsNonRoot(!runsAsRoot())
                .withPrivileged(false)
                .withAllowPrivilegeEscalation(false)
                .withReadOnlyRootFilesystem(true)
                .withCapabilities(caps)
                .build();
    }

    Container container() {
        return new ContainerBuilder()
                .withName(COMPONENT)
                .withImage(image())
                .addNewPort().withName("api").withContainerPort(HTTP_PORT).withProtocol("TCP").endPort()
                .addNewPort().withName("metrics").withContainerPort(METRICS_PORT).withProtocol("TCP").endPort()
                .withEnv(env())
                .withResources(resources())
                // the agent has no /q/health (no smallrye-health); /v1/status answers once its tiers are open
                .withStartupProbe(statusProbe(STARTUP_FAILURE_THRESHOLD))
                .withReadinessProbe(statusProbe(3))
                .withLivenessProbe(statusProbe(3))
                .withSecurityContext(containerSecurityContext())
                .withVolumeMounts(volumeMounts())
                .build();
    }

    static Probe statusProbe(int failureThreshold) {
        return new ProbeBuilder()
                .withNewHttpGet().withPath("/v1/status").withPort(new IntOrString("api")).endHttpGet()
                .withPeriodSeconds(10)
                .withTimeoutSeconds(5)
                .withFailureThreshold(failureThreshold)
                .build();
    }

    /** Host directories a non-root agent must own: the NVMe ones and a shared /dev/shm directory. */
    List<Container> initContainers() {
        if (runsAsRoot()) {
            return List.of();
        }
        List<String> cmd = new ArrayList<>(List.of("chown", Workloads.RUN_AS_USER + ":" + Workloads.RUN_AS_USER));
        List<VolumeMount> mounts = new ArrayList<>();
        List<KVPoolSpec.NvmeDir> dirs = nvmeDirs();
        for (int i = 0; i < dirs.size(); i++) {
            if (dirs.get(i).hostPath != null) {
                cmd.add(NVME_PATH + i);
                mounts.add(mount("nvme-" + i, NVME_PATH + i));
            }
        }
        if (spec.shmHostPath != null) {
            cmd.add(SHM_PATH);
            mounts.add(mount(SHM_VOLUME, SHM_PATH));
        }
        if (mounts.isEmpty()) {
            return List.of();
        }
        return List.of(new ContainerBuilder()
                .withName("own-host-dirs")
                .withImage(image())
                .withCommand(cmd)
                .withSecurityContext(new SecurityContextBuilder()
                        .withRunAsUser(0L).withRunAsNonRoot(false)
                        .withAllowPrivilegeEscalation(false).withReadOnlyRootFilesystem(true)
                        .withNewCapabilities().withDrop("ALL").withAdd("CHOWN").endCapabilities()
                        .build())
                .withVolumeMounts(mounts)
                .build());
    }

    ResourceRequirements resources() {
        if (gpus() == 0) {
            return spec.resources;
        }
        ResourceRequirementsBuilder b = spec.resources == null
                ? new ResourceRequirementsBuilder() : new ResourceRequirementsBuilder(spec.resources);
        return b.addToLimits(GPU_RESOURCE, new Quantity(Integer.toString(gpus()))).build();
    }

    List<Volume> volumes() {
        List<Volume> v = serviceVolumes();
        if (spec.shmHostPath != null) {
            v.add(new VolumeBuilder().withName(SHM_VOLUME)
                    .withNewHostPath().withPath(spec.shmHostPath).withType("DirectoryOrCreate").endHostPath().build());
        } else {
            v.add(new VolumeBuilder().withName(SHM_VOLUME)
                    .withNewEmptyDir().withMedium("Memory").withSizeLimit(shmSize()).endEmptyDir().build());
        }
        List<KVPoolSpec.NvmeDir> dirs = nvmeDirs();
        for (int i = 0; i < dirs.size(); i++) {
            KVPoolSpec.NvmeDir d = dirs.get(i);
            VolumeBuilder b = new VolumeBuilder().withName("nvme-" + i);
            if (d.hostPath != null) {
                b.withNewHostPath().withPath(d.hostPath).withType("DirectoryOrCreate").endHostPath();
            } else {
                b.withNewEphemeral().withNewVolumeClaimTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withAccessModes("ReadWriteOnce")
                            .withStorageClassName(d.storageClassName)
                            .withNewResources().addToRequests("storage", d.size).endResources()
                        .endSpec()
                        .endVolumeClaimTemplate().endEphemeral();
            }
            v.add(b.build());
        }
        List<KVPoolSpec.HostDirectory> roots = poolRoots();
        for (int i = 0; i < roots.size(); i++) {
            v.add(new VolumeBuilder().withName("pool-" + i)
                    .withNewHostPath().withPath(roots.get(i).path).withType("Directory").endHostPath().build());
        }
        return v;
    }

    List<VolumeMount> volumeMounts() {
        List<VolumeMount> m = serviceVolumeMounts();
        m.add(mount(SHM_VOLUME, SHM_PATH));
        for (int i = 0; i < nvmeDirs().size(); i++) {
            m.add(mount("nvme-" + i, NVME_PATH + i));
        }
        List<KVPoolSpec.HostDirectory> roots = poolRoots();
        for (int i = 0; i < roots.size(); i++) {
            m.add(mount("pool-" + i, roots.get(i).path));
        }
        return m;
    }

    private static VolumeMount mount(String volume, String path) {
        return new VolumeMountBuilder().withName(volume).withMountPath(path).build();
    }

    /**
     * The agent's settings ({@code kvpool.agent.*} of its application.properties, as environment variables).
     */
    List<EnvVar> env() {
        List<EnvVar> env = new ArrayList<>();
        env.add(Workloads.dataDirEnv());
        // the node name: stable across restarts on a node (events' ce_source, spool file names)
        env.add(new EnvVarBuilder().withName("KVPOOL_AGENT_ID")
                .withNewValueFrom().withNewFieldRef().withFieldPath("spec.nodeName").endFieldRef().endValueFrom().build());
        // the pod's own interfaces: probes, Prometheus and the node's engines come from outside the pod; the
        // NetworkPolicies decide who gets in
        env.add(Workloads.value("KVPOOL_AGENT_HTTP_HOST", "0.0.0.0"));
        env.add(Workloads.value("KVPOOL_AGENT_METRICS_HOST", "0.0.0.0"));
        env.add(Workloads.value("KVPOOL_AGENT_SHM_MIB", Long.toString(shmMib())));
        if (spec.hostMemory != null || spec.hostRegions != null) {
            int regions = spec.hostRegions == null ? 2 : spec.hostRegions;
            env.add(Workloads.value("KVPOOL_AGENT_HOST_REGIONS", Integer.toString(regions)));
            if (spec.hostMemory != null) {
                env.add(Workloads.value("KVPOOL_AGENT_HOST_REGION_MIB",
                        Long.toString(Math.max(1, mib("hostMemory", spec.hostMemory) / regions))));
            }
        }
        List<KVPoolSpec.NvmeDir> dirs = nvmeDirs();
        if (dirs.isEmpty()) {
            // the default would put a slot file on the node's root disk (an emptyDir): no NVMe tier instead
            env.add(Workloads.value("KVPOOL_AGENT_NVME_ENABLED", "false"));
        } else {
            List<String> paths = new ArrayList<>();
            for (int i = 0; i < dirs.size(); i++) {
                paths.add(NVME_PATH + i);
            }
            env.add(Workloads.value("KVPOOL_AGENT_NVME_DIRS", String.join(",", paths)));
            if (spec.nvmeDeviceSize != null) {
                env.add(Workloads.value("KVPOOL_AGENT_NVME_DEVICE_MIB",
                        Long.toString(mib("nvmeDeviceSize", spec.nvmeDeviceSize))));
            }
        }
        if (gpus() > 0) {
            env.add(Workloads.value("KVPOOL_AGENT_GPU_ENABLED", "true"));
        }
        env.add(Workloads.value("KVPOOL_AGENT_POOL_META_URI", "http://" + MetadataPlaneModel.of(pool).name() + ":"
                + MetadataPlaneModel.HTTP_PORT));
        List<KVPoolSpec.HostDirectory> roots = poolRoots();
        if (!roots.isEmpty()) {
            env.add(Workloads.value("KVPOOL_AGENT_POOL_ENABLED", "true"));
            env.add(Workloads.value("KVPOOL_AGENT_POOL_STORAGE_ROOTS",
                    String.join(",", roots.stream().map(r -> r.path).toList())));
        }
        // kvpool.blocks events: the referenced or managed Kafka, with its TLS/SASL client settings when given
        env.addAll(EngineEndpoints.of(pool).dataAgentKafkaEnv());
        // heartbeats to the control plane, with the metadata plane's account
        MetadataPlaneModel mp = MetadataPlaneModel.of(pool);
        env.add(Workloads.value("KVPOOL_CONTROL_PLANE_URL", "http://" + ControlPlaneModel.of(pool).name() + ":"
                + ControlPlaneModel.HTTP_PORT));
        env.add(Workloads.fromSecret("KVPOOL_CONTROL_PLANE_USER", mp.accountSecretName(),
                MetadataPlaneModel.ACCOUNT_USERNAME_KEY));
        env.add(Workloads.fromSecret("KVPOOL_CONTROL_PLANE_PASSWORD", mp.accountSecretName(),
                MetadataPlaneModel.ACCOUNT_PASSWORD_KEY));
        return env;
    }

    Quantity shmSize() {
        return spec.shmSize == null ? DEFAULT_SHM : spec.shmSize;
    }

    /** The segment fills the /dev/shm volume; with a host directory, shmSize still sizes the segment. */
    long shmMib() {
        return mib("shmSize", shmSize());
    }

    List<KVPoolSpec.NvmeDir> nvmeDirs() {
        return spec.nvmeDirs == null ? List.of() : spec.nvmeDirs;
    }

    List<KVPoolSpec.HostDirectory> poolRoots() {
        return spec.poolStorageRoots == null ? List.of() : spec.poolStorageRoots;
    }

    static long mib(String field, Quantity q) {
        BigDecimal bytes;
        try {
            bytes = Quantity.getAmountInBytes(q);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("spec.dataAgent." + field + ": not a quantity: " + q);
        }
        long mib = bytes.divideToIntegralValue(BigDecimal.valueOf(MIB)).min(BigDecimal.valueOf(Long.MAX_VALUE)).longValue();
        if (mib < 1 || mib > MAX_MIB) {
            throw new IllegalArgumentException("spec.dataAgent." + field + ": " + q + " is outside 1Mi.." + MAX_MIB / MIB / 1024 + "Ti");
        }
        return mib;
    }

    private void validate() {
        if (shmMib() < MIN_SHM_MIB) {
            throw new IllegalArgumentException("spec.dataAgent.shmSize: " + shmSize() + " is below " + MIN_SHM_MIB + "Mi");
        }
        if (spec.hostMemory != null) {
            mib("hostMemory", spec.hostMemory);
        }
        if (spec.hostRegions != null && (spec.hostRegions < 1 || spec.hostRegions > 64)) {
            throw new IllegalArgumentException("spec.dataAgent.hostRegions: " + spec.hostRegions + " is outside 1..64");
        }
        if (spec.nvmeDeviceSize != null) {
            mib("nvmeDeviceSize", spec.nvmeDeviceSize);
        }
        if (gpus() < 0 || gpus() > 16) {
            throw new IllegalArgumentException("spec.dataAgent.gpus: " + gpus() + " is outside 0..16");
        }
        if (spec.shmHostPath != null) {
            hostPath("shmHostPath", spec.shmHostPath);
        }
        List<KVPoolSpec.NvmeDir> dirs = nvmeDirs();
        if (dirs.size() > 16) {
            throw new IllegalArgumentException("spec.dataAgent.nvmeDirs: at most 16, got " + dirs.size());
        }
        for (int i = 0; i < dirs.size(); i++) {
            KVPoolSpec.NvmeDir d = dirs.get(i);
            String f = "nvmeDirs[" + i + "]";
            if (d == null || (d.hostPath == null) == (d.storageClassName == null)) {
                throw new IllegalArgumentException("spec.dataAgent." + f + ": set exactly one of hostPath and storageClassName");
            }
            if (d.hostPath != null) {
                hostPath(f + ".hostPath", d.hostPath);
            } else if (d.size == null) {
                throw new IllegalArgumentException("spec.dataAgent." + f + ".size: required with storageClassName");
            } else {
                mib(f + ".size", d.size);
            }
        }
        if (dirs.stream().filter(d -> d.hostPath != null).map(d -> trim(d.hostPath)).distinct().count()
                != dirs.stream().filter(d -> d.hostPath != null).count()) {
            // two slot files in one directory: the second agent device fails on the slot table's lock
            throw new IllegalArgumentException("spec.dataAgent.nvmeDirs: a host directory is listed twice");
        }
        List<KVPoolSpec.HostDirectory> roots = poolRoots();
        if (roots.size() > 8) {
            throw new IllegalArgumentException("spec.dataAgent.poolStorageRoots: at most 8, got " + roots.size());
        }
        for (int i = 0; i < roots.size(); i++) {
            hostPath("poolStorageRoots[" + i + "].path", roots.get(i) == null ? null : roots.get(i).path);
            String p = roots.get(i).path;
            // mounted at their host path: they must not cover the container's own directories
            for (String own : List.of(Workloads.TMP_PATH, Workloads.DATA_PATH, SHM_PATH)) {
                if (p.equals(own) || p.startsWith(own + "/") || own.startsWith(p.endsWith("/") ? p : p + "/")) {
                    throw new IllegalArgumentException("spec.dataAgent.poolStorageRoots[" + i + "].path: " + p
                            + " overlaps the agent's " + own);
                }
            }
        }
        if (roots.stream().map(r -> trim(r.path)).distinct().count() != roots.size()) {
            throw new IllegalArgumentException("spec.dataAgent.poolStorageRoots: a path is listed twice");
        }
        KVPoolSpec.SeccompProfile type = spec.seccompProfile == null
                ? KVPoolSpec.SeccompProfile.RuntimeDefault : spec.seccompProfile;
        if ((type == KVPoolSpec.SeccompProfile.Localhost) != (spec.seccompLocalhostProfile != null)) {
            throw new IllegalArgumentException(
                    "spec.dataAgent.seccompLocalhostProfile: set exactly when seccompProfile is Localhost");
        }
        if (spec.seccompLocalhostProfile != null && (spec.seccompLocalhostProfile.length() > 255
                || !RELATIVE_PATH.matcher(spec.seccompLocalhostProfile).matches())) {
            throw new IllegalArgumentException("spec.dataAgent.seccompLocalhostProfile: '" + spec.seccompLocalhostProfile
                    + "' is not a relative path without . or .. segments");
        }
    }

    private static String trim(String path) {
        return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    }

    static void hostPath(String field, String path) {
        if (path == null || path.length() > 255 || !HOST_PATH.matcher(path).matches()) {
            throw new IllegalArgumentException("spec.dataAgent." + field + ": '" + path
                    + "' is not an absolute path of A-Z a-z 0-9 . _ - segments without . or .. (at most 255 characters)");
        }
    }

    Map<String, String> nodeSelector() {
        return spec.nodeSelector;
    }
}
