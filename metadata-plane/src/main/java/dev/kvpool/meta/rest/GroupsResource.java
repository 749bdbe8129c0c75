package dev.kvpool.meta.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.reclaim.Reclaimer;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.EntityTag;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * Instance groups as this metadata plane applies them: quota, current usage against the water levels, and the
 * reclaim strategy, which can be changed at runtime (the control plane does it through here until its config
 * stream lands; every replica over a shared store picks the change up).
 */
@Path("/api/v1/groups")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "groups", description = "Quotas, water levels and reclaim strategies of instance groups")
public class GroupsResource {

    @Inject
    MetaRuntime runtime;

    public record TypeUsage(String storage_type, long used_bytes, long quota_bytes, double used_ratio) {
    }

    public record GroupState(String name, long version, long quota_bytes, long used_bytes, double used_ratio,
                             double water_level, boolean over_water_level, String trigger, long over_since_ms,
                             List<TypeUsage> types, Map<String, Long> instance_keys, JsonNode reclaim_strategy) {
    }

    @GET
    @Operation(summary = "Every instance group with its usage and water level")
    public List<GroupState> list() {
        return runtime.registry().groups().stream().sorted(java.util.Comparator.comparing(GroupConfig::name))
                .map(this::state).toList();
    }

    @GET
    @Path("/{name}")
    @Operation(summary = "One instance group with its usage and water level; the ETag is its version")
    public Response get(@PathParam("name") String name) {
        GroupConfig g = group(name);
        return Response.ok(state(g)).tag(new EntityTag(Long.toString(g.version()))).build();
    }

    @PUT
    @Path("/{name}/reclaim")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Replace the reclaim strategy (KVCM cache_config.reclaim_strategy JSON); takes effect on "
            + "the next reclaimer round, no restart. If-Match: the version you read, to refuse a concurrent change.")
    public Response putReclaim(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch,
                               JsonNode body) {
        if (runtime.controlPlane() != null) {
            throw BlockKeysResource.problem(409, "instance group '" + name + "' is managed by the control plane at "
                    + runtime.controlPlane().url() + ": change it there (PUT /api/v1/instance-groups/" + name + ")");
        }
        group(name);
        if (body == null || !body.isObject()) {
            throw BlockKeysResource.problem(400, "body must be a reclaim_strategy JSON object");
        }
        ReclaimConfig r;
        try {
            r = ReclaimConfig.fromJson(body);
        } catch (IllegalArgumentException e) {
            throw BlockKeysResource.problem(400, "reclaim_strategy: " + e.getMessage());
        }
        if (r.usedPercentage() < 0) {
            throw BlockKeysResource.problem(400, "trigger_strategy.used_percentage must be >= 0 (a fraction: 0.8 = 80 %), got "
                    + r.usedPercentage());
        }
        long expected = 0;
        if (ifMatch != null && !ifMatch.isBlank()) {
            try {
                expected = Long.parseLong(ifMatch.replace("\"", "").replace("W/", "").trim());
            } catch (NumberFormatException e) {
                throw BlockKeysResource.problem(400, "If-Match must be a group version, got '" + ifMatch + "'");
            }
        }
        try {
            GroupConfig g = runtime.registry().updateReclaim(name, r, expected);
            return Response.ok(state(g)).tag(new EntityTag(Long.toString(g.version()))).build();
        } catch (IllegalStateException e) {
            throw BlockKeysResource.problem(412, e.getMessage());
        } catch (NoSuchElementException e) {
            throw BlockKeysResource.problem(404, e.getMessage());
        }
    }

    private GroupConfig group(String name) {
        GroupConfig g = runtime.registry().group(name);
        if (g == null) {
            throw BlockKeysResource.problem(404, "instance group '" + name + "' does not exist");
        }
        return g;
    }

    private GroupState state(GroupConfig g) {
        QuotaLedger.Usage u = runtime.ledger().usage(g.name());
        Reclaimer.Trigger t = runtime.reclaimer().trigger(g);
        var types = g.typeQuotas().entrySet().stream().sorted(Map.Entry.comparingByKey())
                .map(e -> new TypeUsage(e.getKey().name().toLowerCase(java.util.Locale.ROOT), u.byType(e.getKey()),
                        e.getValue(), e.getValue() > 0 ? (double) u.byType(e.getKey()) / e.getValue() : 0))
                .toList();
        Map<String, Long> keys = new LinkedHashMap<>();
        List<Instance> insts = runtime.registry().instancesOf(g.name());
        long[] counts = runtime.registry().keyCounts(insts);
        for (int i = 0; i < counts.length; i++) {
            keys.put(insts.get(i).id, counts[i]);
        }
        ObjectNode rs = g.reclaim().toJson();
        return new GroupState(g.name(), g.version(), g.capacity(), u.total(), (double) u.total() / g.capacity(),
                g.reclaim().usedPercentage(), t != null, t == null ? null : t.reason().name().toLowerCase(java.util.Locale.ROOT),
                runtime.reclaimer().overSince(g.name()), types, keys, rs);
    }
}
