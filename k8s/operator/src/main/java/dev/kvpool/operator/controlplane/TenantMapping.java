package dev.kvpool.operator.controlplane;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPoolTenant;
import java.util.List;
import java.util.TreeSet;

/**
 * KVPoolTenant spec → the control plane's account JSON ({@code AccountInput}) with role {@code tenant}. Pure. The
 * password is never part of the compared object: the control plane cannot return it; it is added only to the body of
 * a write ({@link #withPassword}).
 */
public final class TenantMapping {
    public static final String COLLECTION = "/api/v1/accounts";
    public static final String ROLE = "tenant";
    /** The control plane's bound on a tenant's groups (AccountService.MAX_GROUPS). */
    static final int MAX_GROUPS = 1024;

    private TenantMapping() {
    }

    public static String name(KVPoolTenant r) {
        return r.getSpec().name != null ? r.getSpec().name : r.getMetadata().getName();
    }

    public static ObjectNode desired(KVPoolTenant r) throws InvalidSpec {
        List<String> groups = r.getSpec().groups == null ? List.of() : r.getSpec().groups;
        if (groups.size() > MAX_GROUPS) {
            throw new InvalidSpec("spec.groups may hold at most " + MAX_GROUPS + " entries, got " + groups.size());
        }
        ObjectNode n = ControlPlaneApi.JSON.createObjectNode();
        n.put("name", name(r));
        n.put("role", ROLE);
        ArrayNode g = n.putArray("groups");
        // the control plane keeps them as a sorted set
        new TreeSet<>(groups).forEach(g::add);
        return n;
    }

    public static ObjectNode withPassword(ObjectNode desired, String password) {
        return desired.deepCopy().put("password", password);
    }

    public static List<String> drift(ObjectNode desired, JsonNode actual) {
        return Drift.changes(desired, actual);
    }

    /** Why an existing account must not be taken over, or null: only tenant accounts are managed as tenants. */
    public static String adoptionRefusal(JsonNode actual) {
        String role = actual.path("role").asText("");
        return role.equals(ROLE) ? null : "account '" + actual.path("name").asText() + "' already exists with role '"
                + role + "'; a KVPoolTenant manages tenant accounts only and will not turn it into one";
    }
}
