package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.control.common.ApiException;
import io.quarkus.security.identity.SecurityIdentity;
import java.util.Set;

/** Who is calling: account name, role ({@code admin|operator|tenant}) and, for a tenant, its instance groups. */
public record Caller(String name, String role, Set<String> groups) {
    public static final String GROUPS_ATTRIBUTE = "kvpool.groups";
    /** The verified {@link BearerToken.Claims} of a bearer-token identity (absent for Basic). */
    public static final String CLAIMS_ATTRIBUTE = "kvpool.claims";
    /** Used where KVCM admin enforcement is switched off, and for internal work. */
    public static final Caller SYSTEM = new Caller("system", BearerToken.ADMIN, Set.of());

    @SuppressWarnings("unchecked")
    public static Caller of(SecurityIdentity id) {
        if (id == null || id.isAnonymous()) {
            return null;
        }
        String role = id.hasRole(BearerToken.ADMIN) ? BearerToken.ADMIN
                : id.hasRole(BearerToken.OPERATOR) ? BearerToken.OPERATOR : BearerToken.TENANT;
        Object g = id.getAttribute(GROUPS_ATTRIBUTE);
        return new Caller(id.getPrincipal().getName(), role, g instanceof Set<?> s ? (Set<String>) s : Set.of());
    }

    public boolean isTenant() {
        return BearerToken.TENANT.equals(role);
    }

    public boolean isAdmin() {
        return BearerToken.ADMIN.equals(role);
    }

    public boolean canSeeGroup(String group) {
        return !isTenant() || groups.contains(group);
    }

    public void requireGroup(String group) {
        if (!canSeeGroup(group)) {
            throw ApiException.forbidden("account '" + name + "' is not bound to instance group '" + group + "'");
        }
    }
}
