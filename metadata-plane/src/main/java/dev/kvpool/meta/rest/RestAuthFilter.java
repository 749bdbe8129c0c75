package dev.kvpool.meta.rest;

import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;

/**
 * With tokens on (control-plane sync or kvpool.meta.auth.public-key), KVPool's REST routes under /api/v1 need an
 * admin or operator token: 401 without a valid one, 403 for another role. /q/health and /q/metrics stay open.
 */
@Provider
public class RestAuthFilter implements ContainerRequestFilter {
    @Inject
    MetaRuntime runtime;

    @Override
    public void filter(ContainerRequestContext ctx) {
        MetaAuth auth = runtime.auth();
        if (auth == null) {
            return;
        }
        String path = ctx.getUriInfo().getPath();
        if (!path.startsWith("/api/v1") && !path.startsWith("api/v1")) {
            return;
        }
        MetaAuth.Refusal r = auth.checkAdmin(ctx.getHeaderString("Authorization"));
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
