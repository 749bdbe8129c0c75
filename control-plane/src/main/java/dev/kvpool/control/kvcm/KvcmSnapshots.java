package dev.kvpool.control.kvcm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.naming.Text;
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
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * KVCM GenConfigSnapshot / LoadConfigSnapshot (§3.13): {@code {"format":"kvpool-config-v1", "storages":[StorageConfig +
 * is_available], "instance_groups":[InstanceGroup], "instances":[InstanceInfo], "accounts":[{user_name, role,
 * password_hash}]}} (accounts only with {@code kvpool.control.snapshot.include-accounts}). Load reads the text
 * strictly (duplicate keys and deep nesting refused), validates each entry with the same rules as the RPCs, and
 * upserts everything in one transaction: any failure leaves nothing applied.
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

    /**
     * Whether GenConfigSnapshot carries the accounts with their password hashes (default false). KVCM's clients and
     * its conformance round trip need only storages, groups and instances; a snapshot is the kind of text that ends up
     * in tickets and backups, and a PBKDF2 hash there can be attacked offline. Turn it on to move accounts to another
     * control plane; LoadConfigSnapshot takes accounts whenever a snapshot has them.
     */
    @ConfigProperty(name = "kvpool.control.snapshot.include-accounts", defaultValue = "false")
    boolean includeAccounts;

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
        if (includeAccounts) {
            ArrayNode a = root.putArray("accounts");
            for (AccountEntity e : accounts.list()) {
                a.addObject().put("user_name", e.name).put("role", e.role).put("password_hash", e.passwordHash);
            }
        }
        return Json.write(root);
    }

    /** The members a snapshot may have; anything else is refused (a misspelt section would be skipped silently). */
    private static final java.util.Set<String> MEMBERS = java.util.Set.of("format", "storages", "instance_groups",
            "instances", "accounts");

    @Transactional
    public void load(String text) {
        if (text == null || text.isEmpty()) {
            throw ApiException.invalid("config_snapshot", "config_snapshot must not be empty");
        }
        JsonNode root;
        try {
            root = Json.readClient(text);
        } catch (RuntimeException e) {
            throw ApiException.invalid("config_snapshot", "config_snapshot is not JSON: "
                    + Text.safe(Json.problem(e)));
        }
        if (!root.isObject() || !"kvpool-config-v1".equals(root.path("format").asText())) {
            throw ApiException.invalid("config_snapshot", "config_snapshot.format must be kvpool-config-v1");
        }
        root.fieldNames().forEachRemaining(f -> {
            if (!MEMBERS.contains(f)) {
                throw ApiException.invalid("config_snapshot", "config_snapshot: unknown member '" + Text.safe(f)
                        + "'; known: " + new java.util.TreeSet<>(MEMBERS));
            }
        });
        try {
            for (ObjectNode n : objects(root, "storages")) {
                ObjectNode o = n.deepCopy();
                JsonNode av = o.remove("is_available");
                if (av != null && !av.isBoolean()) {
                    throw ApiException.invalid("config_snapshot.storages.is_available", "is_available must be true or false");
                }
                boolean available = av == null || av.booleanValue();
                StorageConfig c = dev.kvpool.control.storage.StorageTypes.withEventReportDefaults(
                        ProtoJson.merge(Json.write(o), StorageConfig.newBuilder()).build());
                StorageService.check(c);
                if (storageRepo.byName(c.getGlobalUniqueName()).isPresent()) {
                    storages.update(c, available, null, false);
                } else {
                    storages.create(c, available);
                }
            }
            for (ObjectNode n : objects(root, "instance_groups")) {
                InstanceGroup g = ProtoJson.merge(Json.write(n), InstanceGroup.newBuilder()).build();
                GroupService.fromKvcm(g, null); // names and bounds before the name is looked up
                var old = groupRepo.byName(g.getName());
                if (old.isPresent()) {
                    GroupEntity e = old.get();
                    InstanceGroup next = g.toBuilder().setVersion(Math.max(g.getVersion(), e.version + 1)).build();
                    groups.update(g.getName(), GroupService.fromKvcm(next, e), null, next, e.version);
                } else {
                    groups.create(GroupService.fromKvcm(g, null), g);
                }
            }
            for (ObjectNode n : objects(root, "instances")) {
                ObjectNode o = n.deepCopy();
                JsonNode hs = o.remove("hash_scheme");
                if (hs != null && !hs.isTextual()) {
                    throw ApiException.invalid("config_snapshot.instances.hash_scheme", "hash_scheme must be a string");
                }
                InstanceInfo info = ProtoJson.merge(Json.write(o), InstanceInfo.newBuilder()).build();
                instances.register(RegisterInstanceRequest.newBuilder().setInstanceGroup(info.getInstanceGroupName())
                        .setInstanceId(info.getInstanceId()).setBlockSize(info.getBlockSize())
                        .addAllLocationSpecInfos(info.getLocationSpecInfosList())
                        .setModelDeployment(info.getModelDeployment())
                        .addAllLocationSpecGroups(info.getLocationSpecGroupsList()).build(),
                        hs == null ? null : hs.textValue());
            }
            for (ObjectNode n : objects(root, "accounts")) {
                String role = text(n, "role");
                role = "ROLE_ADMIN".equals(role) ? BearerToken.ADMIN : "ROLE_USER".equals(role) ? BearerToken.TENANT : role;
                accounts.importHashed(text(n, "user_name"), role, text(n, "password_hash"));
            }
        } catch (ApiException e) {
            throw new ApiException(400, e.field, "config snapshot refused, nothing applied: " + e.getMessage(),
                    ErrorCode.INVALID_ARGUMENT);
        } catch (ProtoJsonException e) {
            throw ApiException.invalid("config_snapshot", "config snapshot refused, nothing applied: " + e.getMessage());
        }
    }

    /** The objects of one section; a section that is not an array of objects is refused. */
    private static java.util.List<ObjectNode> objects(JsonNode root, String section) {
        JsonNode a = root.get(section);
        if (a == null || a.isNull()) {
            return java.util.List.of();
        }
        if (!a.isArray()) {
            throw ApiException.invalid("config_snapshot." + section, section + " must be an array");
        }
        java.util.List<ObjectNode> out = new java.util.ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            if (!(a.get(i) instanceof ObjectNode o)) {
                throw ApiException.invalid("config_snapshot." + section + "[" + i + "]", section + "[" + i
                        + "] must be an object");
            }
            out.add(o);
        }
        return out;
    }

    /** A string member ({@code null} when absent); another kind is refused rather than turned into text. */
    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v != null && !v.isNull() && !v.isTextual()) {
            throw ApiException.invalid("config_snapshot.accounts." + field, field + " must be a string");
        }
        return v == null || v.isNull() ? null : v.textValue();
    }
}
