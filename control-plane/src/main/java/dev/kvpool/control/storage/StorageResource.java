package dev.kvpool.control.storage;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Page;
import dev.kvpool.control.common.Params;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/storages")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "storages", description = "Backends that hold block bytes")
@RolesAllowed({"admin", "operator"})
public class StorageResource {
    @Inject
    StorageService service;

    @Schema(name = "StorageInput", example = """
            {"name": "nfs_01", "type": "nfs", "enabled": true, "spec": {"root_path": "/mnt/kv/", "key_count_per_file": 8}}""")
    @JsonIgnoreProperties({"version", "createdAt", "updatedAt"}) // read-only: GET, edit, PUT works
    public record StorageInput(
            @Schema(description = "unique name, KVCM global_unique_name") String name,
            @Schema(description = "nfs | hf3fs | mooncake | tair_mem_pool | vcns_hf3fs | event_report_l1p5 | "
                    + "event_report_l2 (event-report storages hold no bytes)") String type,
            @Schema(description = "false keeps it out of new writes and reads") Boolean enabled,
            Boolean checkAvailableWhenOpen,
            @Schema(description = "fields of the type's KVCM spec message, snake_case (nfs: root_path, key_count_per_file;"
                    + " event_report_*: heartbeat_timeout_ms 30000, cleanup_grace_ms 300000, liveness_check_interval_ms"
                    + " 5000, snapshot_min_interval_ms 30000, snapshot_delta_drain_timeout_ms 10000 — absent = default)")
            JsonNode spec) {
    }

    @GET
    @Operation(summary = "List storages", description = "Filter by type and enabled; paged (page from 0, size ≤ 500)")
    public Page<StorageService.StorageView> list(@QueryParam("type") String type, @QueryParam("enabled") @Parameter(schema = @Schema(type = SchemaType.BOOLEAN)) String enabled,
                                                 @QueryParam("page") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String page,
                                                 @QueryParam("size") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String size) {
        String t = type == null ? null : StorageTypes.canonical(type, "type");
        Boolean on = Params.bool("enabled", enabled);
        return Page.of(service.list().stream().map(StorageService::view).toList(),
                v -> (t == null || t.equals(v.type())) && (on == null || on == v.enabled()), page, size, 50);
    }

    @GET
    @Path("{name}")
    @Operation(summary = "Get one storage; its ETag is its version")
    public Response get(@PathParam("name") String name) {
        StorageEntity e = service.get(name);
        return Response.ok(StorageService.view(e)).tag(Etags.of(e.version).replace("\"", "")).build();
    }

    @POST
    @Operation(summary = "Add a storage")
    public Response create(StorageInput in) {
        in = in == null ? new StorageInput(null, null, null, null, null) : in;
        StorageEntity e = service.create(StorageService.fromRest(in.name(), in.type(), in.spec(),
                Boolean.TRUE.equals(in.checkAvailableWhenOpen())), in.enabled() == null || in.enabled());
        return Response.created(URI.create("/api/v1/storages/" + e.name)).entity(StorageService.view(e))
                .tag(Long.toString(e.version)).build();
    }

    @PUT
    @Path("{name}")
    @Operation(summary = "Replace a storage's spec and availability; needs If-Match with the current ETag")
    public Response update(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch, StorageInput in) {
        in = in == null ? new StorageInput(null, null, null, null, null) : in;
        if (in.name() != null && !in.name().equals(name)) {
            throw dev.kvpool.control.common.ApiException.invalid("name", "name in the body ('" + in.name()
                    + "') differs from the path ('" + name + "'); storages cannot be renamed");
        }
        StorageEntity e = service.update(StorageService.fromRest(name, in.type(), in.spec(),
                Boolean.TRUE.equals(in.checkAvailableWhenOpen())), in.enabled(), ifMatch, true);
        return Response.ok(StorageService.view(e)).tag(Long.toString(e.version)).build();
    }

    @DELETE
    @Path("{name}")
    @Operation(summary = "Remove a storage; refused while an instance group lists it")
    public Response delete(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch) {
        service.delete(name, ifMatch);
        return Response.noContent().build();
    }
}
