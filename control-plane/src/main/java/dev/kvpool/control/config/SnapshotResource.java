package dev.kvpool.control.config;

import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/config/snapshot")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "config", description = "What the metadata plane starts from")
public class SnapshotResource {
    @Inject
    SnapshotService service;

    @GET
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Storages, groups (quotas, water levels, policies, KVCM form) and instances, with the outbox "
            + "position", description = "Start from this, then consume kvpool.config and skip records whose ce_position "
            + "header is <= position.")
    public SnapshotService.Snapshot snapshot() {
        return service.take();
    }
}
