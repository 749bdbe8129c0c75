package dev.kvpool.meta.config;

import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.StorageDef;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Storages and instance groups read at start-up, until the control plane supplies them. Accepts KVCM's startup
 * file shape (§3.17: {@code storage_config{type, global_unique_name, storage_spec}}, {@code cache_prefer_strategy}
 * as an int, quota types as strings) so existing deployments reuse their files, with lists under "storages" and
 * "instance_groups" (a single "storage" / "instance_group" object works too).
 */
public final class StartupConfig implements Registry.Initial {
    private static final ObjectMapper JSON = new ObjectMapper();

    public final List<StorageDef> storages;
    /** Event-report storages (no bytes; kvcm-engine-events.md §6.1): never in {@link #storages}. */
    public final List<EventReportStorage> eventReportStorages;
    public final List<GroupConfig> groups;

    private StartupConfig(List<StorageDef> storages, List<EventReportStorage> eventReportStorages,
                          List<GroupConfig> groups) {
        this.storages = storages;
        this.eventReportStorages = eventReportStorages;
        this.groups = groups;
        java.util.Set<String> data = new java.util.HashSet<>();
        storages.forEach(s -> data.add(s.name()));
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (EventReportStorage e : eventReportStorages) {
            if (data.contains(e.name()) || !seen.add(e.name())) {
                throw new IllegalArgumentException("storage '" + e.name() + "' is defined twice");
            }
        }
    }

    /** A configuration built elsewhere (the control plane's snapshot). */
    static StartupConfig of(List<StorageDef> storages, List<EventReportStorage> eventReportStorages,
                            List<GroupConfig> groups) {
        return new StartupConfig(List.copyOf(storages), List.copyOf(eventReportStorages), List.copyOf(groups));
    }

    /** The name of the event-report storage of the built-in default group (engines report there out of the box). */
    public static final String DEFAULT_EVENT_REPORT_STORAGE = "engine_events";

    /** KVPool's built-in default: KVCM's default group and file storage, rooted under the data directory. */
    public static StartupConfig defaults(Path dataDir) {
        ObjectNode spec = JSON.createObjectNode();
        spec.put("root_path", Storage.normaliseRoot(dataDir.toAbsolutePath().resolve("nfs").toString()));
        spec.put("key_count_per_file", 8);
        ObjectNode root = JSON.createObjectNode();
        com.fasterxml.jackson.databind.node.ArrayNode all = root.putArray("storages");
        ObjectNode st = all.addObject().putObject("storage_config");
        st.put("type", "file").put("global_unique_name", "nfs_01").set("storage_spec", spec);
        // where engines report their own caches (ReportEvent): defaults, listed by the default group
        all.addObject().putObject("storage_config").put("type", "event_report_l1p5")
                .put("global_unique_name", DEFAULT_EVENT_REPORT_STORAGE).putObject("storage_spec");
        root.putArray("instance_groups").add(defaultGroupJson());
        return parse(root, "built-in default");
    }

