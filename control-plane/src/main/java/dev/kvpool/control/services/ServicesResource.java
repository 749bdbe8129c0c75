package dev.kvpool.control.services;

import dev.kvpool.control.security.Caller;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
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
                    + "report periods, a data agent when its last heartbeat is. A tenant gets no urls.")
    public ServicesService.ServicesView services() {
        return service.view(Caller.of(identity), Instant.now());
    }

    @Schema(name = "AgentHeartbeat", example = """
            {"kind": "agent", "id": "host-6390", "url": "http://host:6390", "version": "0.1.0",
             "startedAt": "2026-11-27T10:00:00Z", "periodSeconds": 10,
             "tiers": {"host": {"capacityBytes": 268435456, "usedBytes": 1048576, "blocks": 4},
                       "nvme": {"capacityBytes": 1073741824, "usedBytes": 0, "blocks": 0}}}""")
    public record HeartbeatBody(String kind, String id, String url, String version, Instant startedAt,
                                Integer periodSeconds, Map<String, ServicesService.TierView> tiers) {
    }

    @POST
    @Path("heartbeat")
    @Consumes(MediaType.APPLICATION_JSON)
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "A data agent's heartbeat (each agent with a control-plane URL posts one every period)",
            description = "Records the agent as seen now with its tiers' capacity, usage and blocks; it is DOWN "
                    + "in GET /api/v1/services once three periods pass without one. At most 16 tiers, names "
                    + "[a-z0-9_-]{1,32}, counts 0 to 2^53.")
    public Response heartbeat(HeartbeatBody b) {
        service.agentHeartbeat(b == null ? null : new ServicesService.AgentHeartbeat(b.kind(), b.id(), b.url(),
                b.version(), b.startedAt(), b.periodSeconds(), b.tiers()), Instant.now());
        return Response.noContent().build();
    }
}
