package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.ArrayList;
import java.util.List;

/** A tenant account of a KVPool and the instance groups it may use (label {@value Names#POOL_LABEL}). */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvpt")
public class KVPoolTenant extends CustomResource<KVPoolTenant.Spec, KVPoolTenant.Status> implements Namespaced {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Spec {
        @Pattern(Names.ACCOUNT)
        @JsonPropertyDescription("account name in KVPool; defaults to metadata.name")
        public String name;

        @JsonPropertyDescription("instance groups this tenant may use")
        public List<String> groups = new ArrayList<>();

        @Required
        @JsonPropertyDescription("Secret key holding the account's password")
        public SecretKeyRef passwordSecretRef;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Status {
        public Long observedGeneration;
        public List<Condition> conditions = new ArrayList<>();
    }
}
