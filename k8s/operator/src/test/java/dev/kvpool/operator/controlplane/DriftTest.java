package dev.kvpool.operator.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import org.junit.jupiter.api.Test;

class DriftTest {
    static JsonNode json(String s) {
        try {
            return ControlPlaneApi.JSON.readTree(s);
        } catch (Exception e) {
            throw new IllegalArgumentException(e);
        }
    }

    @Test
    void equalObjectsHaveNoChangesAndTopLevelExtrasOfTheControlPlaneAreIgnored() {
        JsonNode want = json("{\"name\":\"g\",\"quotaBytes\":10,\"waterLevels\":{\"softPercent\":80,\"hardPercent\":95}}");
        JsonNode have = json("{\"name\":\"g\",\"quotaBytes\":10,\"waterLevels\":{\"softPercent\":80,\"hardPercent\":95},"
                + "\"version\":7,\"usage\":{\"usedBytes\":5},\"userData\":\"x\"}");
        assertEquals(List.of(), Drift.changes(want, have));
    }

    @Test
    void namesEveryChangedFieldWithBothValues() {
        JsonNode want = json("{\"quotaBytes\":1000,\"waterLevels\":{\"softPercent\":80,\"hardPercent\":95}}");
        JsonNode have = json("{\"quotaBytes\":2000,\"waterLevels\":{\"softPercent\":50,\"hardPercent\":95}}");
        assertEquals(List.of("quotaBytes: control plane has 2000, spec wants 1000",
                "waterLevels.softPercent: control plane has 50, spec wants 80"), Drift.changes(want, have));
    }

    @Test
    void aKeyAddedBelowTheTopLevelIsDrift() {
        JsonNode want = json("{\"storageTypeQuotas\":{}}");
        JsonNode have = json("{\"storageTypeQuotas\":{\"nfs\":5}}");
        assertEquals(List.of("storageTypeQuotas.nfs: control plane has 5, spec does not set it"),
                Drift.changes(want, have));
    }

    @Test
    void protobufSpellingsAndDefaultsAreNotDrift() {
        // the control plane prints storage specs through protobuf: snake_case, int64 as strings, defaults filled
        JsonNode want = json("{\"spec\":{\"rootPath\":\"/mnt/kv/\",\"keyCountPerFile\":8}}");
        JsonNode have = json("{\"spec\":{\"root_path\":\"/mnt/kv/\",\"key_count_per_file\":\"8\",\"ttl\":0,"
                + "\"extra\":\"\",\"flag\":false,\"list\":[]}}");
        assertEquals(List.of(), Drift.changes(want, have));
        JsonNode changed = json("{\"spec\":{\"root_path\":\"/mnt/other/\",\"key_count_per_file\":\"8\"}}");
        assertEquals(List.of("spec.rootPath: control plane has \"/mnt/other/\", spec wants \"/mnt/kv/\""),
                Drift.changes(want, changed));
    }

    @Test
    void arraysCompareInOrderAndAMissingObjectIsDrift() {
        assertEquals(1, Drift.changes(json("{\"storageCandidates\":[\"a\",\"b\"]}"),
                json("{\"storageCandidates\":[\"b\",\"a\"]}")).size());
        assertEquals(List.of(), Drift.changes(json("{\"groups\":[\"a\",\"b\"]}"), json("{\"groups\":[\"a\",\"b\"]}")));
        assertEquals(List.of("enabled: control plane has nothing, spec wants true"),
                Drift.changes(json("{\"enabled\":true}"), json("{}")));
        assertEquals(List.of("enabled: control plane has false, spec wants true"),
                Drift.changes(json("{\"enabled\":true}"), json("{\"enabled\":false}")));
    }

    @Test
    void theListOfChangesAndEachValueAreBounded() {
        ObjectNode want = ControlPlaneApi.JSON.createObjectNode();
        ObjectNode have = ControlPlaneApi.JSON.createObjectNode();
        for (int i = 0; i < 50; i++) {
            want.put("f" + i, i);
            have.put("f" + i, i + 1);
        }
        want.put("long", "x".repeat(1000));
        assertEquals(Drift.MAX_CHANGES, Drift.changes(want, have).size());
        String one = Drift.changes(ControlPlaneApi.JSON.createObjectNode().put("s", "x".repeat(1000)), json("{}"))
                .getFirst();
        assertTrue(one.length() < 2 * Drift.MAX_VALUE, one);
    }
}
