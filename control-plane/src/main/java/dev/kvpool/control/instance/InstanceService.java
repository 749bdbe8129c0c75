package dev.kvpool.control.instance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.hash.HashScheme;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.InstanceInfo;
import dev.kvpool.api.proto.admin.LocationSpecGroup;
import dev.kvpool.api.proto.admin.LocationSpecInfo;
import dev.kvpool.api.proto.admin.ModelDeployment;
import dev.kvpool.api.proto.admin.RegisterInstanceRequest;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupEntity;
import dev.kvpool.control.group.GroupRepository;
import dev.kvpool.control.outbox.Outbox;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Instances: registration follows KVCM's RegisterInstance (§3.1.1-3.1.2): an existing id with the same identity is
 * OK and unchanged, a different identity is a conflict, a new id needs an existing group with room.
 */
@ApplicationScoped
public class InstanceService {
    @Inject
    InstanceRepository repo;
    @Inject
    GroupRepository groups;
    @Inject
    Outbox outbox;

    public record InstanceView(String instanceId, String group, String quotaGroupName, int blockSize, String hashScheme,
                               JsonNode modelDeployment, JsonNode locationSpecInfos, JsonNode locationSpecGroups,
                               long version, Instant createdAt, Instant updatedAt) {
    }

    public record Registered(InstanceEntity instance, boolean created) {
    }

    public static InstanceView view(InstanceEntity e) {
        return new InstanceView(e.instanceId, e.group.name, e.quotaGroupName, e.blockSize, e.hashScheme,
                Json.read(e.modelJson), Json.read(e.specsJson), Json.read(e.specGroupsJson), e.version, e.createdAt,
                e.updatedAt);
    }

    public static InstanceInfo toKvcm(InstanceEntity e) {
        ObjectNode n = Json.MAPPER.createObjectNode();
        n.put("quota_group_name", e.quotaGroupName);
        n.put("instance_group_name", e.group.name);
        n.put("instance_id", e.instanceId);
        n.put("block_size", e.blockSize);
        n.set("location_spec_infos", Json.read(e.specsJson));
        n.set("model_deployment", Json.read(e.modelJson));
        n.set("location_spec_groups", Json.read(e.specGroupsJson));
        return ProtoJson.merge(Json.write(n), InstanceInfo.newBuilder()).build();
    }

    public List<InstanceEntity> list() {
        return repo.sorted();
    }

    public InstanceEntity get(String id) {
        Inputs.name(Identifiers.Kind.INSTANCE, "id", id);
        return repo.byId(id).orElseThrow(() -> ApiException.notFound("instance", id));
    }

    @Transactional
    public Registered register(RegisterInstanceRequest r, String hashScheme) {
        validate(r);
        Inputs.text("hashScheme", hashScheme, Limits.MAX_TEXT);
        boolean schemeGiven = hashScheme != null && !hashScheme.isBlank();
        String scheme;
        try {
            scheme = HashScheme.fromName(schemeGiven ? hashScheme : "kvcm").schemeName();
        } catch (IllegalArgumentException e) {
            throw ApiException.invalid("hashScheme", e.getMessage());
        }
        outbox.lock();
        var existing = repo.byId(r.getInstanceId());
        String specs = specsJson(r.getLocationSpecInfosList());
        String specGroups = specGroupsJson(r.getLocationSpecGroupsList());
        String model = Json.proto(r.getModelDeployment().toBuilder().clearUserData().build());
        if (existing.isPresent()) {
            InstanceEntity e = existing.get();
            String oldModel = Json.proto(ProtoJson.merge(e.modelJson, ModelDeployment.newBuilder()).clearUserData().build());
            if (e.blockSize != r.getBlockSize() || !Json.read(e.specsJson).equals(Json.read(specs))
                    || !oldModel.equals(model) || !Json.read(e.specGroupsJson).equals(Json.read(specGroups))
                    || (schemeGiven && !e.hashScheme.equals(scheme))) { // KVCM clients name no scheme
                throw ApiException.duplicate("instanceId", "instance '" + r.getInstanceId() + "' is already registered "
                        + "with a different KV config (block size, location specs, model deployment or hash scheme); "
                        + "an instance's KV config is fixed");
            }
            return new Registered(e, false);
        }
        GroupEntity g = groups.byName(r.getInstanceGroup()).orElseThrow(() -> new ApiException(400, "group",
                "instance group '" + r.getInstanceGroup() + "' does not exist", ErrorCode.INTERNAL_ERROR));
        if (g.maxInstanceCount > 0 && repo.countInGroup(g.name) >= g.maxInstanceCount) {
            throw new ApiException(409, "group", "instance group '" + g.name + "' is full: maxInstanceCount "
                    + g.maxInstanceCount + " reached", ErrorCode.REACH_MAX_ENTITY_CAPACITY);
        }
        InstanceEntity e = new InstanceEntity();
        e.instanceId = r.getInstanceId();
        e.group = g;
        e.quotaGroupName = g.quotaGroupName;
        e.blockSize = r.getBlockSize();
        e.hashScheme = scheme;
        e.modelJson = Json.proto(r.getModelDeployment());
        e.specsJson = specs;
        e.specGroupsJson = specGroups;
        e.created();
        repo.persist(e);
        outbox.record(ConfigEvent.INSTANCE, e.instanceId, ConfigEvent.CREATED, e.version, Json.tree(view(e)));
        return new Registered(e, true);
    }

