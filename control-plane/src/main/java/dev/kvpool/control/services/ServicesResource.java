package dev.kvpool.control.services;

import dev.kvpool.control.security.Caller;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.time.Instant;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/services")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "services", description = "Health of the control plane, the metadata-plane replicas and the agents")
public class ServicesResource {
    @Inject
    ServicesService service;
    @Inject
    SecurityIdentity identity;

    @GET
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "The services and their status",
            description = "A metadata-plane replica is DOWN when its last stats report is older than three of its "
                    + "report periods. A tenant gets no urls. No data agent reports yet: agents is empty.")
    public ServicesService.ServicesView services() {
        return service.view(Caller.of(identity), Instant.now());
    }
}
