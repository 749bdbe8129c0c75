package dev.kvpool.api.proto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import dev.kvpool.api.SharedData;
import dev.kvpool.api.proto.admin.AdminServiceProto;
import dev.kvpool.api.proto.debug.DebugServiceProto;
import dev.kvpool.api.proto.meta.MetaServiceProto;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The admin and debug protos against the tables of shared/spec/kvcm-compat.md §2.2, §2.3 and §B.1/§B.6, read
 * from the spec file itself so that a renumbered field cannot slip through.
 */
class ProtoContractTest {

    private static final FileDescriptor META = MetaServiceProto.getDescriptor();
    private static final FileDescriptor ADMIN = AdminServiceProto.getDescriptor();
    private static final FileDescriptor DEBUG = DebugServiceProto.getDescriptor();

    /** Admin messages whose field list the spec declares equal to the meta namesake's baseline fields. */
    private static final List<String> SHARED_WITH_META = List.of("Status", "LocalStorageSpec", "ThreeFSStorageSpec",
            "VcnsThreeFSStorageSpec", "MooncakeStorageSpec", "TairMemPoolStorageSpec", "NfsStorageSpec",
            "BoolMasksType", "BlockMask", "GetCacheMetaRequest", "LocationSpec", "CacheLocation", "LocationSpecInfo",
            "LocationSpecGroup", "GetCacheMetaResponse", "RemoveCacheRequest", "ModelDeployment", "InstanceInfo",
            "RegisterInstanceRequest", "GetInstanceInfoRequest");

    record Row(String message, String cell, String field, String type) {
        int number() {
            Matcher m = Pattern.compile("(\\d+)\\s*$").matcher(cell);
            assertTrue(m.find(), "no field number in " + this);
            return Integer.parseInt(m.group(1));
        }

        boolean oneof() {
            return cell.contains("oneof");
        }
    }

    private static String spec;

    @BeforeAll
    static void readSpec() throws IOException {
        spec = Files.readString(SharedData.sharedDir().resolve("spec/kvcm-compat.md"));
    }

    private static String section(String startHeading, String endHeading) {
        int start = spec.indexOf(startHeading);
        int end = spec.indexOf(endHeading, start);
        assertTrue(start >= 0 && end > start, "spec section " + startHeading);
        return spec.substring(start, end);
    }

    /** Rows of a "| Message | # | Field | Type | Notes |" table; a blank message cell continues the previous one. */
    private static List<Row> messageRows(String section) {
        List<Row> rows = new ArrayList<>();
        String message = null;
        for (String line : section.split("\n")) {
            if (!line.startsWith("|") || line.startsWith("|---") || line.startsWith("| Message")) {
                continue;
            }
            String[] c = line.split("\\|", -1);
            if (c.length < 6) {
                continue;
            }
            if (!c[1].isBlank()) {
                message = c[1].trim();
            }
            String number = c[2].trim();
            if (number.equals("–")) {
                continue; // "(no fields)"
            }
            rows.add(new Row(message, number, c[3].trim(), c[4].trim()));
        }
        return rows;
    }

    private static void assertField(FileDescriptor file, Row row) {
        Descriptor d = file.findMessageTypeByName(row.message());
        assertNotNull(d, file.getPackage() + " lacks message " + row.message());
        FieldDescriptor f = d.findFieldByName(row.field());
        assertNotNull(f, row.message() + " lacks " + row.field());
        assertEquals(row.number(), f.getNumber(), row.toString());
        assertEquals(row.oneof(), f.getRealContainingOneof() != null, "oneof membership of " + row);
        String type = row.type().replace("**", "").trim();
        boolean repeated = type.startsWith("rep ");
        assertEquals(repeated, f.isRepeated(), row.toString());
        String typeName = (repeated ? type.substring(4) : type).split("[ ;]")[0];
        assertEquals(typeName, typeName(f), row.toString());
    }

    private static String typeName(FieldDescriptor f) {
        return switch (f.getType()) {
            case MESSAGE -> f.getMessageType().getName();
            case ENUM -> f.getEnumType().getName();
            default -> f.getType().name().toLowerCase();
        };
    }

    @Test
    void adminMessagesMatchTable222() {
        List<Row> rows = messageRows(section("#### 2.2.2 Messages", "#### 2.2.3"));
        assertTrue(rows.size() > 120, "parsed " + rows.size() + " rows");
        rows.forEach(r -> assertField(ADMIN, r));
        // and nothing beyond the table (plus the §B additions checked below)
        Map<String, Long> declared = rows.stream().collect(Collectors.groupingBy(Row::message, Collectors.counting()));
        Map<String, Integer> additions = Map.of("MetaIndexerConfig", 1, "InstanceGroup", 3,
                "GetManagerClusterInfoResponse", 1, "StorageConfig", 4);
        declared.forEach((message, count) -> assertEquals(count + additions.getOrDefault(message, 0),
                ADMIN.findMessageTypeByName(message).getFields().size(), message));
    }