    private static ObjectNode defaultGroupJson() {
        try {
            return (ObjectNode) JSON.readTree("""
                    {"name":"default","storage_candidates":["nfs_01"],"global_quota_group_name":"default_quota_group",
                     "event_report_storage_candidates":["engine_events"],
                     "max_instance_count":100,
                     "quota":{"capacity":30000000000,"quota_config":[{"storage_type":"file","capacity":10000000000},
                       {"storage_type":"hf3fs","capacity":10000000000},{"storage_type":"pace","capacity":10000000000}]},
                     "cache_config":{"reclaim_strategy":{"reclaim_policy":1,"trigger_strategy":{"used_percentage":0.8},
                       "delay_before_delete_ms":1000,"storage_unique_name":""},
                       "cache_prefer_strategy":2,
                       "meta_indexer_config":{"max_key_count":1000000,"mutex_shard_num":16,"batch_key_size":16,
                         "meta_storage_backend_config":{"storage_type":"local","storage_uri":""},
                         "meta_cache_policy_config":{"capacity":10000,"type":"LRU","cache_shard_bits":0,"high_pri_pool_ratio":0.0}}},
                     "user_data":"{\\"description\\":\\"KVPool default instance group\\"}","version":1}""");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public static StartupConfig load(Path file) {
        try {
            return parse(JSON.readTree(Files.readAllBytes(file)), file.toString());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read startup config " + file + ": " + e.getMessage(), e);
        }
    }

    static StartupConfig parse(JsonNode root, String source) {
        try {
            List<StorageDef> storages = new ArrayList<>();
            List<EventReportStorage> reports = new ArrayList<>();
            for (JsonNode s : list(root, "storages", "storage")) {
                JsonNode def = s.has("storage_config") ? s.get("storage_config") : s;
                if (isEventReport(def.path("type").asText(""))) {
                    reports.add(eventReportStorage(def));
                } else {
                    storages.add(storage(def));
                }
            }
            List<GroupConfig> groups = new ArrayList<>();
            for (JsonNode g : list(root, "instance_groups", "instance_group")) {
                groups.add(group(g));
            }
            return new StartupConfig(storages, reports, groups);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("startup config " + source + ": " + e.getMessage(), e);
        }
    }

    private static List<JsonNode> list(JsonNode root, String plural, String single) {
        List<JsonNode> out = new ArrayList<>();
        if (root.has(plural)) {
            root.get(plural).forEach(out::add);
        }
        if (root.has(single)) {
            out.add(root.get(single));
        }
        if (root.has(single + "_config") && !single.equals("storage")) {
            out.add(root.get(single + "_config"));
        }
        if (single.equals("storage") && root.has("storage_config")) {
            out.add(root);
        }
        return out;
    }

    /** A storage's local root: an absolute path without '.' or '..' segments or control characters. */
    static String localRoot(String p, String what) {
        String bad = Text.opaqueProblem(p, 4096);
        if (bad != null) {
            throw new IllegalArgumentException(what + ": " + bad);
        }
        java.nio.file.Path path;
        try {
            path = java.nio.file.Path.of(p);
        } catch (java.nio.file.InvalidPathException e) {
            throw new IllegalArgumentException(what + " '" + Text.safe(p) + "' is not a path");
        }
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException(what + " '" + Text.safe(p) + "' must be an absolute path");
        }
        for (java.nio.file.Path seg : path) {
            if (seg.toString().equals(".") || seg.toString().equals("..")) {
                throw new IllegalArgumentException(what + " '" + Text.safe(p) + "' must not hold '.' or '..' segments");
            }
        }
        return p;
    }

    /** No control characters and no '.' or '..' segments (a relative root_dir may be joined to the mountpoint). */
    static void noDotSegments(String p, String what) {
        String bad = Text.opaqueProblem(p, 4096);
        if (bad != null) {
            throw new IllegalArgumentException(what + ": " + bad);
        }
        for (String seg : p.split("/")) {
            if (seg.equals(".") || seg.equals("..")) {
                throw new IllegalArgumentException(what + " '" + Text.safe(p) + "' must not hold '.' or '..' segments");
            }
        }
    }

    /** key_count_per_file: 1 when absent or 0 (KVCM's one block per file), up to what a slot address can number. */
    static int keysPerFile(JsonNode spec, String what) {
        JsonNode n = spec.path("key_count_per_file");
        long v = n.isMissingNode() || n.isNull() ? 1 : n.asLong(-1);
        if (v < 0 || v > 1 << dev.kvpool.meta.slots.SlotAllocator.SLOT_BITS) {
            throw new IllegalArgumentException(what + " key_count_per_file must be between 0 (one per file) and "
                    + (1 << dev.kvpool.meta.slots.SlotAllocator.SLOT_BITS) + ", got " + n);
        }
        return (int) Math.max(1, v);
    }

    private static String req(JsonNode n, String field, String what) {
        String v = n.path(field).asText("");
        if (v.isEmpty()) {
            throw new IllegalArgumentException(what + ": '" + field + "' is required");
        }
        return v;
    }

    /** Whether a storage type names an event-report storage: L1P5 or L2 (the control plane's REST and KVCM names). */
    public static boolean isEventReport(String type) {
        return eventReportL2(type) != null;
    }

    /** TRUE for L2, FALSE for L1P5 (the legacy "st_event_report" included), null for any other type. */
    private static Boolean eventReportL2(String type) {
        return switch (type.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "event_report_l1p5", "st_event_report_l1p5", "7", "event_report", "st_event_report" -> Boolean.FALSE;
            case "event_report_l2", "st_event_report_l2", "8" -> Boolean.TRUE;
            default -> null;
        };
    }

    /** Longest event-report duration taken (a day, as the control plane bounds it). */
    static final long MAX_EVENT_REPORT_MS = 86_400_000;

    /**
     * An event-report storage ({@code global_unique_name}, {@code type}, {@code storage_spec} with the five
     * durations; absent ones take KVCM's defaults, numbers or decimal strings as proto JSON writes int64).
     */
    static EventReportStorage eventReportStorage(JsonNode s) {
        String name = req(s, "global_unique_name", "storage");
        Identifiers.require(Identifiers.Kind.STORAGE, "storage name", name);
        boolean l2 = eventReportL2(req(s, "type", "storage '" + name + "'"));
        JsonNode spec = s.path("storage_spec");
        String what = "event-report storage '" + name + "'";
        return new EventReportStorage(name, l2,
                millis(spec, "heartbeat_timeout_ms", EventReportStorage.HEARTBEAT_TIMEOUT_MS, 1, what),
                millis(spec, "cleanup_grace_ms", EventReportStorage.CLEANUP_GRACE_MS, 0, what),
                millis(spec, "liveness_check_interval_ms", EventReportStorage.LIVENESS_CHECK_INTERVAL_MS, 1, what),
                millis(spec, "snapshot_min_interval_ms", EventReportStorage.SNAPSHOT_MIN_INTERVAL_MS, 1, what),
                millis(spec, "snapshot_delta_drain_timeout_ms", EventReportStorage.SNAPSHOT_DRAIN_TIMEOUT_MS, 0, what));
    }

    private static long millis(JsonNode spec, String field, long dflt, long min, String what) {
        JsonNode n = spec.path(field);
        if (n.isMissingNode() || n.isNull()) {
            return dflt;
        }
        long v = Long.MIN_VALUE;
        if (n.isIntegralNumber() && n.canConvertToLong()) {
            v = n.asLong();
        } else if (n.isTextual()) {
            try {
                v = Long.parseLong(n.asText());
            } catch (NumberFormatException e) {
                v = Long.MIN_VALUE;
            }
        }
        if (v < min || v > MAX_EVENT_REPORT_MS) {
            throw new IllegalArgumentException(what + ": " + field + " must be a whole number of milliseconds "
                    + "between " + min + " and " + MAX_EVENT_REPORT_MS + ", got " + Text.safe(n.toString()));
        }
        return v;
    }

    static StorageDef storage(JsonNode s) {
        String name = req(s, "global_unique_name", "storage");
        StorageKind kind = StorageKind.parse(req(s, "type", "storage '" + name + "'"));
        JsonNode spec = s.path("storage_spec");
        ObjectNode out = JSON.createObjectNode();
        String what = "storage '" + name + "'";
        return switch (kind) {
            case FILE -> {
                String root = Storage.normaliseRoot(localRoot(req(spec, "root_path", what), what + " root_path"));
                int kcpf = keysPerFile(spec, what);
                out.put("root_path", root).put("key_count_per_file", kcpf);
                yield new StorageDef(name, kind, root, kcpf, out);
            }
            case HF3FS, VCNS_HF3FS -> {
                String mount = localRoot(req(spec, "mountpoint", what), what + " mountpoint");
                String rootDir = req(spec, "root_dir", what);
                // KVCM joins them as Path.resolve does (an absolute root_dir replaces the mountpoint, §3.8.2): an
                // operator's choice; what must hold is that the result is a clean absolute root
                noDotSegments(rootDir, what + " root_dir");
                int kcpf = keysPerFile(spec, what);
                out.put("cluster_name", spec.path("cluster_name").asText("")).put("mountpoint", mount)
                        .put("root_dir", rootDir).put("key_count_per_file", kcpf);
                if (kind == StorageKind.VCNS_HF3FS) {
                    out.put("remote_host", spec.path("remote_host").asText(""))
                            .put("remote_port", spec.path("remote_port").asInt(0))
                            .put("meta_storage_uri", spec.path("meta_storage_uri").asText(""));
                }
                yield new StorageDef(name, kind, Storage.hf3fsBase(mount, rootDir), kcpf, out);
            }
            case MOONCAKE -> {
                for (String k : List.of("local_hostname", "metadata_connstring", "protocol", "rdma_device")) {
                    out.put(k, spec.path(k).asText(""));
                }
                out.put("master_server_entry", spec.path("master_server_entry")
                        .asText(spec.path("master_service_entry").asText("")));
                yield new StorageDef(name, kind, "", 1, out);
            }
            case PACE -> {
                out.put("enable_vipserver", spec.path("enable_vipserver").asBoolean(false))
                        .put("domain", req(spec, "domain", what)).put("timeout", spec.path("timeout").asInt(0));
                yield new StorageDef(name, kind, "", 1, out);
            }
        };
    }

    /** A byte count of the configuration: absent is 0, else a whole number in [0, Limits.MAX_QUOTA_BYTES]. */
    static long bytes(JsonNode n, String what) {
        if (n.isMissingNode() || n.isNull()) {
            return 0;
        }
        long v = -1; // a number, or a decimal string as KVCM's proto JSON writes int64
        if (n.isIntegralNumber() && n.canConvertToLong()) {
            v = n.asLong();
        } else if (n.isTextual()) {
            try {
                v = Long.parseLong(n.asText());
            } catch (NumberFormatException e) {
                v = -1;
            }
        }
        if (v < 0 || v > Limits.MAX_QUOTA_BYTES) {
            throw new IllegalArgumentException(what + " must be a whole number of bytes between 0 and "
                    + Limits.MAX_QUOTA_BYTES + ", got " + n);
        }
        return v;
    }

    static GroupConfig group(JsonNode g) {
        String name = req(g, "name", "instance group");
        // the startup file and the control plane's groups pass the same rules as names clients send
        Identifiers.require(Identifiers.Kind.GROUP, "instance group name", name);
        List<String> candidates = new ArrayList<>();
        g.path("storage_candidates").forEach(c -> candidates.add(
                Identifiers.require(Identifiers.Kind.STORAGE, "instance group '" + name + "' storage_candidates", c.asText())));
        List<String> reportCandidates = new ArrayList<>();
        // K7 spelling first; admin @0368fbf's spelling is accepted too (kvcm-engine-events.md §6.1)
        JsonNode rc = g.has("event_report_storage_candidates") ? g.get("event_report_storage_candidates")
                : g.path("event_reporting_storage_candidates");
        rc.forEach(c -> reportCandidates.add(Identifiers.require(Identifiers.Kind.STORAGE,
                "instance group '" + name + "' event_report_storage_candidates", c.asText())));
        JsonNode quota = g.path("quota");
        Map<StorageKind, Long> types = new EnumMap<>(StorageKind.class);
        for (JsonNode q : quota.path("quota_config")) {
            types.put(StorageKind.parse(q.path("storage_type").asText()).usageKind(),
                    bytes(q.path("capacity"), "instance group '" + name + "' quota_config capacity"));
        }
        JsonNode cache = g.path("cache_config");
        JsonNode prefer = cache.has("cache_prefer_strategy") ? cache.get("cache_prefer_strategy")
                : cache.path("data_storage_strategy");
        int preferWire = prefer.isNumber() ? prefer.asInt() : preferByName(prefer.asText("CPS_UNSPECIFIED"));
        JsonNode idx = cache.path("meta_indexer_config");
        long maxKeys = idx.path("max_key_count").asLong(1_000_000);
        if (maxKeys < 0 || maxKeys > Limits.MAX_KEY_COUNT) {
            throw new IllegalArgumentException("instance group '" + name + "': max_key_count "
                    + Limits.range(maxKeys, 0, Limits.MAX_KEY_COUNT));
        }
        int shards = idx.path("mutex_shard_num").asInt(16);
        if (maxKeys > 0 && shards > maxKeys) {
            throw new IllegalArgumentException("instance group '" + name + "': mutex_shard_num " + shards
                    + " exceeds max_key_count " + maxKeys);
        }
        JsonNode sc = idx.path("meta_cache_policy_config");
        return new GroupConfig(name, candidates, g.path("global_quota_group_name").asText(name),
                g.path("max_instance_count").asLong(0), bytes(quota.path("capacity"), "instance group '" + name + "' quota.capacity"), types,
                GroupConfig.Prefer.ofWire(preferWire), maxKeys, shards, sc.path("capacity").asInt(0),
                g.path("extra_info").asText(""), g.path("user_data").asText(""), g.path("version").asLong(1),
                ReclaimConfig.fromJson(cache.path("reclaim_strategy")), reportCandidates);
    }

    private static int preferByName(String n) {
        String[] names = {"CPS_UNSPECIFIED", "CPS_ALWAYS_3FS", "CPS_PREFER_3FS", "CPS_ALWAYS_MOONCAKE",
            "CPS_PREFER_MOONCAKE", "CPS_ALWAYS_TAIR_MEMPOOL", "CPS_PREFER_TAIR_MEMPOOL", "CPS_ALWAYS_VCNS_3FS",
            "CPS_PREFER_VCNS_3FS"};
        for (int i = 0; i < names.length; i++) {
            if (names[i].equalsIgnoreCase(n)) {
                return i;
            }
        }
        throw new IllegalArgumentException("unknown cache prefer strategy '" + n + "'");
    }

    @Override
    public List<EventReportStorage> eventReportStorages() {
        return eventReportStorages;
    }

    @Override
    public List<GroupConfig> groups() {
        return groups;
    }

    /** Storages by name in file order; duplicates are an error. */
    @Override
    public Map<String, StorageDef> storagesByName() {
        Map<String, StorageDef> m = new LinkedHashMap<>();
        for (StorageDef s : storages) {
            if (m.put(s.name(), s) != null) {
                throw new IllegalArgumentException("storage '" + s.name() + "' is defined twice");
            }
        }
        return m;
    }
}
