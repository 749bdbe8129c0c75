package dev.kvpool.control.usage;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Page;
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
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/usage")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "usage", description = "Usage history reported by the metadata plane")
public class UsageResource {
    @Inject
    UsageService service;
    @Inject
    GroupService groups;
    @Inject
    SecurityIdentity identity;

    @Schema(name = "UsageReport", example = """
            {"samples": [{"group": "search", "storageType": "nfs", "usedBytes": 1073741824,
                          "timestamp": "2026-11-23T01:00:00Z"}]}""")
    public record UsageBatch(List<UsageService.Report> samples) {
    }

    public record SampleView(String group, String storageType, long usedBytes, Instant timestamp) {
    }

    @POST
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Report usage samples (the metadata plane posts these periodically)")
    public Response report(UsageBatch b) {
        int n = service.record(b == null ? null : b.samples(), groups::exists);
        return Response.accepted(Map.of("accepted", n)).build();
    }

    @GET
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "Usage history (a tenant sees its groups)",
            description = "Filter by group, storageType, since/until (ISO-8601); paged, oldest first")
    public Page<SampleView> history(@QueryParam("group") String group, @QueryParam("storageType") String type,
                                    @QueryParam("since") String since, @QueryParam("until") String until,
                                    @QueryParam("page") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String page,
                                    @QueryParam("size") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String size) {
        Caller c = Caller.of(identity);
        if (group != null) {
            Inputs.name(Identifiers.Kind.GROUP, "group", group);
            c.requireGroup(group);
        }
        List<SampleView> all = service.history(group, type, instant("since", since), instant("until", until)).stream()
                .filter(u -> c.canSeeGroup(u.groupName))
                .map(u -> new SampleView(u.groupName, u.storageType, u.usedBytes, u.sampledAt)).toList();
        return Page.of(all, x -> true, page, size, 100);
    }

    private static Instant instant(String f, String v) {
        Instant t;
        try {
            t = v == null ? null : Instant.parse(v);
        } catch (DateTimeParseException e) {
            throw ApiException.invalid(f, f + " must be an ISO-8601 instant such as 2026-11-23T01:00:00Z");
        }
        // a year the database cannot hold would fail the query (500) rather than match nothing
        if (t != null && (t.isBefore(UsageService.EARLIEST) || t.isAfter(UsageService.LATEST))) {
            throw ApiException.invalid(f, f + " must be between " + UsageService.EARLIEST + " and "
                    + UsageService.LATEST + ", got " + t);
        }
        return t;
    }
}
