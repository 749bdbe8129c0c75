package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
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
        public Managed managed;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.bootstrap) != has(self.managed)",
            message = "set exactly one of bootstrap and managed")
    @ValidationRule(value = "!has(self.secretRef) || has(self.bootstrap)",
            message = "secretRef goes with bootstrap")
    public static class Kafka {
        @JsonPropertyDescription("bootstrap servers of an existing cluster, host:port[,host:port...]")
        @Pattern("^[^,\\s]+(,[^,\\s]+)*$")
        public String bootstrap;
        @JsonPropertyDescription("Secret with client properties (keys sasl.jaas.config, security.protocol, ...)")
        public SecretRef secretRef;
        public Managed managed;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "has(self.urlSecretRef) != has(self.managed)",
            message = "set exactly one of urlSecretRef and managed")
    public static class Redis {
        @JsonPropertyDescription("Secret key holding redis://[user:password@]host:port")
        public SecretKeyRef urlSecretRef;
        public Managed managed;
    }

    /** An engine the operator runs itself, for trials; production points at an existing one. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Managed {
        public String image;
        @JsonPropertyDescription("size of the PersistentVolumeClaim (e.g. 10Gi)")
        public Quantity storage;
        public String storageClassName;
        public ResourceRequirements resources;
    }
}
