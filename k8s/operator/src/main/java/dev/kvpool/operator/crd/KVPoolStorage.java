package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.crd.generator.annotation.PrinterColumn;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;

/** A storage backend of a KVPool (spec.pool names the pool, in the same namespace). */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvps")
public class KVPoolStorage extends CustomResource<KVPoolStorage.Spec, KVPoolStorage.Status> implements Namespaced {

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
        @JsonPropertyDescription("storage name in KVPool; defaults to metadata.name")
        public String name;

        @Required
        @Pattern("^(nfs|hf3fs|mooncake|tair_mem_pool|vcns_hf3fs)$")
        @PrinterColumn(name = "Type")
        @JsonPropertyDescription("nfs | hf3fs | mooncake | tair_mem_pool | vcns_hf3fs")
        public String type;

        @Required
        @JsonPropertyDescription("type-specific settings, as in the control plane's storage API")
        public JsonNode spec;

        @Default("true")
        public Boolean enabled = true;

        @JsonPropertyDescription("check the storage is reachable when the metadata plane opens it (KVCM's "
                + "check_storage_available_when_open); default false")
        public Boolean checkAvailableWhenOpen;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Status extends ControlPlaneObjectStatus {
    }
}
