package dev.kvpool.meta.rest;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.meta.whatif.WhatIf;
import dev.kvpool.meta.whatif.WhatIfJobs;
import dev.kvpool.meta.whatif.WhatIfTraces;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * What-if capacity on this plane: replays of a trace through the real read, write and reclaim paths
 * ({@link dev.kvpool.meta.sim.PolicySweep}, the replay of {@code ./kvpool bench policies}) for several policies and
 * capacities, as background jobs. Admin and operator only (RestAuthFilter).
 */
@Path("/api/v1/whatif")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "what-if", description = "Hit rate versus capacity by eviction policy, replayed on the real paths")
public class WhatIfResource {
    @Inject
    WhatIf whatIf;

    /** problem+json with the field (and line) it is about. */
    static Response problem(int status, String detail, String field, Long line) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "about:blank");
        m.put("title", Response.Status.fromStatusCode(status).getReasonPhrase());
        m.put("status", status);
        m.put("detail", detail);
        if (field != null) {
            m.put("field", field);
        }
        if (line != null) {
            m.put("line", line);
        }
        return Response.status(status).type("application/problem+json").entity(m).build();
    }

    @GET
    @Path("/traces")
    @Operation(summary = "Traces a what-if can replay", description = "The Mooncake examples (kind example) and "
            + "uploaded Mooncake JSONL traces (kind uploaded): requests, blocks asked, bytes.")
    public List<WhatIfTraces.Entry> traces() {
        return whatIf.traces().list();
    }

    @POST
    @Path("/traces")
    @Consumes(MediaType.WILDCARD)
    @Operation(summary = "Upload a Mooncake JSONL trace", description = "One JSON object per line: {\"timestamp\": "
            + "<ms>, \"hash_ids\": [<block id>, ...]} (input_length optional). Bounded by "
            + "kvpool.meta.whatif.max-trace-bytes (413), -requests and -blocks (400). 400 names the first bad line; "
            + "409 when the name is taken.")
    public Response upload(@QueryParam("name") String name, @HeaderParam("Content-Length") String length,
                           InputStream body) {
        String p = Identifiers.problem(Identifiers.Kind.TRACE, name);
        if (p != null) {
            return problem(400, "name: " + p, "name", null);
        }
        long declared = -1;
        if (length != null) {
            try {
                declared = Long.parseLong(length.trim());
            } catch (NumberFormatException e) {
                declared = -1;
            }
        }
        try {
            WhatIfTraces.Entry e = whatIf.traces().upload(name, body, declared);
            return Response.created(URI.create("/api/v1/whatif/traces/" + name)).entity(e).build();
        } catch (WhatIfTraces.TooLarge e) {
            return problem(413, e.getMessage(), "body", null);
        } catch (WhatIfTraces.BadTrace e) {
            return problem(400, e.getMessage(), "body", e.line > 0 ? e.line : null);
        } catch (IllegalStateException e) {
            return problem(409, e.getMessage(), "name", null);
        } catch (IOException e) {
            return problem(500, "cannot store the trace: " + e.getMessage(), null, null);
        }
    }

    @DELETE
    @Path("/traces/{name}")
    @Operation(summary = "Delete an uploaded trace")
    public Response deleteTrace(@PathParam("name") String name) throws IOException {
        String p = Identifiers.problem(Identifiers.Kind.TRACE, name);
        if (p != null) {
            return problem(400, "name: " + p, "name", null);
        }
        try {
            return whatIf.traces().delete(name) ? Response.noContent().build()
                    : problem(404, "no uploaded trace named '" + name + "'", "name", null);
        } catch (IllegalStateException e) {
            return problem(409, e.getMessage(), "name", null);
        }
    }

    @POST
    @Path("/runs")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Start a what-if job", description = "Replays the trace for each policy at each capacity "
            + "(tokens; or capacityRange {min, max, points}, log-spaced) plus the unbounded ceiling; with target "
            + "{policy, hitRate}, bisects for the smallest capacity reaching it. 202 with the job's view; 429 when "
            + "every kept job is queued or running.")
    public Response start(WhatIfJobs.RunRequest req) {
        try {
            WhatIfJobs.View v = whatIf.jobs().submit(req);
            return Response.accepted(v).location(URI.create("/api/v1/whatif/runs/" + v.id())).build();
        } catch (WhatIfJobs.Invalid e) {
            return problem(400, e.getMessage(), e.field, null);
        } catch (WhatIfJobs.Busy e) {
            return Response.fromResponse(problem(429, e.getMessage(), null, null)).header("Retry-After", "10").build();
        }
    }

    @GET
    @Path("/runs")
    @Operation(summary = "What-if jobs kept on this plane, newest first")
    public List<WhatIfJobs.View> runs() {
        return whatIf.jobs().list();
    }

    @GET
    @Path("/runs/{id}")
    @Operation(summary = "One what-if job: state, progress, results so far")
    public Response run(@PathParam("id") String id) {
        String p = Identifiers.problem(Identifiers.Kind.JOB, id);
        if (p != null) {
            return problem(400, "id: " + p, "id", null);
        }
        WhatIfJobs.View v = whatIf.jobs().get(id);
        return v == null ? problem(404, "no what-if job '" + id + "' (finished jobs are forgotten when newer ones "
                + "need the room; a restarted plane has none)", "id", null) : Response.ok(v).build();
    }

    @DELETE
    @Path("/runs/{id}")
    @Operation(summary = "Cancel a queued or running job (200 with its view), or forget a finished one (204)")
    public Response cancel(@PathParam("id") String id) {
        String p = Identifiers.problem(Identifiers.Kind.JOB, id);
        if (p != null) {
            return problem(400, "id: " + p, "id", null);
        }
        try {
            WhatIfJobs.View v = whatIf.jobs().cancelOrForget(id);
            return v == null ? Response.noContent().build() : Response.ok(v).build();
        } catch (java.util.NoSuchElementException e) {
            return problem(404, "no what-if job '" + id + "'", "id", null);
        }
    }
}
