package dev.kvpool.api.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * One {@code kvpool.config} record, keyed by {@code name}: a Storage / InstanceGroup / Instance / Account was
 * created, updated or deleted. {@code object} is the new state as the control plane's REST API shows it (null on
 * delete; accounts never carry credentials). Consumers apply an event only when {@code version} is newer than
 * what they hold.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ConfigEvent(
        @JsonProperty("kind") String kind,
        @JsonProperty("name") String name,
        @JsonProperty("action") String action,
        @JsonProperty("version") long version,
        @JsonProperty("object") JsonNode object) {

    public static final String STORAGE = "Storage", INSTANCE_GROUP = "InstanceGroup", INSTANCE = "Instance",
            ACCOUNT = "Account";
    public static final String CREATED = "created", UPDATED = "updated", DELETED = "deleted";
}
