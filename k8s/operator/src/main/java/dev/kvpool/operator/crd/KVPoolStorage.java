package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.crd.generator.annotation.PrinterColumn;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.ArrayList;
import java.util.List;

/** A storage backend of a KVPool (label {@value Names#POOL_LABEL} names the pool). */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvps")
public class KVPoolStorage extends CustomResource<KVPoolStorage.Spec, KVPoolStorage.Status> implements Namespaced {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Spec {
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
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Status {
        public Long observedGeneration;
        public List<Condition> conditions = new ArrayList<>();
    }
}
