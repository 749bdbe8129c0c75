package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.crd.generator.annotation.PrinterColumn;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.List;
import java.util.Map;

/** An instance group (quota unit) of a KVPool (spec.pool names the pool, in the same namespace). */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvpig")
public class KVPoolInstanceGroup
        extends CustomResource<KVPoolInstanceGroup.Spec, KVPoolInstanceGroup.Status> implements Namespaced {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    // setting, changing or removing name would orphan the object under its old name
    @ValidationRule(value = "(has(self.name) ? self.name : '') == (has(oldSelf.name) ? oldSelf.name : '')",
            message = "name is immutable (the control plane cannot rename); delete and re-create the resource")
    public static class Spec {
        // A required field rather than the kvpool.dev/pool label: the API server validates it (required, pattern,
        // immutable), and a move between pools shows in a Git diff. Moving would orphan the object in the old pool.
        @Required
        @Pattern(Names.K8S_NAME)
        @ValidationRule(value = "self == oldSelf", message = "pool is immutable; delete and re-create the resource")
        @JsonPropertyDescription("name of the KVPool (same namespace) whose control plane holds this object")
        public String pool;

        @Pattern(Names.IDENTIFIER)
        @JsonPropertyDescription("instance group name in KVPool; defaults to metadata.name")
        public String name;

        @Required
        @Min(1)
        @JsonPropertyDescription("total quota in bytes")
        public Long quotaBytes;

        @JsonPropertyDescription("quota per storage type (nfs, hf3fs, mooncake, tair_mem_pool, vcns_hf3fs) in bytes")
        public Map<String, Long> storageTypeQuotas;

        public WaterLevels waterLevels;

        public Eviction eviction;

        @Required
        @JsonPropertyDescription("storage names, in preference order")
        public List<String> storageCandidates;

        @Min(0)
        @JsonPropertyDescription("0 = unlimited")
        public Long maxInstanceCount;

        @Default("false")
        @JsonPropertyDescription("let KVCM connectors (which send no token) call the metadata plane for this group")
        public Boolean allowAnonymousMeta = false;
    }

    /** Percentages of the quota: eviction starts at soft, writes are refused at hard. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @ValidationRule(value = "!has(self.soft) || !has(self.hard) || self.soft <= self.hard",
            message = "soft must not exceed hard")
    public static class WaterLevels {
        @Min(1)
        @Max(100)
        public Integer soft;
        @Min(1)
        @Max(100)
        public Integer hard;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Eviction {
        @Required
        @Pattern("^(LRU|LFU|TTL|PREFIX_LRU)$")
        public String policy;
        @JsonPropertyDescription("policy parameters: triggerPeriodSeconds, stepSize, stepPercentage, ttlSeconds, "
                + "readerLeaseMs")
        public Map<String, Long> params;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Status extends ControlPlaneObjectStatus {
        @JsonPropertyDescription("usage and water level as the control plane reported them at the last check")
        public Usage usage;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Usage {
        public Long usedBytes;
        @JsonPropertyDescription("usedBytes as a percentage of quotaBytes")
        public Double usedPercent;
        @JsonPropertyDescription("ok | soft (eviction runs) | hard (writes refused)")
        @PrinterColumn(name = "Level")
        public String level;
        public Map<String, Long> usedBytesByStorageType;
    }
}
