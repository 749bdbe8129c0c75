package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.index.StorageKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The KVCM startup-file shape (§3.17) and errors that name the field at fault. */
class StartupConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static StartupConfig parse(String json) throws Exception {
        return StartupConfig.parse(JSON.readTree(json), "test");
    }

    private static String messageOf(String json) {
        return assertThrows(IllegalArgumentException.class, () -> parse(json)).getMessage();
    }

    private static final String STORAGE = "{\"storage_config\":{\"type\":\"file\",\"global_unique_name\":\"nfs_01\","
            + "\"storage_spec\":{\"root_path\":\"/tmp/nfs/\",\"key_count_per_file\":8}}}";

    private static String group(String body) {
        return "{\"storages\":[" + STORAGE + "],\"instance_groups\":[{\"name\":\"g\",\"storage_candidates\":[\"nfs_01\"],"
                + "\"quota\":{\"capacity\":1000}" + body + "}]}";
    }

    @Test
    void repositoryDefaultIsKvcmsBuiltInDefault() {
        StartupConfig c = StartupConfig.load(Path.of("../config/kvcm-default-startup.json"));
        assertEquals(1, c.storages.size());
        dev.kvpool.meta.storage.StorageDef s = c.storages.get(0);
        assertEquals("nfs_01", s.name());
        assertEquals(StorageKind.FILE, s.kind());
        assertEquals("/tmp/nfs/", s.basePath());
        assertEquals(8, s.keyCountPerFile());
        assertEquals("{\"root_path\":\"/tmp/nfs/\",\"key_count_per_file\":8}", s.spec().toString());
        assertEquals(1, c.groups.size());
        GroupConfig g = c.groups.get(0);
        assertEquals("default", g.name());
        assertEquals(List.of("nfs_01"), g.storageCandidates());
        assertEquals("default_quota_group", g.quotaGroupName());
        assertEquals(100, g.maxInstanceCount());
        assertEquals(30_000_000_000L, g.capacity());
        assertEquals(Map.of(StorageKind.FILE, 10_000_000_000L, StorageKind.HF3FS, 10_000_000_000L,
                StorageKind.PACE, 10_000_000_000L), g.typeQuotas());
        assertEquals(new GroupConfig.Prefer(StorageKind.HF3FS, false), g.prefer()); // 2 = CPS_PREFER_3FS
        assertEquals(1_000_000, g.maxKeyCount());
        assertEquals(16, g.mutexShardNum());
        assertEquals(1, g.version());
    }

    @Test
    void builtInDefaultRootsTheStorageInTheDataDir(@TempDir Path dir) {
        StartupConfig c = StartupConfig.defaults(dir);
        assertEquals(dir.toAbsolutePath().resolve("nfs") + "/", c.storages.get(0).basePath());
        assertEquals("default", c.groups.get(0).name());
        assertEquals(30_000_000_000L, c.groups.get(0).capacity());
    }

    @Test
    void storageTypesAndTheirSpecs() throws Exception {
        StartupConfig c = parse("{\"storages\":["
                + "{\"storage_config\":{\"type\":\"file\",\"global_unique_name\":\"f\",\"storage_spec\":{\"root_path\":\"/a\"}}},"
                + "{\"storage_config\":{\"type\":\"hf3fs\",\"global_unique_name\":\"h\",\"storage_spec\":{\"mountpoint\":\"/mnt/3fs\","
                + "\"root_dir\":\"kv\",\"key_count_per_file\":4,\"touch_file_when_create\":true}}},"
                + "{\"storage_config\":{\"type\":\"mooncake\",\"global_unique_name\":\"m\",\"storage_spec\":{\"local_hostname\":\"h\","
                + "\"metadata_connstring\":\"c\",\"protocol\":\"rdma\",\"rdma_device\":\"d\",\"master_service_entry\":\"e\"}}},"
                + "{\"storage_config\":{\"type\":\"vcns_hf3fs\",\"global_unique_name\":\"v\",\"storage_spec\":{\"mountpoint\":\"/m\","
                + "\"root_dir\":\"/r\",\"remote_port\":9}}}],"
                + "\"instance_groups\":[]}");
        Map<String, dev.kvpool.meta.storage.StorageDef> s = c.storagesByName();
        assertEquals("/a/", s.get("f").basePath());
        assertEquals(1, s.get("f").keyCountPerFile());
        assertEquals("/mnt/3fs/kv", s.get("h").basePath());
        assertEquals("{\"cluster_name\":\"\",\"mountpoint\":\"/mnt/3fs\",\"root_dir\":\"kv\",\"key_count_per_file\":4}",
                s.get("h").spec().toString(), "no touch_file_when_create key (§3.1.4)");
        assertEquals("{\"local_hostname\":\"h\",\"metadata_connstring\":\"c\",\"protocol\":\"rdma\",\"rdma_device\":\"d\","
                + "\"master_server_entry\":\"e\"}", s.get("m").spec().toString());
        assertEquals(StorageKind.VCNS_HF3FS, s.get("v").kind());
        assertEquals("/r", s.get("v").basePath());
        assertTrue(s.get("v").spec().toString().contains("\"remote_port\":9"));
    }

    @Test
    void singleObjectFormsAreAccepted() throws Exception {
        StartupConfig c = parse("{\"storage\":" + STORAGE + ",\"instance_group\":{\"name\":\"g\","
                + "\"storage_candidates\":[\"nfs_01\"],\"quota\":{\"capacity\":5}}}");
        assertEquals(1, c.storages.size());
        assertEquals("g", c.groups.get(0).name());
        assertEquals("g", c.groups.get(0).quotaGroupName(), "global_quota_group_name defaults to the name");
    }

    @Test
    void groupDetails() throws Exception {
        GroupConfig g = parse(group(",\"max_instance_count\":3,\"global_quota_group_name\":\"q\",\"extra_info\":\"{}\","
                + "\"quota\":{\"capacity\":1000,\"quota_config\":[{\"storage_type\":\"vcns_hf3fs\",\"capacity\":7}]},"
                + "\"cache_config\":{\"data_storage_strategy\":\"CPS_ALWAYS_MOONCAKE\","
                + "\"meta_indexer_config\":{\"max_key_count\":16,\"mutex_shard_num\":4}}")).groups.get(0);
        assertEquals(Map.of(StorageKind.HF3FS, 7L), g.typeQuotas(), "vcns_hf3fs counts as hf3fs");
        assertEquals(new GroupConfig.Prefer(StorageKind.MOONCAKE, true), g.prefer());
        assertEquals(16, g.maxKeyCount());
        assertEquals(4, g.mutexShardNum());
        assertEquals("{}", g.extraInfo());
        assertEquals(3, g.maxInstanceCount());
        GroupConfig none = parse(group("")).groups.get(0);
        assertNull(none.prefer().kind());
        assertEquals(1_000_000, none.maxKeyCount());
    }

    @Test
    void errorsNameTheField() {
        assertTrue(messageOf("{\"storages\":[{\"storage_config\":{\"type\":\"file\",\"storage_spec\":{\"root_path\":\"/a\"}}}]}")
                .contains("global_unique_name"));
        assertTrue(messageOf("{\"storages\":[{\"storage_config\":{\"type\":\"file\",\"global_unique_name\":\"f\","
                + "\"storage_spec\":{}}}]}").contains("root_path"));
        String noMount = messageOf("{\"storages\":[{\"storage_config\":{\"type\":\"hf3fs\",\"global_unique_name\":\"h\","
                + "\"storage_spec\":{\"root_dir\":\"x\"}}}]}");
        assertTrue(noMount.contains("mountpoint") && noMount.contains("'h'"), noMount);
        assertTrue(messageOf("{\"storages\":[{\"storage_config\":{\"global_unique_name\":\"f\"}}]}").contains("type"));
        assertTrue(messageOf("{\"storages\":[{\"storage_config\":{\"type\":\"tape\",\"global_unique_name\":\"f\"}}]}")
                .contains("tape"));
        assertTrue(messageOf("{\"instance_groups\":[{\"storage_candidates\":[\"a\"],\"quota\":{\"capacity\":1}}]}")
                .contains("name"));
        assertTrue(messageOf("{\"instance_groups\":[{\"name\":\"g\",\"quota\":{\"capacity\":1}}]}")
                .contains("storage_candidates"));
        assertTrue(messageOf("{\"instance_groups\":[{\"name\":\"g\",\"storage_candidates\":[\"a\"]}]}").contains("capacity"));
        assertTrue(messageOf(group(",\"cache_config\":{\"meta_indexer_config\":{\"mutex_shard_num\":3}}"))
                .contains("mutex_shard_num"));
        assertTrue(messageOf(group(",\"cache_config\":{\"meta_indexer_config\":{\"max_key_count\":8,\"mutex_shard_num\":16}}"))
                .contains("max_key_count"));
        assertTrue(messageOf(group(",\"cache_config\":{\"cache_prefer_strategy\":42}")).contains("42"));
        assertTrue(messageOf(group(",\"quota\":{\"capacity\":1,\"quota_config\":[{\"storage_type\":\"floppy\",\"capacity\":1}]}"))
                .contains("floppy"));
        // the source is named too
        assertTrue(messageOf("{\"storages\":[{\"storage_config\":{\"type\":\"file\"}}]}").startsWith("startup config test"));
    }

    @Test
    void duplicatesAndUnreadableFiles(@TempDir Path dir) throws Exception {
        StartupConfig twice = parse("{\"storages\":[" + STORAGE + "," + STORAGE + "]}");
        assertTrue(assertThrows(IllegalArgumentException.class, twice::storagesByName).getMessage().contains("nfs_01"));
        Path missing = dir.resolve("missing.json");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> StartupConfig.load(missing)).getMessage()
                .contains(missing.toString()));
        Path broken = dir.resolve("broken.json");
        Files.writeString(broken, "{\"storages\":[");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> StartupConfig.load(broken)).getMessage()
                .contains(broken.toString()));
        assertFalse(parse("{}").storages.size() > 0);
    }

    @Test
    void eventReportStoragesAreNotDataStorages(@TempDir Path dir) throws Exception {
        StartupConfig c = parse("{\"storages\":[" + STORAGE + ","
                + "{\"storage_config\":{\"type\":\"event_report_l1p5\",\"global_unique_name\":\"ev1\"}},"
                + "{\"storage_config\":{\"type\":\"ST_EVENT_REPORT_L2\",\"global_unique_name\":\"ev2\","
                + "\"storage_spec\":{\"heartbeat_timeout_ms\":\"1000\",\"cleanup_grace_ms\":0,"
                + "\"snapshot_delta_drain_timeout_ms\":0}}},"
                + "{\"type\":\"st_event_report\",\"global_unique_name\":\"ev3\"}],"
                + "\"instance_groups\":[{\"name\":\"g\",\"storage_candidates\":[\"nfs_01\"],"
                + "\"event_reporting_storage_candidates\":[\"ev2\",\"ev1\"],\"quota\":{\"capacity\":1000}}]}");
        assertEquals(List.of("nfs_01"), c.storages.stream().map(dev.kvpool.meta.storage.StorageDef::name).toList());
        assertEquals(List.of(EventReportStorage.withDefaults("ev1", false),
                new EventReportStorage("ev2", true, 1000, 0, 5000, 30_000, 0),
                EventReportStorage.withDefaults("ev3", false)), c.eventReportStorages);
        assertEquals(List.of("ev2", "ev1"), c.groups.get(0).eventReportStorageCandidates());
        // bounds name the storage and the field
        for (String bad : List.of("\"snapshot_min_interval_ms\":0", "\"heartbeat_timeout_ms\":-1",
                "\"cleanup_grace_ms\":\"x\"", "\"liveness_check_interval_ms\":86400001")) {
            String m = messageOf("{\"storages\":[{\"type\":\"event_report_l2\",\"global_unique_name\":\"evb\","
                    + "\"storage_spec\":{" + bad + "}}]}");
            assertTrue(m.contains("evb") && m.contains(bad.substring(1, bad.indexOf('"', 1))), m);
        }
        assertTrue(messageOf("{\"storages\":[" + STORAGE + ",{\"type\":\"event_report_l2\","
                + "\"global_unique_name\":\"nfs_01\"}]}").contains("defined twice"));
        String bad = messageOf("{\"storages\":[{\"type\":\"event_report_l2\",\"global_unique_name\":\"a/b\"}]}");
        assertTrue(bad.contains("storage name"), bad);

        // the built-in default: the default group reports to engine_events (L1P5, defaults), which holds no bytes
        StartupConfig d = StartupConfig.defaults(dir);
        assertEquals(List.of(EventReportStorage.withDefaults(StartupConfig.DEFAULT_EVENT_REPORT_STORAGE, false)),
                d.eventReportStorages);
        assertEquals(List.of("engine_events"), d.groups.get(0).eventReportStorageCandidates());
        assertEquals(List.of("nfs_01"), d.storages.stream().map(dev.kvpool.meta.storage.StorageDef::name).toList());
        var store = new dev.kvpool.meta.store.embedded.EmbeddedStore(dev.kvpool.meta.store.embedded.EmbeddedStore.Options.memory(4));
        try {
            var reg = new dev.kvpool.meta.registry.Registry(store, d, store::index);
            assertEquals(d.eventReportStorages.get(0), reg.eventReportStorageFor("default", false));
            assertNull(reg.eventReportStorageFor("default", true));
            assertNull(reg.storage("engine_events"));
        } finally {
            store.close();
        }
    }
}
