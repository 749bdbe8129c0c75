package dev.kvpool.control.group;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Page;
import dev.kvpool.control.security.Caller;
import io.quarkus.security.identity.SecurityIdentity;
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
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/instance-groups")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "instance-groups", description = "Quota units: total and per-type quota, water levels, eviction policy")
public class GroupResource {
    @Inject
    GroupService service;
    @Inject
    SecurityIdentity identity;

    @GET
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "List instance groups (a tenant sees its own)",
            description = "Filter by storage (groups listing it as a candidate) and policy; paged")
    public Page<GroupService.GroupView> list(@QueryParam("storage") String storage, @QueryParam("policy") String policy,
                                             @QueryParam("page") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String page,
                                             @QueryParam("size") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String size) {
        Caller c = Caller.of(identity);
        if (storage != null) {
            Inputs.name(Identifiers.Kind.STORAGE, "storage", storage);
        }
        if (policy != null && !GroupService.POLICIES.contains(policy.toUpperCase(java.util.Locale.ROOT))) {
            throw ApiException.invalid("policy", "policy must be one of " + GroupService.POLICIES + ", got '"
                    + Text.safe(policy) + "'");
        }
        return Page.of(service.list().stream().filter(g -> c.canSeeGroup(g.name)).map(g -> redact(c, service.view(g)))
                        .toList(),
                v -> (storage == null || v.storageCandidates().contains(storage))
                        && (policy == null || v.eviction().policy().equalsIgnoreCase(policy)), page, size, 50);
    }

    @GET
    @Path("{name}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "Get one group with its current usage and water levels; ETag = version")
    public Response get(@PathParam("name") String name) {
        Caller c = Caller.of(identity);
        c.requireGroup(name);
        GroupEntity g = service.get(name);
        return Response.ok(redact(c, service.view(g))).tag(Long.toString(g.version)).build();
    }

    /** Tenants do not see the metadata store URI (it may hold credentials). */
    static GroupService.GroupView redact(Caller c, GroupService.GroupView v) {
        if (c.isTenant() && v.kvcm().at("/cache_config/meta_indexer_config/meta_storage_backend_config")
                instanceof com.fasterxml.jackson.databind.node.ObjectNode b && b.has("storage_uri")) {
            b.put("storage_uri", "");
        }
        return v;
    }

    @POST
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Create an instance group")
    public Response create(GroupSpec spec) {
        GroupEntity g = service.create(spec, null);
        return Response.created(URI.create("/api/v1/instance-groups/" + g.name)).entity(service.view(g))
                .tag(Long.toString(g.version)).build();
    }

    @PUT
    @Path("{name}")
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Update an instance group (absent fields keep their value); needs If-Match with the ETag")
    public Response update(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch, GroupSpec spec) {
        GroupEntity g = service.update(name, spec, ifMatch, null, null);
        return Response.ok(service.view(g)).tag(Long.toString(g.version)).build();
    }

    @DELETE
    @Path("{name}")
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Remove an instance group; refused while it has instances")
    public Response delete(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch) {
        service.delete(name, ifMatch);
        return Response.noContent().build();
    }
}
