package dev.kvpool.meta.rest;

import dev.kvpool.meta.reclaim.FileSweep;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The sweep of file-type storages for files that hold no block ({@link FileSweep}): the leader runs it every
 * {@code kvpool.meta.files.sweep-interval}; an operator can run it now, or as a dry run that only reports.
 */
@Path("/api/v1/storage/sweeps")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "storage", description = "Files of file-type storages that hold no block")
public class StorageSweepResource {

    @Inject
    MetaRuntime runtime;

    @POST
    @Operation(summary = "Sweep file-type storages now",
            description = "Starts a sweep on this replica and answers 202 with its first view; GET "
                    + "/api/v1/storage/sweeps/latest follows its progress. With dry_run=true it deletes nothing "
                    + "and reports what it would delete. 409 while a sweep is running.")
    public Response start(@QueryParam("dry_run") String dryRun) {
        boolean dry;
        if (dryRun == null || dryRun.isEmpty() || dryRun.equals("false")) {
            dry = false;
        } else if (dryRun.equals("true")) {
            dry = true;
        } else {
            throw BlockKeysResource.problem(400, "dry_run must be true or false, got '" + dryRun + "'");
        }
        FileSweep.Report r;
        try {
            r = runtime.fileSweep().request(dry);
        } catch (IllegalStateException e) {
            throw BlockKeysResource.problem(503, e.getMessage());
        }
        if (r == null) {
            throw BlockKeysResource.problem(409, "a storage sweep is running; GET /api/v1/storage/sweeps/latest "
                    + "shows its progress");
        }
        return Response.accepted(r).location(URI.create("/api/v1/storage/sweeps/latest")).build();
    }

    @GET
    @Path("/latest")
    @Operation(summary = "The sweep running now, else the last one",
            description = "Counts per directory (instance, storage, spec): slab files, those holding a block, those "
                    + "holding none (and their bytes), those kept because they were written recently, and those "
                    + "deleted. 404 before the first sweep on this replica.")
    public FileSweep.Report latest() {
        FileSweep.Report r = runtime.fileSweep().status();
        if (r == null) {
            throw BlockKeysResource.problem(404, "no storage sweep has run on this replica yet; POST "
                    + "/api/v1/storage/sweeps starts one");
        }
        return r;
    }
}