    @Test
    void sharedShapeAdminMessagesEqualTheirMetaNamesakes() {
        List<Row> metaRows = messageRows(section("#### 2.1.2 Messages", "#### 2.1.3"));
        for (String name : SHARED_WITH_META) {
            List<Row> rows = metaRows.stream().filter(r -> r.message().equals(name)).toList();
            rows.forEach(r -> assertField(ADMIN, r));
            assertEquals(rows.size(), ADMIN.findMessageTypeByName(name).getFields().size(), name);
        }
        assertTrue(ADMIN.findMessageTypeByName("LocalStorageSpec").getFields().isEmpty());
    }

    @Test
    void adminServiceHasThe28RpcsOfTable223PlusListInstanceGroup() {
        ServiceDescriptor service = ADMIN.findServiceByName("AdminService");
        Map<String, String[]> table = new LinkedHashMap<>();
        for (String line : section("#### 2.2.3 Service", "### 2.3").split("\n")) {
            String[] c = line.split("\\|", -1);
            if (c.length >= 4 && c[1].trim().matches("[A-Z]\\w+") && !c[1].trim().equals("RPC")) {
                table.put(c[1].trim(), new String[] {c[2].trim(), c[3].trim()});
            }
        }
        assertEquals(28, table.size());
        table.put("ListInstanceGroup", new String[] {"ListInstanceGroupRequest", "ListInstanceGroupResponse"});
        assertEquals(table.size(), service.getMethods().size());
        table.forEach((rpc, io) -> {
            MethodDescriptor m = service.findMethodByName(rpc);
            assertNotNull(m, rpc);
            assertEquals(io[0], m.getInputType().getName(), rpc);
            assertEquals(io[1], m.getOutputType().getName(), rpc);
            assertFalse(m.isClientStreaming() || m.isServerStreaming(), rpc);
        });
    }

    @Test
    void adminEnumsMatchTable221() {
        String section = section("#### 2.2.1 Enums", "#### 2.2.2");
        Matcher row = Pattern.compile("^\\| (\\w+) \\| ([A-Z0-9_]+=\\d+(?:, [A-Z0-9_]+=\\d+)*) \\|$", Pattern.MULTILINE)
                .matcher(section);
        int checked = 0;
        while (row.find()) {
            String values = row.group(2);
            if (row.group(1).equals("StorageType")) {
                // kvcm-engine-events.md §2 (K7)
                values += ", ST_DUMMY=6, ST_EVENT_REPORT_L1P5=7, ST_EVENT_REPORT_L2=8, ST_TAIRMEMPOOL_SSD=9";
            }
            assertEnum(ADMIN.findEnumTypeByName(row.group(1)), values);
            checked++;
        }
        assertEquals(4, checked); // StorageType, ReclaimPolicy, CachePreferStrategy, AccountRole
        assertEquals(values(META.findEnumTypeByName("ErrorCode")), values(ADMIN.findEnumTypeByName("ErrorCode")));
    }

    private static void assertEnum(EnumDescriptor e, String valuesText) {
        assertNotNull(e);
        Map<String, Integer> expected = new LinkedHashMap<>();
        for (String pair : valuesText.split(", ")) {
            String[] kv = pair.split("=");
            expected.put(kv[0], Integer.parseInt(kv[1]));
        }
        assertEquals(expected, values(e), e.getFullName());
    }

    private static Map<String, Integer> values(EnumDescriptor e) {
        Map<String, Integer> m = new LinkedHashMap<>();
        for (EnumValueDescriptor v : e.getValues()) {
            m.put(v.getName(), v.getNumber());
        }
        return m;
    }

