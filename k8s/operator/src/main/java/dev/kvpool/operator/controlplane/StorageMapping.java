package dev.kvpool.operator.controlplane;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPoolStorage;

/** KVPoolStorage spec → the control plane's storage JSON ({@code StorageInput}). Pure. */
public final class StorageMapping {
    public static final String COLLECTION = "/api/v1/storages";
    /** Bytes of the free-form spec (the API server bounds the whole object; this keeps Events and requests small). */
    static final int MAX_SPEC_JSON = 16 * 1024;

    private StorageMapping() {
    }

    public static String name(KVPoolStorage r) {
        return r.getSpec().name != null ? r.getSpec().name : r.getMetadata().getName();
    }

    public static ObjectNode desired(KVPoolStorage r) throws InvalidSpec {
        KVPoolStorage.Spec s = r.getSpec();
        if (s.type == null) {
            throw new InvalidSpec("spec.type is required");
        }
        if (s.spec == null || !s.spec.isObject()) {
            throw new InvalidSpec("spec.spec must be an object of the type's settings (e.g. root_path for nfs)");
        }
        if (s.spec.toString().length() > MAX_SPEC_JSON) {
            throw new InvalidSpec("spec.spec is larger than " + MAX_SPEC_JSON + " bytes of JSON");
        }
        ObjectNode n = ControlPlaneApi.JSON.createObjectNode();
        n.put("name", name(r));
        n.put("type", s.type);
        n.put("enabled", s.enabled == null || s.enabled);
        // written always: the control plane takes an absent value as false, so Git states it either way
        n.put("checkAvailableWhenOpen", Boolean.TRUE.equals(s.checkAvailableWhenOpen));
        n.set("spec", s.spec.deepCopy());
        return n;
    }

    /** The fields the control plane's storage has and the spec disagrees with. */
    public static java.util.List<String> drift(ObjectNode desired, JsonNode actual) {
        return Drift.changes(desired, actual);
    }
}
