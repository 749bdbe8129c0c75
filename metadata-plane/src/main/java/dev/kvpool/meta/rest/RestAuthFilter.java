package dev.kvpool.meta.rest;

import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;

/**
 * KVPool's REST routes under /api/v1 answer 503 until start-up has recovered. With tokens on (control-plane sync or
 * kvpool.meta.auth.public-key) they need an admin or operator token: 401 without a valid one, 403 for another role;
 * a tenant token may also read one instance of its groups, ask which of a prompt's blocks it has cached, score
 * engine pods for a prompt and read an instance's engine caches ({@link #tenantInstance}).
 * /q/health and /q/metrics stay open.
 */
@Provider
public class RestAuthFilter implements ContainerRequestFilter {
    @Inject
    MetaRuntime runtime;

    /**
     * The instance id of the two routes a tenant may use on its own groups' instances ("why does this prompt miss?"):
     * {@code GET /api/v1/instances/{id}} and {@code POST /api/v1/instances/{id}/block-keys}; else null.
     */
    static String tenantInstance(ContainerRequestContext ctx) {
        java.util.List<jakarta.ws.rs.core.PathSegment> segs = ctx.getUriInfo().getPathSegments();
        java.util.List<String> p = segs.stream().map(jakarta.ws.rs.core.PathSegment::getPath)
                .filter(s -> !s.isEmpty()).toList();
        String engine = engineInstance(p, ctx.getMethod());
        if (engine != null) {
            return engine;
        }
        if (p.size() < 4 || !p.get(0).equals("api") || !p.get(1).equals("v1") || !p.get(2).equals("instances")) {
            return null;
        }
        String method = ctx.getMethod();
        if (p.size() == 4 && method.equals("GET")) {
            return p.get(3);
        }
        if (p.size() == 5 && p.get(4).equals("block-keys") && method.equals("POST")) {
            return p.get(3);
        }
        return null;
    }

    /**
     * The engine routes a tenant may use: {@code GET /api/v1/engine/instances/{id}/cache} (that instance) and
     * {@code POST /api/v1/engine/scores}, whose instance is in the body: "" here lets any valid admin, operator or
     * tenant token through (no instance is named ""), and the resource checks the body's instance itself.
     */
    private static String engineInstance(java.util.List<String> p, String method) {
        if (p.size() < 4 || !p.get(0).equals("api") || !p.get(1).equals("v1") || !p.get(2).equals("engine")) {
            return null;
        }
        if (p.size() == 4 && p.get(3).equals("scores") && method.equals("POST")) {
            return "";
        }
        if (p.size() == 6 && p.get(3).equals("instances") && p.get(5).equals("cache") && method.equals("GET")) {
            return p.get(4);
        }
        return null;
    }

    @Override
    public void filter(ContainerRequestContext ctx) {
        String path = ctx.getUriInfo().getPath();
        if (!path.startsWith("/api/v1") && !path.startsWith("api/v1")) {
            return;
        }
        if (!runtime.ready()) { // usage and slots may be mid-rebuild: no figures, no changes until it ends
            ctx.abortWith(Response.status(503).type("application/problem+json").header("Retry-After", "5")
                    .entity(new BlockKeysResource.Problem("about:blank", "Service Unavailable", 503,
                            "the metadata plane is starting (" + runtime.phase().label + "); /q/health/started shows "
                                    + "its progress"))
                    .build());
            return;
        }
        MetaAuth auth = runtime.auth();
        if (auth == null) {
            return;
        }
        String instance = tenantInstance(ctx);
        MetaAuth.Refusal r = instance != null ? auth.checkInstance(ctx.getHeaderString("Authorization"), instance)
                : auth.checkAdmin(ctx.getHeaderString("Authorization"));
        if (r != null) {
            int status = r.unauthenticated() ? 401 : 403;
            Response.ResponseBuilder b = Response.status(status).type("application/problem+json")
                    .entity(new BlockKeysResource.Problem("about:blank",
                            Response.Status.fromStatusCode(status).getReasonPhrase(), status, r.message()));
            if (r.unauthenticated()) {
                b.header("WWW-Authenticate", "Bearer realm=\"kvpool\"");
            }
            ctx.abortWith(b.build());
        }
    }
}
