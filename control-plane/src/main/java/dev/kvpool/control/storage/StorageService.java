package dev.kvpool.control.storage;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.proto.admin.StorageConfig;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupRepository;
import dev.kvpool.control.outbox.Outbox;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.List;

/** Storages: one code path for REST and the KVCM admin routes. Every write locks the config revision and records an outbox event. */
@ApplicationScoped
public class StorageService {
    @Inject
    StorageRepository repo;
    @Inject
    GroupRepository groups;
    @Inject
    Outbox outbox;

    /** REST view. */
    public record StorageView(String name, String type, boolean enabled, boolean checkAvailableWhenOpen,
                              JsonNode spec, long version, Instant createdAt, Instant updatedAt) {
    }

    public static StorageView view(StorageEntity e) {
        StorageConfig c = toProto(e);
        JsonNode spec = Json.read(Json.proto(StorageTypes.spec(c)));
        if (StorageTypes.eventReport(e.type)) {
            // proto JSON writes int64 as strings; REST shows these durations as the numbers clients send
            ObjectNode n = Json.MAPPER.createObjectNode();
            spec.properties().forEach(f -> n.put(f.getKey(), f.getValue().asLong()));
            spec = n;
        }
        return new StorageView(e.name, e.type, e.enabled, e.checkAvailable, spec, e.version, e.createdAt,
                e.updatedAt);
    }

    public static StorageConfig toProto(StorageEntity e) {
        return ProtoJson.merge(e.specJson, StorageConfig.newBuilder()).build();
    }

    /** A KVCM StorageConfig from the REST shape; {@code spec} holds the fields of the type's spec message. */
    public static StorageConfig fromRest(String name, String type, JsonNode spec, boolean checkAvailable) {
        Inputs.name(Identifiers.Kind.STORAGE, "name", name);
        String t = StorageTypes.canonical(type, "type");
        ObjectNode n = Json.MAPPER.createObjectNode();
        n.put("global_unique_name", name);
        JsonNode sp = spec == null || spec.isNull() ? Json.MAPPER.createObjectNode() : spec;
        if (StorageTypes.eventReport(t)) {
            if (!sp.isObject()) {
                throw ApiException.invalid("spec", "spec of a " + t + " storage must be an object with "
                        + StorageTypes.EVENT_REPORT_DEFAULTS.keySet());
            }
            // absent (or null) fields take KVCM's defaults; a 0 given here is a 0 and is checked as one
            // a misspelt duration would silently take its default: refuse what is not one of the five
            for (String k : (Iterable<String>) sp::fieldNames) {
                if (!StorageTypes.EVENT_REPORT_DEFAULTS.containsKey(k)) {
                    throw ApiException.invalid("spec", "spec of a " + t + " storage has no field '"
                            + dev.kvpool.api.naming.Text.safe(k) + "'; its fields are "
                            + StorageTypes.EVENT_REPORT_DEFAULTS.keySet());
                }
            }
            ObjectNode filled = ((ObjectNode) sp).deepCopy();
            StorageTypes.EVENT_REPORT_DEFAULTS.forEach((k, v) -> {
                if (!filled.hasNonNull(k)) {
                    filled.put(k, v);
                }
            });
            sp = filled;
            n.put("storage_type", StorageTypes.wire(t).name());
        }
        n.set(StorageTypes.member(t), sp);
        n.put("check_storage_available_when_open", checkAvailable);
        try {
            return ProtoJson.merge(Json.write(n), StorageConfig.newBuilder()).build();
        } catch (ProtoJsonException ex) {
            throw ApiException.invalid("spec", "spec does not fit a " + t + " storage: " + ex.getMessage());
        }
    }

    /**
     * A storage config as a client sent it (REST or KVCM): its type's required fields (KVCM's AddStorage rules), the
     * name, every string bounded and free of control characters, every number in range. Returns the canonical type.
     */
    public static String check(StorageConfig c) {
        Inputs.strings(c, "", java.util.Set.of(), java.util.Set.of());
        String type = StorageTypes.validate(c);
        Inputs.name(Identifiers.Kind.STORAGE, "global_unique_name", c.getGlobalUniqueName());
        switch (c.getStorageSpecCase()) {
            case NFS -> Inputs.range("nfs.key_count_per_file", c.getNfs().getKeyCountPerFile(), 0, Inputs.MAX_KEYS_PER_FILE);
            case THREEFS -> Inputs.range("threefs.key_count_per_file", c.getThreefs().getKeyCountPerFile(), 0,
                    Inputs.MAX_KEYS_PER_FILE);
            case VCNSTHREEFS -> {
                Inputs.range("vcnsthreefs.key_count_per_file", c.getVcnsthreefs().getKeyCountPerFile(), 0,
                        Inputs.MAX_KEYS_PER_FILE);
                Inputs.range("vcnsthreefs.remote_port", c.getVcnsthreefs().getRemotePort(), 1, 65_535);
            }
            case TAIR_MEM_POOL -> Inputs.range("tair_mem_pool.timeout", c.getTairMemPool().getTimeout(), 0, 3_600_000);
            // event_report: StorageTypes.validate bounds its five durations
            default -> {
            }
        }
        return type;
    }

