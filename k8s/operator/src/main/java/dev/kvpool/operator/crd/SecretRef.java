package dev.kvpool.operator.crd;

import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;

/** A Secret in the namespace of the resource. */
public class SecretRef {
    @Required
    @Pattern(Names.K8S_NAME)
    public String name;

    public SecretRef() {
    }

    public SecretRef(String name) {
        this.name = name;
    }
}
