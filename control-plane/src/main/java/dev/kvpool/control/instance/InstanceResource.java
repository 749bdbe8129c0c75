package dev.kvpool.control.instance;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.proto.admin.RegisterInstanceRequest;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
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

@Path("/api/v1/instances")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "instances", description = "KV cache namespaces with a fixed KV config")
public class InstanceResource {
    @Inject
    InstanceService service;
    @Inject
    SecurityIdentity identity;

    @Schema(name = "InstanceInput", example = """
            {"instanceId": "qwen3-32b-prod", "group": "search", "blockSize": 64, "hashScheme": "kvcm",
             "modelDeployment": {"model_name": "Qwen3-32B", "dtype": "bf16", "tp_size": 4},
             "locationSpecInfos": [{"name": "tp0", "size": 1048576}], "locationSpecGroups": []}""")
    @JsonIgnoreProperties({"version", "createdAt", "updatedAt", "quotaGroupName"}) // read-only: GET, edit, POST works
    public record InstanceInput(String instanceId, String group, Integer blockSize,
                                @Schema(description = "kvcm (default), vllm-sha256-cbor or vllm-xxhash-cbor") String hashScheme,
                                @Schema(description = "KVCM ModelDeployment, snake_case") JsonNode modelDeployment,
                                @Schema(description = "[{name, size}]") JsonNode locationSpecInfos,
                                @Schema(description = "[{name, spec_names}]") JsonNode locationSpecGroups) {
    }

    @GET
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "List instances (a tenant sees those of its groups)", description = "Filter by group and model; paged")
    public Page<InstanceService.InstanceView> list(@QueryParam("group") String group, @QueryParam("model") String model,
                                                   @QueryParam("page") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String page,
                                                   @QueryParam("size") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String size) {
        Caller c = Caller.of(identity);
        if (group != null) {
            Inputs.name(Identifiers.Kind.GROUP, "group", group);
        }
        Inputs.text("model", model, Limits.MAX_TEXT);
        return Page.of(service.list().stream().filter(i -> c.canSeeGroup(i.group.name)).map(InstanceService::view)
                        .toList(),
                v -> (group == null || group.equals(v.group()))
                        && (model == null || model.equals(v.modelDeployment().path("model_name").asText())), page, size, 50);
    }

    @GET
    @Path("{id}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "Get one instance; ETag = version")
    public Response get(@PathParam("id") String id) {
        InstanceEntity e = service.get(id);
        Caller.of(identity).requireGroup(e.group.name);
        return Response.ok(InstanceService.view(e)).tag(Long.toString(e.version)).build();
    }

    @POST
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Register an instance (idempotent: the same KV config again answers 200, another one 409)")
    public Response create(InstanceInput in) {
        if (in == null) {
            throw ApiException.invalid(null, "request body is required");
        }
        ObjectNode n = Json.MAPPER.createObjectNode();
        n.put("instance_group", in.group() == null ? "" : in.group());
        n.put("instance_id", in.instanceId() == null ? "" : in.instanceId());
        n.put("block_size", in.blockSize() == null ? 0 : in.blockSize());
        if (in.modelDeployment() != null) {
            n.set("model_deployment", in.modelDeployment());
        }
        if (in.locationSpecInfos() != null) {
            n.set("location_spec_infos", in.locationSpecInfos());
        }
        if (in.locationSpecGroups() != null) {
            n.set("location_spec_groups", in.locationSpecGroups());
        }
        RegisterInstanceRequest r;
        try {
            r = ProtoJson.merge(Json.write(n), RegisterInstanceRequest.newBuilder()).build();
        } catch (ProtoJsonException e) {
            throw ApiException.invalid(e.getMessage().contains("model_deployment") ? "modelDeployment"
                    : "locationSpecInfos", "body does not fit an instance: " + e.getMessage());
        }
        InstanceService.Registered reg = service.register(r, in.hashScheme());
        InstanceEntity e = reg.instance();
        return (reg.created() ? Response.created(URI.create("/api/v1/instances/" + e.instanceId)) : Response.ok())
                .entity(InstanceService.view(e)).tag(Long.toString(e.version)).build();
    }

    @DELETE
    @Path("{id}")
    @RolesAllowed({"admin", "operator"})
    @Operation(summary = "Remove an instance")
    public Response delete(@PathParam("id") String id, @HeaderParam("If-Match") String ifMatch) {
        service.delete(id, ifMatch);
        return Response.noContent().build();
    }
}
