package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Required;

/** A status condition, as in Kubernetes' metav1.Condition. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public class Condition {
    public enum Type { Ready, Progressing, Degraded }

    public enum Status { True, False, Unknown }

    @Required
    public Type type;
    @Required
    public Status status;
    @JsonPropertyDescription("CamelCase reason of the last transition")
    public String reason;
    public String message;
    @JsonPropertyDescription("RFC 3339 time of the last status change")
    public String lastTransitionTime;
    public Long observedGeneration;

    public Condition() {
    }

    public Condition(Type type, Status status, String reason, String message, String lastTransitionTime) {
        this.type = type;
        this.status = status;
        this.reason = reason;
        this.message = message;
        this.lastTransitionTime = lastTransitionTime;
    }
}