    @Test
    void partBAdditionsToAdmin() {
        assertField(ADMIN, new Row("ListInstanceGroupRequest", "1", "trace_id", "string"));
        assertField(ADMIN, new Row("ListInstanceGroupResponse", "1", "header", "CommonResponseHeader"));
        assertField(ADMIN, new Row("ListInstanceGroupResponse", "2", "instance_group", "rep InstanceGroup"));
        assertField(ADMIN, new Row("MetaIndexerConfig", "6", "persist_metadata_interval_time_ms", "Int64Value"));
        assertEquals("google.protobuf.Int64Value", ADMIN.findMessageTypeByName("MetaIndexerConfig")
                .findFieldByNumber(6).getMessageType().getFullName());
        assertField(ADMIN, new Row("InstanceGroup", "9", "extra_info", "string"));
        assertField(ADMIN, new Row("InstanceGroup", "10", "event_report_storage_candidates", "rep string"));
        assertField(ADMIN, new Row("InstanceGroup", "11", "revisit_interval_buckets", "string"));
        assertField(ADMIN, new Row("GetManagerClusterInfoResponse", "6", "leader_endpoint", "NodeEndpoint"));
        String[] endpoint = {"node_id string", "host string", "meta_rpc_port int32", "meta_http_port int32",
            "admin_rpc_port int32", "admin_http_port int32", "custom_info string"};
        for (int i = 0; i < endpoint.length; i++) {
            String[] nt = endpoint[i].split(" ");
            assertField(ADMIN, new Row("NodeEndpoint", String.valueOf(i + 1), nt[0], nt[1]));
        }
        assertField(ADMIN, new Row("StorageConfig", "oneof 9", "dummy", "DummyStorageSpec"));
        assertField(ADMIN, new Row("StorageConfig", "oneof 10", "vineyard", "VineyardStorageSpec"));
        assertEquals("storage_spec", ADMIN.findMessageTypeByName("StorageConfig").findFieldByName("vineyard")
                .getContainingOneof().getName());
        assertField(ADMIN, new Row("DummyStorageSpec", "1", "root_path", "string"));
        assertField(ADMIN, new Row("DummyStorageSpec", "2", "key_count_per_file", "int32"));
        assertField(ADMIN, new Row("VineyardStorageSpec", "2", "heartbeat_timeout_ms", "int64"));
        assertField(ADMIN, new Row("VineyardStorageSpec", "3", "cleanup_grace_ms", "int64"));
        assertField(ADMIN, new Row("VineyardStorageSpec", "4", "liveness_check_interval_ms", "int64"));
        assertEquals(3, ADMIN.findMessageTypeByName("VineyardStorageSpec").getFields().size(), "1 is reserved");
        // kvcm-engine-events.md §6.1: K7's event-report storage (11 is storage_type there, integrity in @0368fbf)
        assertField(ADMIN, new Row("StorageConfig", "11", "storage_type", "StorageType"));
        assertField(ADMIN, new Row("StorageConfig", "oneof 14", "event_report", "EventReportStorageSpec"));
        String[] er = {"heartbeat_timeout_ms", "cleanup_grace_ms", "liveness_check_interval_ms",
            "snapshot_min_interval_ms", "snapshot_delta_drain_timeout_ms"};
        for (int i = 0; i < er.length; i++) {
            assertField(ADMIN, new Row("EventReportStorageSpec", String.valueOf(i + 1), er[i], "int64"));
        }
        // §B.7: no checksum or integrity fields
        assertTrue(ADMIN.findMessageTypeByName("StorageConfig").findFieldByName("integrity") == null);
        assertTrue(ADMIN.findMessageTypeByName("CacheLocation").findFieldByNumber(4) == null);
        assertTrue(ADMIN.findMessageTypeByName("DataIntegrityConfig") == null);
    }

    @Test
    void debugProtoMatchesTable23() {
        assertEquals("kv_cache_manager.proto.debug", DEBUG.getPackage());
        String section = section("### 2.3 Package", "### 2.4");
        Matcher row = Pattern.compile("^\\| (enum |service )?(\\w+) \\| (.*) \\|$", Pattern.MULTILINE).matcher(section);
        int checked = 0;
        while (row.find()) {
            String kind = row.group(1) == null ? "" : row.group(1).trim();
            String name = row.group(2);
            String def = row.group(3).trim();
            if (name.equals("Item")) {
                continue;
            }
            checked++;
            if (kind.equals("enum")) {
                assertEnum(DEBUG.findEnumTypeByName(name), def);
            } else if (kind.equals("service")) {
                ServiceDescriptor s = DEBUG.findServiceByName(name);
                for (String rpc : def.split("; ")) {
                    Matcher m = Pattern.compile("(\\w+)\\((\\w+)\\) → (\\w+)").matcher(rpc);
                    assertTrue(m.find(), rpc);
                    assertEquals(m.group(2), s.findMethodByName(m.group(1)).getInputType().getName());
                    assertEquals(m.group(3), s.findMethodByName(m.group(1)).getOutputType().getName());
                }
                assertEquals(3, s.getMethods().size());
            } else if (def.equals("(no fields)")) {
                assertTrue(DEBUG.findMessageTypeByName(name).getFields().isEmpty(), name);
            } else {
                String[] fields = def.split("; ");
                for (String f : fields) {
                    String[] p = f.split(" ");
                    assertField(DEBUG, new Row(name, p[0], p[1], p[2]));
                }
                assertEquals(fields.length, DEBUG.findMessageTypeByName(name).getFields().size(), name);
            }
        }
        assertEquals(10, checked);
    }

    @Test
    void packagesAndJavaOptions() {
        assertEquals("kv_cache_manager.proto.admin", ADMIN.getPackage());
        assertEquals("dev.kvpool.api.proto.admin", ADMIN.getOptions().getJavaPackage());
        assertEquals("AdminServiceProto", ADMIN.getOptions().getJavaOuterClassname());
        assertTrue(ADMIN.getOptions().getJavaMultipleFiles());
        assertEquals("dev.kvpool.api.proto.debug", DEBUG.getOptions().getJavaPackage());
        assertTrue(DEBUG.getOptions().getJavaMultipleFiles());
    }
}
