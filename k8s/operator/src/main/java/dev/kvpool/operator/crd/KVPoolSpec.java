package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import java.util.List;
import java.util.Map;

@JsonInclude(JsonInclude.Include.NON_NULL)
public class KVPoolSpec {
    /**
     * A sane bound on control-plane replicas: they share one PostgreSQL and one leader lease; more replicas add
     * read capacity and availability, and nothing past a handful.
     */
    public static final int CONTROL_PLANE_MAX_REPLICAS = 9;

    @Required
    @Pattern("^[0-9A-Za-z][0-9A-Za-z._+-]{0,127}$")
    @JsonPropertyDescription("KVPool version, the tag of the images unless image is set")
    public String version;

    @JsonPropertyDescription("image repository of the KVPool services (default ghcr.io/kvpool); the tag is version")
    public String image;

    @JsonPropertyDescription("the control plane: storages, groups, accounts, quotas (REST 6492, gRPC 6491)")
    public ControlPlane controlPlane = new ControlPlane();

    @JsonPropertyDescription("the metadata plane: the KVCM meta API and the block index")
    public MetadataPlane metadataPlane = new MetadataPlane();

    @JsonPropertyDescription("the data agents, one per GPU node (DaemonSet)")
    public DataAgent dataAgent;

    @JsonPropertyDescription("NetworkPolicies around the pool's pods and its managed engines")
    public Network network;

    @JsonPropertyDescription("ServiceMonitor, PrometheusRule and Grafana dashboard")
    public Monitoring monitoring;

