package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.hash.SglangKeys;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * §5.11 connector emulation (items 129–131): the HTTP call sequences of SGLang's HiCache KVCM backend and of
 * vLLM's TairKvCacheConnector (§4.2, §4.3), with the Python client's checks on every answer.
 */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class ConnectorEmulationTest extends KvcmTestBase {
    private static final ObjectMapper M = new ObjectMapper();

    /** KvCacheManagerClient with check_response=True: HTTP 200, a header, code == "OK" as a string (item 131). */
    private static JsonNode call(String route, ObjectNode body) {
        JsonNode r = MetaApi.tree(MetaApi.post(route, body.toString()));
        assertTrue(r.has("header"), route);
        assertTrue(r.path("header").path("status").path("code").isTextual(), route);
        assertEquals("OK", r.path("header").path("status").path("code").asText(), () -> route + ": " + r);
        return r;
    }

    private static ArrayNode longs(List<Long> v) {
        ArrayNode a = M.createArrayNode();
        v.forEach(a::add); // JSON numbers, 19-digit signed values included, as Python sends them
        return a;
    }

    // ---- SGLang ---------------------------------------------------------------------------------------------

    private static ObjectNode sglangRegister(String instance, int rank) {
        ObjectNode b = M.createObjectNode();
        b.put("trace_id", UUID.randomUUID().toString()).put("instance_group", "default").put("instance_id", instance)
                .put("block_size", 64);
        b.putObject("model_deployment").put("model_name", "Qwen/Qwen3-8B").put("tp_size", 2).put("dp_size", 1)
                .put("pp_size", 1).put("use_mla", false).put("dtype", "bfloat16");
        ArrayNode specs = b.putArray("location_spec_infos");
        for (int r = 0; r < 2; r++) {
            specs.addObject().put("name", "tp_" + r).put("size", 2 * 36 * 64 * 8 * 128 * 2);
        }
        return b;
    }

    /** batch_exists / the query of batch_get_v1: prefix query with offset len(prefix); returns the hit count. */
    private static JsonNode sglangQuery(String instance, List<String> prefixPages, List<String> pages) {
        List<Long> keys = new ArrayList<>();
        prefixPages.forEach(p -> keys.add(SglangKeys.of(p)));
        pages.forEach(p -> keys.add(SglangKeys.of(p)));
        ObjectNode q = M.createObjectNode();
        q.put("trace_id", UUID.randomUUID().toString()).set("block_keys", longs(keys));
        q.put("instance_id", instance).put("query_type", "QT_PREFIX_MATCH");
        q.putObject("block_mask").put("offset", prefixPages.size());
        return call("getCacheLocation", q);
    }

    /** batch_set_v1 from rank 0; returns how many pages were saved. */
    private static int sglangSet(String instance, List<String> prefixPages, List<String> pages, int expectedNew) {
        List<Long> keys = new ArrayList<>();
        prefixPages.forEach(p -> keys.add(SglangKeys.of(p)));
        pages.forEach(p -> keys.add(SglangKeys.of(p)));
        ObjectNode start = M.createObjectNode();
        start.put("trace_id", "start-" + UUID.randomUUID()).put("instance_id", instance).set("block_keys", longs(keys));
        start.put("write_timeout_seconds", 30);
        JsonNode s = call("startWriteCache", start);
        JsonNode mask = s.path("block_mask");
        JsonNode locs = s.path("locations");
        int p = prefixPages.size();
        List<Integer> toSave = new ArrayList<>();
        if (mask.has("offset") && mask.path("offset").asInt() >= p) {
            for (int i = mask.path("offset").asInt(); i < p + pages.size(); i++) {
                toSave.add(i - p);
            }
        } else if (mask.has("bool_masks")) {
            JsonNode v = mask.path("bool_masks").path("values");
            boolean prefixDone = true;
            for (int i = 0; i < p; i++) {
                prefixDone &= v.path(i).asBoolean(false);
            }
            if (prefixDone) {
                for (int i = p; i < v.size(); i++) {
                    if (!v.path(i).asBoolean()) {
                        toSave.add(i - p);
                    }
                }
            }
        }
        assertEquals(expectedNew, toSave.size());
        ObjectNode fin = M.createObjectNode();
        fin.put("trace_id", "finish-" + UUID.randomUUID()).put("instance_id", instance)
                .put("write_session_id", s.path("write_session_id").asText());
        ArrayNode values = fin.putObject("success_blocks").putObject("bool_masks").putArray("values");
        if (toSave.isEmpty()) {
            for (int i = 0; i < locs.size(); i++) {
                values.add(false);
            }
        } else {
            assertEquals(toSave.size(), locs.size(), "one location per page to save, in key order");
            for (int rank = 0; rank < 2; rank++) {
                for (JsonNode loc : locs) { // every rank writes its own spec
                    assertEquals(1, count(loc, "tp_" + rank), loc.toString());
                }
            }
            for (int i = 0; i < locs.size(); i++) {
                values.add(true);
            }
        }
        call("finishWriteCache", fin);
        return toSave.size();
    }

    private static int count(JsonNode loc, String spec) {
        int n = 0;
        for (JsonNode s : loc.path("location_specs")) {
            if (s.path("name").asText().equals(spec) && s.path("uri").asText().startsWith("file://nfs_01/")) {
                n++;
            }
        }
        return n;
    }

    @Test
    void item129_sglang() {
        String instance = uid("sglang");
        for (int rank = 0; rank < 2; rank++) {
            JsonNode r = call("registerInstance", sglangRegister(instance, rank));
            JsonNode configs = MetaApi.tree(r.path("storage_configs").asText());
            assertTrue(configs.isArray() && configs.size() > 0);
            for (JsonNode c : configs) {
                assertTrue(c.has("type") && c.has("is_available") && c.has("storage_spec"));
            }
        }
        List<String> pages = List.of("page-0", "page-1", "page-2", "page-3");
        assertEquals(-3906683858646686286L, SglangKeys.of("page-0"));
        assertEquals(0, sglangQuery(instance, List.of(), pages).path("locations").size());
        assertEquals(4, sglangSet(instance, List.of(), pages, 4));
        JsonNode hits = sglangQuery(instance, List.of(), pages);
        assertEquals(4, hits.path("locations").size());
        for (JsonNode loc : hits.path("locations")) {
            assertEquals(1, count(loc, "tp_0"));
            assertEquals(1, count(loc, "tp_1"));
        }
        assertEquals(2, sglangQuery(instance, pages.subList(0, 2), pages.subList(2, 4)).path("locations").size());
        assertEquals(0, sglangSet(instance, List.of(), pages, 0));
        // a set with a cached prefix: only the new pages are written
        List<String> more = List.of("page-4", "page-5");
        assertEquals(2, sglangSet(instance, pages, more, 2));
        assertEquals(2, sglangQuery(instance, pages, more).path("locations").size());
    }

    // ---- vLLM -----------------------------------------------------------------------------------------------

    private static ObjectNode vllmRegister(String instance) {
        ObjectNode b = M.createObjectNode();
        b.put("trace_id", "trace_trace").put("instance_group", "default").put("instance_id", instance).put("block_size", 16);
        b.putObject("model_deployment").put("model_name", "served-model").put("dtype", "bfloat16").put("use_mla", false)
                .put("tp_size", 2).put("dp_size", 1).put("pp_size", 1);
        ArrayNode specs = b.putArray("location_spec_infos");
        for (int r = 0; r < 2; r++) {
            specs.addObject().put("name", "tp" + r).put("size", 32 * 2 * 16 * 4 * 128 * 2);
        }
        return b;
    }

    private static List<Long> prompt(int n) {
        List<Long> t = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            t.add(151_000L + i * 7L);
        }
        return t;
    }

    private static JsonNode vllmMatch(String instance, List<Long> tokens, int computedTokens) {
        ObjectNode q = M.createObjectNode();
        q.put("trace_id", "req-" + UUID.randomUUID()).set("token_ids", longs(tokens));
        q.put("instance_id", instance).put("query_type", "QT_PREFIX_MATCH");
        q.putObject("block_mask").put("offset", computedTokens / 16);
        return call("getCacheLocation", q);
    }

    private static JsonNode vllmStart(String instance, List<Long> tokens) {
        ObjectNode s = M.createObjectNode();
        s.put("trace_id", "req_" + System.currentTimeMillis()).put("instance_id", instance);
        s.putArray("block_keys");
        s.set("token_ids", longs(tokens));
        s.put("write_timeout_seconds", 30);
        return call("startWriteCache", s);
    }

    private static void vllmFinish(String instance, JsonNode start, ObjectNode successBlocks) {
        ObjectNode f = M.createObjectNode();
        f.put("trace_id", "test_test").put("instance_id", instance)
                .put("write_session_id", start.path("write_session_id").asText()).set("success_blocks", successBlocks);
        call("finishWriteCache", f);
    }

    private static ObjectNode values(boolean... v) {
        ObjectNode m = M.createObjectNode();
        ArrayNode a = m.putObject("bool_masks").putArray("values");
        for (boolean b : v) {
            a.add(b);
        }
        return m;
    }

    @Test
    void item130_vllm() {
        String instance = uid("vllm");
        for (int i = 0; i < 3; i++) { // scheduler + 2 workers
            JsonNode r = call("registerInstance", vllmRegister(instance));
            assertFalse(r.path("storage_configs").asText().isEmpty());
        }
        List<Long> prompt = prompt(48);
        assertEquals(0, vllmMatch(instance, prompt.subList(0, 40), 0).path("locations").size());

        JsonNode s1 = vllmStart(instance, prompt.subList(0, 32));
        assertEquals("{\"offset\":0}", s1.path("block_mask").toString());
        assertEquals(2, s1.path("locations").size());
        for (JsonNode loc : s1.path("locations")) {
            assertEquals(List.of("tp0", "tp1"), List.of(loc.path("location_specs").get(0).path("name").asText(),
                    loc.path("location_specs").get(1).path("name").asText()));
        }
        vllmFinish(instance, s1, values(true, true));

        JsonNode m2 = vllmMatch(instance, prompt.subList(0, 40), 0);
        assertEquals(2, m2.path("locations").size());
        assertEquals(s1.path("locations"), m2.path("locations"));
        assertEquals(0, vllmMatch(instance, prompt.subList(0, 40), 32).path("locations").size());

        JsonNode s2 = vllmStart(instance, prompt);
        assertEquals("{\"offset\":2}", s2.path("block_mask").toString());
        assertEquals(1, s2.path("locations").size());
        vllmFinish(instance, s2, values(true));

        JsonNode s3 = vllmStart(instance, prompt);
        assertEquals(0, s3.path("locations").size());
        assertEquals("{\"offset\":3}", s3.path("block_mask").toString());
        ObjectNode malformed = M.createObjectNode();
        malformed.putObject("bool_masks").put("offset", 0);
        vllmFinish(instance, s3, malformed);
        assertEquals(3, vllmMatch(instance, prompt, 0).path("locations").size());
    }

    @Test
    void item131_errorsStillParseAsJsonWithAHeader() {
        // a connector's failed call: not OK, but a 200 JSON body with a header (MetaApi.post checks that)
        JsonNode r = MetaApi.tree(MetaApi.post("getCacheLocation", "{\"trace_id\":\"x\",\"instance_id\":\"" + uid("gone")
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1]}"));
        assertNotEquals("OK", r.path("header").path("status").path("code").asText());
        assertEquals(0, r.path("locations").size());
        JsonNode f = MetaApi.tree(MetaApi.post("finishWriteCache", "{\"trace_id\":\"x\",\"instance_id\":\"" + uid("gone")
                + "\",\"write_session_id\":\"s\",\"success_blocks\":{\"bool_masks\":{\"offset\":0}}}"));
        assertTrue(f.path("header").path("status").path("code").isTextual());
    }
}
