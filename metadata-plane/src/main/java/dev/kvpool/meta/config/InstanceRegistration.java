package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.registry.Instance;
import java.io.IOException;
import java.util.function.Consumer;

/**
 * Registration in the control plane: an instance registered through this plane is created there first (the
 * control plane owns the configuration, and checks the group's limits), and only then here.
 */
final class InstanceRegistration {
    private final ControlPlaneClient client;
    /** Told the id of each instance the control plane accepted (this runs under the registry's lock). */
    private final Consumer<String> registered;

    InstanceRegistration(ControlPlaneClient client, Consumer<String> registered) {
        this.client = client;
        this.registered = registered;
    }

    /**
     * Registers the instance in the control plane before it exists here (idempotent there). Its refusals become
     * {@link MetaException}s whose kinds the KVCM adapters map to the codes of §3.1.1; nothing is created locally
     * then.
     */
    void register(RegisterInstanceRequest req, InstanceInfo info) {
        ObjectNode body = ControlPlaneClient.JSON.createObjectNode();
        body.put("instanceId", req.getInstanceId());
        body.put("group", req.getInstanceGroup());
        body.put("blockSize", req.getBlockSize());
        String scheme = Instance.hashingOf(req.getModelDeployment().getExtra())[0];
        if (!"kvcm".equals(scheme)) {
            body.put("hashScheme", scheme);
        }
        try {
            JsonNode full = ControlPlaneClient.JSON.readTree(ProtoJson.print(info));
            body.set("modelDeployment", full.path("model_deployment"));
            body.set("locationSpecInfos", full.path("location_spec_infos").isArray() ? full.get("location_spec_infos")
                    : ControlPlaneClient.JSON.createArrayNode());
            body.set("locationSpecGroups", full.path("location_spec_groups").isArray()
                    ? full.get("location_spec_groups") : ControlPlaneClient.JSON.createArrayNode());
        } catch (IOException e) {
            throw MetaException.internal("cannot encode the instance for the control plane: " + e.getMessage());
        }
        ControlPlaneClient.Reply r;
        try {
            r = client.post("/api/v1/instances", body);
        } catch (IOException e) {
            throw new MetaException(MetaException.Kind.NOT_READY, "instance '" + req.getInstanceId()
                    + "' not registered: the control plane " + client.url + " is unreachable ("
                    + dev.kvpool.api.client.KvcmHttpClient.describe(e) + ")");
        }
        if (r.ok()) {
            // not into the model here: this runs under the registry's lock, the model's lock is taken before it
            // elsewhere; the Instance event (or the next resync) brings it
            registered.accept(req.getInstanceId());
            return;
        }
        String why = "control plane refused instance '" + req.getInstanceId() + "': " + r.detail();
        String field = r.body().path("field").asText("");
        MetaException.Kind kind = switch (r.status()) {
            case 409 -> field.equals("group") || why.contains("maxInstanceCount") || why.contains("full")
                    ? MetaException.Kind.CAPACITY : MetaException.Kind.DUPLICATE;
            case 400, 422 -> field.equals("group") ? MetaException.Kind.INTERNAL : MetaException.Kind.INVALID;
            case 401, 403 -> MetaException.Kind.INTERNAL;
            default -> MetaException.Kind.INTERNAL;
        };
        throw new MetaException(kind, why);
    }
}
