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
import java.util.List;
import java.util.Map;

@JsonInclude(JsonInclude.Include.NON_NULL)
public class KVPoolSpec {
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

    @Required
    @JsonPropertyDescription("the engines KVPool stores its state in")
    public Engines engines;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class ControlPlane {
        @Min(1)
        @Default("1")
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

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class DataAgent {
        @JsonPropertyDescription("the nodes that run a data agent (GPU nodes)")
        public Map<String, String> nodeSelector;
        public List<Toleration> tolerations;
        @JsonPropertyDescription("size of the /dev/shm the agent shares with the inference engine (e.g. 16Gi)")
        public Quantity shmSize;
        public ResourceRequirements resources;
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
