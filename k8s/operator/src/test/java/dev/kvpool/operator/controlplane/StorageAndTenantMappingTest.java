package dev.kvpool.operator.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPoolStorage;
import dev.kvpool.operator.crd.KVPoolTenant;
import dev.kvpool.operator.crd.SecretKeyRef;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

class StorageAndTenantMappingTest {
    /** The control plane's answer to POST {"name":"nfs_01","type":"nfs","spec":{"rootPath":..,"key_count_per_file":8}}. */
    static final String STORAGE = """
            {"name":"nfs_01","type":"nfs","enabled":true,"checkAvailableWhenOpen":false,
             "spec":{"root_path":"/mnt/kv/","key_count_per_file":8},"version":1,
             "createdAt":"2026-11-27T13:49:44.284034110Z","updatedAt":"2026-11-27T13:49:44.284034110Z"}""";

    static KVPoolStorage storage() {
        KVPoolStorage s = new KVPoolStorage();
        s.setMetadata(new ObjectMetaBuilder().withName("nfs-01").withNamespace("ns").build());
        s.setSpec(new KVPoolStorage.Spec());
        s.getSpec().pool = "demo";
        s.getSpec().name = "nfs_01";
        s.getSpec().type = "nfs";
        s.getSpec().spec = DriftTest.json("{\"rootPath\":\"/mnt/kv/\",\"key_count_per_file\":8}");
        return s;
    }

    @Test
    void storageMapsAndTheControlPlanesNormalisedSpecIsNoDrift() throws Exception {
        ObjectNode d = StorageMapping.desired(storage());
        assertEquals(DriftTest.json("{\"name\":\"nfs_01\",\"type\":\"nfs\",\"enabled\":true,"
                + "\"checkAvailableWhenOpen\":false,\"spec\":{\"rootPath\":\"/mnt/kv/\",\"key_count_per_file\":8}}"), d);
        assertEquals(List.of(), StorageMapping.drift(d, DriftTest.json(STORAGE)));
        ObjectNode disabled = (ObjectNode) DriftTest.json(STORAGE);
        disabled.put("enabled", false);
        assertEquals(List.of("enabled: control plane has false, spec wants true"), StorageMapping.drift(d, disabled));
        // a check switched on in the console is drift too: Git says whether the storage is checked when opened
        ObjectNode checked = (ObjectNode) DriftTest.json(STORAGE);
        checked.put("checkAvailableWhenOpen", true);
        assertEquals(1, StorageMapping.drift(d, checked).size());
    }

    @Test
    void storageSpecMustBeABoundedObject() {
        KVPoolStorage s = storage();
        s.getSpec().spec = DriftTest.json("[1]");
        assertThrows(InvalidSpec.class, () -> StorageMapping.desired(s));
        s.getSpec().spec = DriftTest.json("{\"root_path\":\"" + "x".repeat(StorageMapping.MAX_SPEC_JSON) + "\"}");
        assertThrows(InvalidSpec.class, () -> StorageMapping.desired(s));
        s.getSpec().name = null;
        s.getSpec().spec = DriftTest.json("{}");
        assertEquals("nfs-01", StorageMapping.name(s));
    }

    static KVPoolTenant tenant(List<String> groups) {
        KVPoolTenant t = new KVPoolTenant();
        t.setMetadata(new ObjectMetaBuilder().withName("team-a").withNamespace("ns").build());
        t.setSpec(new KVPoolTenant.Spec());
        t.getSpec().pool = "demo";
        t.getSpec().groups = groups;
        t.getSpec().passwordSecretRef = new SecretKeyRef("team-a-password", "password");
        return t;
    }

    @Test
    void tenantIsATenantAccountWithSortedGroupsAndNoPasswordInTheComparedObject() throws Exception {
        ObjectNode d = TenantMapping.desired(tenant(List.of("b", "a", "b")));
        assertEquals(DriftTest.json("{\"name\":\"team-a\",\"role\":\"tenant\",\"groups\":[\"a\",\"b\"]}"), d);
        assertFalse(d.has("password"));
        ObjectNode body = TenantMapping.withPassword(d, "Correct-Horse-9x");
        assertEquals("Correct-Horse-9x", body.get("password").asText());
        assertFalse(d.has("password"), "the compared object is not changed");
        String view = "{\"name\":\"team-a\",\"role\":\"tenant\",\"groups\":[\"a\",\"b\"],\"version\":3}";
        assertEquals(List.of(), TenantMapping.drift(d, DriftTest.json(view)));
        assertEquals(List.of("groups: control plane has [\"a\"], spec wants [\"a\",\"b\"]"),
                TenantMapping.drift(d, DriftTest.json("{\"name\":\"team-a\",\"role\":\"tenant\",\"groups\":[\"a\"]}")));
    }

    @Test
    void anAdminOrOperatorAccountIsNeverTakenOver() throws Exception {
        assertNull(TenantMapping.adoptionRefusal(DriftTest.json("{\"name\":\"x\",\"role\":\"tenant\"}")));
        String why = TenantMapping.adoptionRefusal(DriftTest.json("{\"name\":\"x\",\"role\":\"admin\"}"));
        assertTrue(why.contains("role 'admin'"), why);
        KVPoolTenant many = tenant(java.util.stream.IntStream.range(0, TenantMapping.MAX_GROUPS + 1)
                .mapToObj(i -> "g" + i).toList());
        assertThrows(InvalidSpec.class, () -> TenantMapping.desired(many));
    }
}
