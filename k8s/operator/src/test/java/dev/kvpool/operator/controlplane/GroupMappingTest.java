package dev.kvpool.operator.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPoolInstanceGroup;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GroupMappingTest {
    /** The control plane's answer to POST {"name":"search","quotaBytes":1000000,"storageCandidates":["nfs_01"]}. */
    static final String CREATED = """
            {"name":"search","quotaBytes":1000000,"storageTypeQuotas":{},"waterLevels":{"softPercent":80,
            "hardPercent":95},"eviction":{"policy":"LRU","triggerPeriodSeconds":5,"stepSize":1000,"stepPercentage":10,
            "ttlSeconds":0,"readerLeaseMs":1000},"storageCandidates":["nfs_01"],"maxInstanceCount":0,
            "quotaGroupName":"search","allowAnonymousMeta":false,"userData":"","version":1,
            "createdAt":"2026-11-27T13:49:44.710540078Z","updatedAt":"2026-11-27T13:49:44.710648550Z",
            "usage":{"usedBytes":500000,"usedPercent":50.0,"level":"ok","byType":{"nfs":500000}},
            "kvcm":{"name":"search"}}""";

    static KVPoolInstanceGroup group(String metaName) {
        KVPoolInstanceGroup g = new KVPoolInstanceGroup();
        g.setMetadata(new ObjectMetaBuilder().withName(metaName).withNamespace("ns").build());
        g.setSpec(new KVPoolInstanceGroup.Spec());
        g.getSpec().pool = "demo";
        g.getSpec().quotaBytes = 1_000_000L;
        g.getSpec().storageCandidates = List.of("nfs_01");
        return g;
    }

    @Test
    void fillsTheControlPlaneDefaultsSoThatAnOmittedFieldIsStillManaged() throws Exception {
        ObjectNode d = GroupMapping.desired(group("search"));
        assertEquals(DriftTest.json("""
                {"name":"search","quotaBytes":1000000,"storageTypeQuotas":{},
                 "waterLevels":{"softPercent":80,"hardPercent":95},
                 "eviction":{"policy":"LRU","readerLeaseMs":1000,"stepPercentage":10,"stepSize":1000,
                             "triggerPeriodSeconds":5,"ttlSeconds":0},
                 "storageCandidates":["nfs_01"],"maxInstanceCount":0,"allowAnonymousMeta":false}"""),
                DriftTest.json(d.toString()));
        // what the control plane made of the same request is no drift
        assertEquals(List.of(), GroupMapping.drift(d, DriftTest.json(CREATED)));
    }

    @Test
    void consoleChangesAreDrift() throws Exception {
        ObjectNode d = GroupMapping.desired(group("search"));
        ObjectNode changed = (ObjectNode) DriftTest.json(CREATED);
        changed.put("quotaBytes", 5_000_000L);
        ((ObjectNode) changed.get("waterLevels")).put("hardPercent", 99);
        ((ObjectNode) changed.get("storageTypeQuotas")).put("nfs", 10L);
        assertEquals(List.of("quotaBytes: control plane has 5000000, spec wants 1000000",
                "storageTypeQuotas.nfs: control plane has 10, spec does not set it",
                "waterLevels.hardPercent: control plane has 99, spec wants 95"), GroupMapping.drift(d, changed));
    }

    @Test
    void specFieldsMapOntoTheControlPlaneNames() throws Exception {
        KVPoolInstanceGroup g = group("k8s-name");
        g.getSpec().name = "search";
        g.getSpec().storageTypeQuotas = Map.of("nfs", 7L, "hf3fs", 3L);
        g.getSpec().waterLevels = new KVPoolInstanceGroup.WaterLevels();
        g.getSpec().waterLevels.soft = 97;
        g.getSpec().eviction = new KVPoolInstanceGroup.Eviction();
        g.getSpec().eviction.policy = "TTL";
        g.getSpec().eviction.params = Map.of("ttlSeconds", 60L);
        g.getSpec().maxInstanceCount = 4L;
        g.getSpec().allowAnonymousMeta = true;
        ObjectNode d = GroupMapping.desired(g);
        assertEquals("search", d.get("name").asText());
        assertEquals("{\"hf3fs\":3,\"nfs\":7}", d.get("storageTypeQuotas").toString());
        // soft above the default hard raises hard with it (the control plane refuses soft > hard)
        assertEquals("{\"softPercent\":97,\"hardPercent\":97}", d.get("waterLevels").toString());
        assertEquals("TTL", d.at("/eviction/policy").asText());
        assertEquals(60, d.at("/eviction/ttlSeconds").asLong());
        assertEquals(5, d.at("/eviction/triggerPeriodSeconds").asLong());
        assertEquals(4, d.get("maxInstanceCount").asLong());
        assertTrue(d.get("allowAnonymousMeta").asBoolean());

        g.getSpec().waterLevels.soft = null;
        g.getSpec().waterLevels.hard = 70;
        assertEquals("{\"softPercent\":70,\"hardPercent\":70}", GroupMapping.desired(g).get("waterLevels").toString());
    }

    @Test
    void refusesUnknownEvictionParametersBeforeCallingTheControlPlane() {
        KVPoolInstanceGroup g = group("search");
        g.getSpec().eviction = new KVPoolInstanceGroup.Eviction();
        g.getSpec().eviction.policy = "LRU";
        g.getSpec().eviction.params = Map.of("ttlSecs", 60L);
        InvalidSpec e = assertThrows(InvalidSpec.class, () -> GroupMapping.desired(g));
        assertTrue(e.getMessage().contains("spec.eviction.params.ttlSecs"), e.getMessage());
        g.getSpec().eviction.params = null;
        g.getSpec().storageCandidates = List.of();
        assertThrows(InvalidSpec.class, () -> GroupMapping.desired(g));
    }

    @Test
    void usageAndWaterLevelComeFromTheGroupView() {
        JsonNode v = DriftTest.json(CREATED);
        KVPoolInstanceGroup.Usage u = GroupMapping.usage(v);
        assertEquals(500_000L, u.usedBytes);
        assertEquals(50.0, u.usedPercent);
        assertEquals("ok", u.level);
        assertEquals(Map.of("nfs", 500_000L), u.usedBytesByStorageType);
        assertEquals(null, GroupMapping.usage(DriftTest.json("{}")));
    }
}
