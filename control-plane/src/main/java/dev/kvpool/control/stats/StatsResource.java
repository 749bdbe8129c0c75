package dev.kvpool.control.stats;

import dev.kvpool.control.group.GroupService;
import dev.kvpool.control.security.Caller;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/stats")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "stats", description = "Query, hit, write and eviction counts per instance, as time series")
public class StatsResource {
    @Inject
    StatsService service;
    @Inject
    StatsViews views;
    @Inject
    GroupService groups;
    @Inject
    SecurityIdentity identity;

    @Schema(name = "StatsReport", example = """
            {"replica": {"id": "meta-host-6382", "url": "http://host:6382", "leader": true, "store": "embedded",
                         "version": "0.1.0", "startedAt": "2026-11-27T10:00:00Z", "instances": 3, "keys": 12345,
                         "periodSeconds": 30},
             "intervalEnd": "2026-11-27T10:01:00Z",
             "instances": [{"instance": "i1", "group": "g", "queries": 10, "queriedBlocks": 100, "hitBlocks": 40,
                            "writtenBlocks": 60, "evictedBlocks": {"water_level": 5, "ttl": 0}}]}""")
    public record ReportBody(StatsService.Replica replica, Instant intervalEnd, java.util.List<StatsService.Entry> instances) {
    }

    @POST
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Report counts since the replica's previous report (each metadata-plane replica posts these)",
            description = "Counts are deltas, added to the minute bucket of intervalEnd; the report is also the "
                    + "replica's heartbeat (GET /api/v1/services)")
    public Response report(ReportBody b) {
        int n = service.record(b == null ? null : new StatsService.Report(b.replica(), b.intervalEnd(), b.instances()),
                groups::exists, Instant.now());
        return Response.accepted(Map.of("accepted", n)).build();
    }

    @GET
    @Path("series")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "Counts per time bucket (a tenant: its groups)",
            description = "group and instance narrow it (no group: every group the caller may see, summed); since, "
                    + "until: ISO-8601 instants (default: the last day); step: ISO-8601 duration or 1m|5m|15m|1h|6h|1d "
                    + "(default from the range). Only buckets with data are listed; hitRate = hitBlocks / "
                    + "queriedBlocks, null when nothing was queried.")
    public StatsViews.Series series(@QueryParam("group") String group, @QueryParam("instance") String instance,
                                    @QueryParam("since") String since, @QueryParam("until") String until,
                                    @QueryParam("step") String step) {
        StatsRepository.Scope scope = views.scope(Caller.of(identity), group, instance);
        return views.series(scope, Range.parse(since, until, step, Instant.now()));
    }

    @GET
    @Path("summary")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "What the overview shows, in one call (a tenant: its groups and their instances)")
    public StatsViews.Summary summary() {
        return views.summary(Caller.of(identity), Instant.now());
    }
}
