package dev.kvpool.operator.crd;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import java.util.ArrayList;
import java.util.List;

@JsonInclude(JsonInclude.Include.NON_NULL)
public class KVPoolStatus {
    public Long observedGeneration;
    public List<Condition> conditions = new ArrayList<>();
    public Endpoints endpoints;
    public Versions versions;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Endpoints {
        @JsonPropertyDescription("control plane REST/admin HTTP, http://host:6492")
        public String controlPlaneHttp;
        @JsonPropertyDescription("control plane admin gRPC, host:6491")
        public String controlPlaneGrpc;
        @JsonPropertyDescription("metadata plane (KVCM meta API)")
        public String metadataPlane;
        public String console;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public static class Versions {
        public String controlPlane;
        public String metadataPlane;
        public String dataAgent;
    }
}
