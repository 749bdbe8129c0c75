package dev.kvpool.control.leader;

import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/leader")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "services", description = "Health of the control plane, the metadata-plane replicas and the agents")
public class LeaderResource {
    @Inject
    Leadership leadership;

    /** One replica's view of the election; every replica answers (ask each to see them all). */
    public record LeaderView(String nodeId, boolean leader, String leaderNodeId, long epoch, long leaseExpiresAtMs,
                             long lastLoopMillis, boolean healthy, String lastError, long leaseMs, long loopIntervalMs,
                             long safetyMarginMs, long campaignDelayMs, long campaignDelayLeftMs) {
    }

    @GET
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "This replica's view of the control-plane leader election",
            description = "nodeId (this replica), leader (whether it leads now: it holds the lease row and its "
                    + "self-fencing deadline has not passed), leaderNodeId (the holder of the unexpired lease as last "
                    + "read, \"\" when none), epoch (the term's fencing token: it grows with every new term), "
                    + "leaseExpiresAtMs (the lease's expiry, epoch ms of the database's clock), lastLoopMillis (when "
                    + "the election loop last finished an attempt), healthy (the loop is fresh and reached the "
                    + "database), the settings, and the campaign delay a KVCM LeaderDemote applies.")
    public LeaderView view() {
        LeaseElector.Settings s = leadership.settings();
        return new LeaderView(leadership.nodeId(), leadership.isLeader(), leadership.leaderNodeId(),
                leadership.epoch(), leadership.leaseExpiresAtMs(), leadership.lastLoopMillis(), leadership.healthy(),
                leadership.lastError(), s.leaseMs(), s.loopMs(), s.marginMs(), leadership.campaignDelayMs(),
                leadership.campaignDelayLeftMs());
    }
}
