package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.ArrayList;
import java.util.List;

/** A tenant account of a KVPool and the instance groups it may use (spec.pool names the pool). */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvpt")
public class KVPoolTenant extends CustomResource<KVPoolTenant.Spec, KVPoolTenant.Status> implements Namespaced {

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
    public static class Status extends ControlPlaneObjectStatus {
        @JsonPropertyDescription("uid/resourceVersion of the password Secret the password was last set from (never "
                + "the password or a hash of it); a new value changes the password")
        public String passwordSecretVersion;
    }
}
