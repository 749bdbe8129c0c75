package dev.kvpool.control.security;

import jakarta.annotation.security.PermitAll;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The JWKS where OIDC-style verifiers look for it. */
@Path("/.well-known")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "auth")
public class WellKnownResource {
    @Inject
    SigningKeys keys;

    @GET
    @Path("jwks.json")
    @PermitAll
    @Operation(summary = "The JWKS (same as GET /api/v1/auth/jwks)")
    public Response jwks() {
        return Response.ok(keys.jwks(Instant.now())).header("Cache-Control", "max-age=60").build();
    }
}