    @Transactional
    public void delete(String id, String ifMatch) {
        Inputs.existingName(Identifiers.Kind.INSTANCE, "id", id);
        outbox.lock();
        InstanceEntity e = repo.byId(id).orElseThrow(() -> ApiException.notFound("instance", id));
        Etags.check(ifMatch, e.version, false);
        repo.delete(e);
        outbox.record(ConfigEvent.INSTANCE, id, ConfigEvent.DELETED, e.version + 1, null);
    }

    /** Fields of a registration that are blobs (may hold newlines), not text. */
    private static final Set<String> BLOBS = Set.of("user_data", "extra");

    /**
     * KVCM's registration checks (§3.1.1, in its order, plus the SHOULDs: duplicate spec names, negative sizes, spec
     * groups naming unknown specs) and KVPool's bounds: ids and names by the identifier rule (an id reaches file
     * paths and Redis keys), text and blobs bounded, block size, spec count and spec sizes within {@link Limits}.
     */
    static void validate(RegisterInstanceRequest r) {
        // ids and spec names are checked below by the identifier rule, under REST's field names
        Inputs.strings(r, "", BLOBS, Set.of("instance_id", "instance_group", "name", "spec_names"));
        if (r.getInstanceGroup().isEmpty()) {
            throw ApiException.invalid("group", "instance group is required");
        }
        Inputs.name(Identifiers.Kind.GROUP, "group", r.getInstanceGroup());
        Inputs.name(Identifiers.Kind.INSTANCE, "instanceId", r.getInstanceId());
        if (!r.hasModelDeployment()) {
            throw ApiException.invalid("modelDeployment", "modelDeployment is required");
        }
        ModelDeployment m = r.getModelDeployment();
        if (m.getModelName().isBlank() || m.getDtype().isBlank()) {
            throw ApiException.invalid("modelDeployment", "modelDeployment.model_name and .dtype are required");
        }
        Inputs.range("modelDeployment.tp_size", m.getTpSize(), 0, Limits.MAX_SPECS);
        Inputs.range("modelDeployment.dp_size", m.getDpSize(), 0, Limits.MAX_SPECS);
        Inputs.range("modelDeployment.pp_size", m.getPpSize(), 0, Limits.MAX_SPECS);
        if (r.getBlockSize() < 0) {
            throw ApiException.invalid("blockSize", "blockSize must be >= 0 (0 = key-only client)");
        }
        Inputs.range("blockSize", r.getBlockSize(), 0, Limits.MAX_BLOCK_TOKENS);
        if (r.getLocationSpecInfosCount() == 0) {
            throw ApiException.invalid("locationSpecInfos", "locationSpecInfos must not be empty");
        }
        Inputs.count("locationSpecInfos", r.getLocationSpecInfosList(), Limits.MAX_SPECS);
        Set<String> names = new HashSet<>();
        for (int i = 0; i < r.getLocationSpecInfosCount(); i++) {
            LocationSpecInfo s = r.getLocationSpecInfos(i);
            String f = "locationSpecInfos[" + i + "]";
            Inputs.name(Identifiers.Kind.SPEC, f + ".name", s.getName());
            if (!names.add(s.getName())) {
                throw ApiException.invalid(f + ".name", "location spec name '" + s.getName() + "' is duplicated");
            }
            if (s.getSize() < 0) {
                throw ApiException.invalid(f + ".size", "location spec size must be >= 0");
            }
            Inputs.range(f + ".size", s.getSize(), 0, Limits.MAX_SPEC_BYTES);
        }
        Inputs.count("locationSpecGroups", r.getLocationSpecGroupsList(), Limits.MAX_SPECS);
        Set<String> groupNames = new HashSet<>();
        for (int i = 0; i < r.getLocationSpecGroupsCount(); i++) {
            LocationSpecGroup g = r.getLocationSpecGroups(i);
            String f = "locationSpecGroups[" + i + "]";
            Inputs.name(Identifiers.Kind.SPEC_GROUP, f + ".name", g.getName());
            if (!groupNames.add(g.getName())) {
                throw ApiException.invalid(f + ".name", "location spec group '" + g.getName() + "' is duplicated");
            }
            Inputs.count(f + ".spec_names", g.getSpecNamesList(), Limits.MAX_SPECS);
            for (String n : g.getSpecNamesList()) {
                if (!names.contains(n)) {
                    throw ApiException.invalid(f + ".spec_names", "location spec group '" + g.getName()
                            + "' names unknown spec '" + Text.safe(n) + "'");
                }
            }
        }
    }

    private static String specsJson(List<LocationSpecInfo> specs) {
        ArrayNode a = Json.MAPPER.createArrayNode();
        specs.forEach(s -> a.add(Json.read(Json.proto(s))));
        return Json.write(a);
    }

    /** Normalised: groups sorted by name, each group's spec names sorted (KVCM's identity rule). */
    private static String specGroupsJson(List<LocationSpecGroup> groups) {
        List<LocationSpecGroup> sorted = new ArrayList<>();
        for (LocationSpecGroup g : groups) {
            sorted.add(g.toBuilder().clearSpecNames().addAllSpecNames(g.getSpecNamesList().stream().sorted().toList())
                    .build());
        }
        sorted.sort(Comparator.comparing(LocationSpecGroup::getName));
        ArrayNode a = Json.MAPPER.createArrayNode();
        sorted.forEach(s -> a.add(Json.read(Json.proto(s))));
        return Json.write(a);
    }
}