    public List<StorageEntity> list() {
        return repo.sorted();
    }

    public StorageEntity get(String name) {
        Inputs.name(Identifiers.Kind.STORAGE, "name", name);
        return repo.byName(name).orElseThrow(() -> ApiException.notFound("storage", name));
    }

    @Transactional
    public StorageEntity create(StorageConfig c, boolean enabled) {
        String type = check(c);
        outbox.lock();
        if (repo.byName(c.getGlobalUniqueName()).isPresent()) {
            throw ApiException.duplicate("name", "storage '" + c.getGlobalUniqueName() + "' already exists");
        }
        StorageEntity e = new StorageEntity();
        e.name = c.getGlobalUniqueName();
        e.type = type;
        e.enabled = enabled;
        e.checkAvailable = c.getCheckStorageAvailableWhenOpen();
        e.specJson = Json.proto(c);
        e.created();
        repo.persist(e);
        outbox.record(ConfigEvent.STORAGE, e.name, ConfigEvent.CREATED, e.version, Json.tree(view(e)));
        return e;
    }

    /** Replaces the spec (and the availability when {@code enabled} is non-null). */
    @Transactional
    public StorageEntity update(StorageConfig c, Boolean enabled, String ifMatch, boolean requireIfMatch) {
        String type = check(c);
        outbox.lock();
        StorageEntity e = get(c.getGlobalUniqueName());
        Etags.check(ifMatch, e.version, requireIfMatch);
        if (StorageTypes.eventReport(type) != StorageTypes.eventReport(e.type)) {
            // a group's data candidates hold only data storages and its event-report candidates only those
            List<String> users = StorageTypes.eventReport(e.type) ? groups.referencingForEvents(e.name)
                    : groups.referencing(e.name);
            if (!users.isEmpty()) {
                throw ApiException.conflict("type", "storage '" + e.name + "' is a " + e.type + " candidate of "
                        + "instance group(s) " + users + "; it cannot become a " + type + " storage while they list it");
            }
        }
        e.type = type;
        e.specJson = Json.proto(c);
        e.checkAvailable = c.getCheckStorageAvailableWhenOpen();
        if (enabled != null) {
            e.enabled = enabled;
        }
        return touched(e);
    }

    @Transactional
    public StorageEntity setEnabled(String name, boolean enabled, String ifMatch) {
        outbox.lock();
        StorageEntity e = get(name);
        Etags.check(ifMatch, e.version, false);
        e.enabled = enabled;
        return touched(e);
    }

    private StorageEntity touched(StorageEntity e) {
        e.changed();
        outbox.record(ConfigEvent.STORAGE, e.name, ConfigEvent.UPDATED, e.version, Json.tree(view(e)));
        return e;
    }

    @Transactional
    public void delete(String name, String ifMatch) {
        Inputs.existingName(Identifiers.Kind.STORAGE, "name", name);
        outbox.lock();
        StorageEntity e = repo.byName(name).orElseThrow(() -> ApiException.notFound("storage", name));
        Etags.check(ifMatch, e.version, false);
        List<String> users = groups.referencing(name);
        if (!users.isEmpty()) {
            throw ApiException.conflict("name", "storage '" + name + "' is still a storage candidate of instance "
                    + "group(s) " + users + "; remove it from their storageCandidates first");
        }
        users = groups.referencingForEvents(name);
        if (!users.isEmpty()) {
            throw ApiException.conflict("name", "storage '" + name + "' is still an event-report storage candidate "
                    + "of instance group(s) " + users + "; remove it from their eventReportStorageCandidates first");
        }
        repo.delete(e);
        outbox.record(ConfigEvent.STORAGE, name, ConfigEvent.DELETED, e.version + 1, null);
    }
}
