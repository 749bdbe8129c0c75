package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import java.util.ArrayList;
import java.util.List;

/** Status shared by the resources that mirror an object of the control plane (storage, instance group, tenant). */
@JsonInclude(JsonInclude.Include.NON_NULL)
public class ControlPlaneObjectStatus {
    public Long observedGeneration;
    @JsonPropertyDescription("the object's version (ETag) in the control plane after the operator's last write or "
            + "check; unset while the operator has never created or adopted it")
    public Long controlPlaneVersion;
    public List<Condition> conditions = new ArrayList<>();
}
