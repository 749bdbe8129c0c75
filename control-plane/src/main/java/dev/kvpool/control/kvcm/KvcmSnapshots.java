package dev.kvpool.control.kvcm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.InstanceGroup;
import dev.kvpool.api.proto.admin.InstanceInfo;
import dev.kvpool.api.proto.admin.RegisterInstanceRequest;
import dev.kvpool.api.proto.admin.StorageConfig;
import dev.kvpool.control.account.AccountEntity;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupEntity;
import dev.kvpool.control.group.GroupRepository;
import dev.kvpool.control.group.GroupService;
import dev.kvpool.control.instance.InstanceEntity;
import dev.kvpool.control.instance.InstanceService;
import dev.kvpool.control.outbox.Outbox;
import dev.kvpool.control.storage.StorageEntity;
import dev.kvpool.control.storage.StorageRepository;
import dev.kvpool.control.storage.StorageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

/**
 * KVCM GenConfigSnapshot / LoadConfigSnapshot (§3.13): {@code {"format":"kvpool-config-v1", "storages":[StorageConfig +
 * is_available], "instance_groups":[InstanceGroup], "instances":[InstanceInfo], "accounts":[{user_name, role,
 * password_hash}]}}. Load upserts everything in one transaction: any failure leaves nothing applied.
 */
@ApplicationScoped
public class KvcmSnapshots {
    @Inject
    Outbox outbox;
    @Inject
    StorageService storages;
    @Inject
    StorageRepository storageRepo;
    @Inject
    GroupService groups;
    @Inject
    GroupRepository groupRepo;
    @Inject
    InstanceService instances;
    @Inject
    AccountService accounts;

    @Transactional
    public String generate() {
        outbox.lock();
        ObjectNode root = Json.MAPPER.createObjectNode();
        root.put("format", "kvpool-config-v1");
        ArrayNode s = root.putArray("storages");
        for (StorageEntity e : storages.list()) {
            ObjectNode n = (ObjectNode) Json.read(e.specJson);
            n.put("is_available", e.enabled);
            s.add(n);
        }
        ArrayNode g = root.putArray("instance_groups");
        for (GroupEntity e : groups.list()) {
            g.add(Json.read(e.kvcmJson));
        }
        ArrayNode i = root.putArray("instances");
        for (InstanceEntity e : instances.list()) {
            ObjectNode n = (ObjectNode) Json.read(Json.proto(InstanceService.toKvcm(e)));
            n.put("hash_scheme", e.hashScheme);
            i.add(n);
        }
        ArrayNode a = root.putArray("accounts");
        for (AccountEntity e : accounts.list()) {
            a.addObject().put("user_name", e.name).put("role", e.role).put("password_hash", e.passwordHash);
        }
        return Json.write(root);
    }

    @Transactional
    public void load(String text) {
        JsonNode root;
        try {
            root = Json.read(text);
        } catch (RuntimeException e) {
            throw ApiException.invalid("config_snapshot", "config_snapshot is not JSON");
        }
        if (!"kvpool-config-v1".equals(root.path("format").asText())) {
            throw ApiException.invalid("config_snapshot", "config_snapshot.format must be kvpool-config-v1");
        }
        try {
            for (JsonNode n : root.path("storages")) {
                ObjectNode o = ((ObjectNode) n).deepCopy();
                boolean available = !o.has("is_available") || o.remove("is_available").asBoolean();
                StorageConfig c = ProtoJson.merge(Json.write(o), StorageConfig.newBuilder()).build();
                if (storageRepo.byName(c.getGlobalUniqueName()).isPresent()) {
                    storages.update(c, available, null, false);
                } else {
                    storages.create(c, available);
                }
            }
            for (JsonNode n : root.path("instance_groups")) {
                InstanceGroup g = ProtoJson.merge(Json.write(n), InstanceGroup.newBuilder()).build();
                var old = groupRepo.byName(g.getName());
                if (old.isPresent()) {
                    GroupEntity e = old.get();
                    InstanceGroup next = g.toBuilder().setVersion(Math.max(g.getVersion(), e.version + 1)).build();
                    groups.update(g.getName(), GroupService.fromKvcm(next, e), null, next, e.version);
                } else {
                    groups.create(GroupService.fromKvcm(g, null), g);
                }
            }
            for (JsonNode n : root.path("instances")) {
                ObjectNode o = ((ObjectNode) n).deepCopy();
                String scheme = o.has("hash_scheme") ? o.remove("hash_scheme").asText() : null;
                InstanceInfo info = ProtoJson.merge(Json.write(o), InstanceInfo.newBuilder()).build();
                instances.register(RegisterInstanceRequest.newBuilder().setInstanceGroup(info.getInstanceGroupName())
                        .setInstanceId(info.getInstanceId()).setBlockSize(info.getBlockSize())
                        .addAllLocationSpecInfos(info.getLocationSpecInfosList())
                        .setModelDeployment(info.getModelDeployment())
                        .addAllLocationSpecGroups(info.getLocationSpecGroupsList()).build(), scheme);
            }
            for (JsonNode n : root.path("accounts")) {
                String role = n.path("role").asText();
                role = role.equals("ROLE_ADMIN") ? BearerToken.ADMIN : role.equals("ROLE_USER") ? BearerToken.TENANT : role;
                accounts.importHashed(n.path("user_name").asText(), role, n.path("password_hash").asText());
            }
        } catch (ApiException e) {
            throw new ApiException(400, e.field, "config snapshot refused, nothing applied: " + e.getMessage(),
                    ErrorCode.INVALID_ARGUMENT);
        } catch (ProtoJsonException | ClassCastException e) {
            throw ApiException.invalid("config_snapshot", "config snapshot refused, nothing applied: " + e.getMessage());
        }
    }
}