    @Required
    @JsonPropertyDescription("the engines KVPool stores its state in")
    public Engines engines;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class ControlPlane {
        @Min(1)
        @Max(CONTROL_PLANE_MAX_REPLICAS)
        @Default("1")
        @JsonPropertyDescription("replicas (default 1, at most 9). More than one: the replicas elect a leader "
                + "through PostgreSQL (a lease row) that runs the once-only work, every replica serves requests; "
                + "needs spec.engines.postgres (with H2 each pod would keep its own database)")
        public Integer replicas = 1;
        public ResourceRequirements resources;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class MetadataPlane {
        @Min(1)
        @Default("2")
        @JsonPropertyDescription("replicas (default 2: the metadata plane is on every request's path)")
        public Integer replicas = 2;
        public ResourceRequirements resources;
    }

    /**
     * The data agent DaemonSet. Node paths are host paths, so they are checked here (absolute, no {@code .} or
     * {@code ..} segment) and again by the model, which also sees KVPools the API server never validated.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "(has(self.seccompProfile) && self.seccompProfile == 'Localhost') == has(self.seccompLocalhostProfile)",
            message = "seccompLocalhostProfile is set exactly when seccompProfile is Localhost")
    public static class DataAgent {
        @Default("true")
        @JsonPropertyDescription("run the data agents (default true)")
        public Boolean enabled = true;
        @JsonPropertyDescription("the nodes that run a data agent (GPU nodes)")
        public Map<String, String> nodeSelector;
        @Size(max = 32)
        public List<Toleration> tolerations;
        @JsonPropertyDescription("size of the memory-backed /dev/shm of the agent, and of its shared segment (default 1Gi);"
                + " counted against the pod's memory")
        public Quantity shmSize;
        @Pattern(HOST_PATH)
        @Size(max = 255)
        @JsonPropertyDescription("a host directory (e.g. /dev/shm/kvpool) mounted as the agent's /dev/shm instead of a"
                + " memory emptyDir: engine pods that mount the same directory at /dev/shm map the agent's segment;"
                + " not bounded by shmSize")
        public String shmHostPath;
        @JsonPropertyDescription("host tier (G2) memory, split into hostRegions equal regions (default: the agent's 2 x 128Mi)")
        public Quantity hostMemory;
        @Min(1)
        @Max(64)
        @JsonPropertyDescription("number of host memory regions (default 2)")
        public Integer hostRegions;
        @Size(max = 16)
        @JsonPropertyDescription("NVMe tier (G3) directories, one per disk; none: no NVMe tier")
        public List<NvmeDir> nvmeDirs;
        @JsonPropertyDescription("size of the slot file in each NVMe directory (default 1Gi)")
        public Quantity nvmeDeviceSize;
        @Size(max = 8)
        @JsonPropertyDescription("host directories of the file storages of the global pool (each storage's root_path, as"
                + " the node mounts it); none: the global pool tier (G4) is off")
        public List<HostDirectory> poolStorageRoots;
        @Default("RuntimeDefault")
        @JsonPropertyDescription("seccomp profile of the agent: RuntimeDefault (default; blocks io_uring on recent"
                + " containerd and Docker, the agent then uses O_DIRECT FileChannel I/O), Localhost (a profile that"
                + " also allows io_uring_setup/enter/register, see seccompLocalhostProfile) or Unconfined")
        public SeccompProfile seccompProfile = SeccompProfile.RuntimeDefault;
        @Pattern(RELATIVE_PATH)
        @Size(max = 255)
        @JsonPropertyDescription("the profile file, relative to the kubelet's seccomp directory (with seccompProfile Localhost)")
        public String seccompLocalhostProfile;
        @Default("false")
        @JsonPropertyDescription("add CAP_IPC_LOCK so pinned buffers (io_uring fixed buffers) are not bounded by the"
                + " runtime's RLIMIT_MEMLOCK; the agent then runs as root (a non-root process gets no added capability)")
        public Boolean lockMemory = false;
        @Default("false")
        @JsonPropertyDescription("run the agent privileged (never needed by the agent itself; default false)")
        public Boolean privileged = false;
        @Min(0)
        @Max(16)
        @Default("0")
        @JsonPropertyDescription("GPUs (nvidia.com/gpu) the agent requests for its GPU tier (G1); 0 (default): no GPU tier")
        public Integer gpus = 0;
        public ResourceRequirements resources;
    }

    /** Paths on the node: absolute, segments of A-Z a-z 0-9 . _ -, none of them "." or "..". */
    public static final String HOST_PATH = "^(/(\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+))+/?$";
    /** A path below a base directory: as {@link #HOST_PATH} but relative. */
    public static final String RELATIVE_PATH =
            "^(\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+)(/(\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+))*$";

    public enum SeccompProfile { RuntimeDefault, Unconfined, Localhost }

    /** One NVMe directory: a host directory, or a volume claimed per pod from a local-PV storage class. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.hostPath) != has(self.storageClassName)",
            message = "set exactly one of hostPath and storageClassName")
    @ValidationRule(value = "has(self.storageClassName) == has(self.size)",
            message = "size goes with storageClassName")
    public static class NvmeDir {
        @Pattern(HOST_PATH)
        @Size(max = 255)
        @JsonPropertyDescription("a directory on the node (created if missing); its blocks outlive the pod")
        public String hostPath;
        @Pattern(Names.K8S_NAME)
        @JsonPropertyDescription("a local-PV storage class (WaitForFirstConsumer): a volume per pod, deleted with the pod")
        public String storageClassName;
        @JsonPropertyDescription("size of the per-pod volume (with storageClassName)")
        public Quantity size;

        public NvmeDir() {
        }

        public static NvmeDir hostPath(String path) {
            NvmeDir d = new NvmeDir();
            d.hostPath = path;
            return d;
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class HostDirectory {
        @Required
        @Pattern(HOST_PATH)
        @Size(max = 255)
        public String path;

        public HostDirectory() {
        }

        public HostDirectory(String path) {
            this.path = path;
        }
    }

    /**
     * NetworkPolicies: ingress to the pool's pods is denied except what these allow. Each list holds NetworkPolicy
     * peers (podSelector / namespaceSelector / ipBlock).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Network {
        @Default("true")
        @JsonPropertyDescription("create the NetworkPolicies (default true)")
        public Boolean policies = true;
        @Size(max = 16)
        @JsonPropertyDescription("the inference engines: reach the metadata plane (6382, 6381) and the data agents (6390);"
                + " default: every pod in namespaces labelled kvpool.dev/pool=<pool>")
        public List<NetworkPolicyPeer> engines;
        @Size(max = 16)
        @JsonPropertyDescription("console and REST users of the control plane (6492); default: none (kubectl port-forward"
                + " is not subject to NetworkPolicies)")
        public List<NetworkPolicyPeer> adminFrom;
        @Size(max = 16)
        @JsonPropertyDescription("the KVPool operator (control plane 6492); default: pods app.kubernetes.io/name=kvpool-operator"
                + " in the namespace kvpool-system")
        public List<NetworkPolicyPeer> operatorFrom;
        @Size(max = 16)
        @JsonPropertyDescription("Prometheus (the metrics ports 6492, 6382, 6389); default: every pod in namespaces"
                + " labelled kvpool.dev/monitoring=true")
        public List<NetworkPolicyPeer> monitoringFrom;
    }

    /**
     * Prometheus-operator objects are off by default: on a cluster without the monitoring.coreos.com CRDs, applying
     * them fails. The dashboard is a ConfigMap, which every cluster takes.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Monitoring {
        @Default("false")
        @JsonPropertyDescription("a ServiceMonitor for the three services (needs the prometheus-operator CRDs; default false)")
        public Boolean serviceMonitor = false;
        @Default("false")
        @JsonPropertyDescription("a PrometheusRule with KVPool's alerts (needs the prometheus-operator CRDs; default false)")
        public Boolean prometheusRule = false;
        @Default("true")
        @JsonPropertyDescription("a ConfigMap with the Grafana dashboard, labelled grafana_dashboard=1 (default true)")
        public Boolean dashboard = true;
        @Pattern("^[1-9][0-9]{0,3}(s|m)$")
        @Default("30s")
        @JsonPropertyDescription("scrape interval (default 30s)")
        public String interval = "30s";
        @JsonPropertyDescription("extra labels on the ServiceMonitor and PrometheusRule (e.g. the release label a"
                + " Prometheus selects them by)")
        public Map<String, String> labels;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Engines {
        @Required
        public Postgres postgres;
        @Required
        public Kafka kafka;
        @Required
        public Redis redis;
    }

    /** Either an existing database (secretRef) or one the operator runs (managed). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.secretRef) != has(self.managed)",
            message = "set exactly one of secretRef and managed")
    public static class Postgres {
        @JsonPropertyDescription("Secret with keys url (jdbc:postgresql://...), username, password")
        public SecretRef secretRef;
        @JsonPropertyDescription("a CloudNativePG Cluster <pool>-postgres (needs the CloudNativePG operator)")
        public ManagedPostgres managed;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.bootstrap) != has(self.managed)",
            message = "set exactly one of bootstrap and managed")
    @ValidationRule(value = "!has(self.secretRef) || has(self.bootstrap)",
            message = "secretRef goes with bootstrap")
    public static class Kafka {
        @JsonPropertyDescription("bootstrap servers of an existing cluster, host:port[,host:port...]")
        @Pattern("^[^,\\s]+(,[^,\\s]+)*$")
        @Size(max = 2048)
        public String bootstrap;
        @JsonPropertyDescription("Secret whose keys are Kafka client properties (security.protocol, sasl.*, ssl.*), "
                + "mounted into every service; see k8s/engines.md")
        public SecretRef secretRef;
        @JsonPropertyDescription("a Strimzi Kafka <pool>-kafka in KRaft mode, with its topics (needs the Strimzi "
                + "operator)")
        public ManagedKafka managed;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.urlSecretRef) != has(self.managed)",
            message = "set exactly one of urlSecretRef and managed")
    public static class Redis {
        @JsonPropertyDescription("Secret key holding redis://[user:password@]host:port")
        public SecretKeyRef urlSecretRef;
        @JsonPropertyDescription("a single Valkey <pool>-valkey (StatefulSet) with a generated password")
        public ManagedRedis managed;
    }

    /** What every engine the operator runs itself takes; production points at existing engines instead. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Managed {
        @JsonPropertyDescription("container image (default: the CloudNativePG or Strimzi operator's own; "
                + "Valkey docker.io/valkey/valkey:8.1)")
        @Size(max = 512)
        @Pattern("^[^\\s]+$")
        public String image;
        @JsonPropertyDescription("size of each PersistentVolumeClaim (default 10Gi)")
        public Quantity storage;
        @JsonPropertyDescription("StorageClass of the claims (default: the cluster's default class)")
        @Pattern(Names.K8S_NAME)
        public String storageClassName;
        public ResourceRequirements resources;
    }

    /** A CloudNativePG Cluster; database and owner are kvpool. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class ManagedPostgres extends Managed {
        @Min(1)
        @Max(9)
        @Default("1")
        @JsonPropertyDescription("PostgreSQL instances: one primary, the rest streaming replicas (default 1)")
        public Integer instances = 1;
    }

    /** A Strimzi Kafka in KRaft mode: one node pool of combined controller+broker nodes. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "!has(self.metadataVersion) || has(self.version)",
            message = "metadataVersion goes with version (a metadata version belongs to one Kafka version)")
    public static class ManagedKafka extends Managed {
        @Min(1)
        @Max(9)
        @Default("1")
        @JsonPropertyDescription("Kafka nodes, each controller and broker (default 1; 3 for replicated topics)")
        public Integer replicas = 1;
        @Pattern("^[0-9]+\\.[0-9]+\\.[0-9]+$")
        @JsonPropertyDescription("Kafka version (default: the Strimzi operator's default)")
        public String version;
        @Pattern("^[0-9]+\\.[0-9]+-IV[0-9]+$")
        @JsonPropertyDescription("KRaft metadata version, e.g. 3.9-IV0 (default: the version's own)")
        public String metadataVersion;
    }

    /** One Valkey node (no replication, no failover): for trials and small pools. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class ManagedRedis extends Managed {
    }
}
