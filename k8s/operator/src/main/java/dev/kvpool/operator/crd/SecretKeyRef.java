package dev.kvpool.operator.crd;

import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;

/** One key of a Secret in the namespace of the resource. */
public class SecretKeyRef {
    @Required
    @Pattern(Names.K8S_NAME)
    public String name;

    @Required
    @Default("url")
    @Pattern("^[-._a-zA-Z0-9]+$")
    public String key = "url";

    public SecretKeyRef() {
    }

    public SecretKeyRef(String name, String key) {
        this.name = name;
        this.key = key;
    }
}
