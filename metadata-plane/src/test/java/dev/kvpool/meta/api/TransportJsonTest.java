package dev.kvpool.meta.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.anyOf;
import static org.hamcrest.Matchers.is;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.hash.KvcmHash;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** §5.1 Transport and JSON (items 1–16, 18–20): raw JSON over HTTP, the generated client over gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class TransportJsonTest extends KvcmTestBase {
    private static final Pattern SNAKE = Pattern.compile("[a-z0-9_]+");
    private static final List<String> ROUTES = List.of("registerInstance", "getInstanceInfo", "getCacheMeta",
            "getCacheLocation", "startWriteCache", "finishWriteCache", "removeCache", "trimCache", "getClusterInfo",
            "getCacheLocationLen", "getCacheLocationsByBackend");

    private static String shared;

    private String inst() {
        if (shared == null) {
            shared = newInstance(api(Transport.HTTP), "json");
        }
        return shared;
    }

    private static Response post(String rpc, String body) {
        return given().contentType("application/json").body(body.getBytes(StandardCharsets.UTF_8))
                .post("/api/" + rpc);
    }

    /** POST that must be a logical answer: 200, application/json, header.status.code a string. */
    private static JsonNode ok200(String rpc, String body) {
        return MetaApi.tree(MetaApi.post(rpc, body));
    }

    private static String codeOf(JsonNode n) {
        return n.path("header").path("status").path("code").asText();
    }

    private String startJson(long key) {
        return "{\"trace_id\":\"t\",\"instance_id\":\"" + inst() + "\",\"block_keys\":[" + key
                + "],\"write_timeout_seconds\":30}";
    }

    // ---- 1, 2, 16 ------------------------------------------------------------------------------------------

    @Test
    void item01_validBodyIs200Json() {
        post("getCacheLocation", "{\"trace_id\":\"t1\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1]}")
                .then().statusCode(200).header("Content-Type", startsWith("application/json"));
    }

    @Test
    void item02_brokenJsonIs400WithEmptyObject() {
        // syntax errors and a non-object body, on every route
        List<String> broken = List.of("", "{\"trace_id\":", "{\"trace_id\":\"a\"", "not json", "[1,2]", "\"text\"",
                "{\"trace_id\":\"a\",}", "{'trace_id':'a'}");
        for (String rpc : ROUTES) {
            for (String body : broken) {
                Response r = post(rpc, body);
                assertEquals(400, r.statusCode(), rpc + " with " + body);
                assertEquals("{}", r.asString(), rpc + " with " + body);
            }
        }
        // a wrong JSON type for a field the request has
        String c = "\"trace_id\":\"t\",\"instance_id\":\"" + inst() + "\",\"query_type\":\"QT_PREFIX_MATCH\"";
        for (String body : List.of("{" + c + ",\"block_keys\":{\"a\":1}}", "{" + c + ",\"block_keys\":[\"abc\"]}",
                "{" + c + ",\"block_keys\":[1.5]}", "{" + c + ",\"block_keys\":[1],\"block_mask\":[1]}",
                "{" + c + ",\"block_keys\":[1],\"block_mask\":{\"offset\":\"x\"}}", "{" + c + ",\"block_keys\":[true]}")) {
            Response r = post("getCacheLocation", body);
            assertEquals(400, r.statusCode(), body);
            assertEquals("{}", r.asString(), body);
        }
        Response r = post("registerInstance", "{\"location_spec_infos\":{\"name\":\"tp0\"}}");
        assertEquals(400, r.statusCode());
        assertEquals("{}", r.asString());
    }

    @Test
    void item16_unregisteredRouteIs404() {
        given().contentType("application/json").body("{}").post("/api/noSuchApi").then().statusCode(404);
        given().contentType("application/json").body("{}").post("/api/getcachelocation").then().statusCode(404);
        // routes are POST-only: a GET is not served
        given().get("/api/getCacheLocation").then().statusCode(anyOf(is(404), is(405)));
    }

    // ---- 3, 4, 5, 6, 7, 8 ----------------------------------------------------------------------------------

    @Test
    void item03_unknownTopLevelFieldsIgnored() {
        long k = rndKey();
        JsonNode s = ok200("startWriteCache", "{\"foo\":1,\"bar\":{\"x\":[1,{\"y\":null}]},\"trace_id\":\"t\","
                + "\"instance_id\":\"" + inst() + "\",\"block_keys\":[" + k + "],\"write_timeout_seconds\":30,\"baz\":\"q\"}");
        assertEquals("OK", codeOf(s));
        assertEquals(1, s.path("locations").size());
        JsonNode f = ok200("finishWriteCache", "{\"zzz\":[],\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"write_session_id\":\"" + s.path("write_session_id").asText()
                + "\",\"success_blocks\":{\"bool_masks\":{\"values\":[true]}}}");
        assertEquals("OK", codeOf(f));
        JsonNode q = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[" + k + "],\"unknown_enum_holder\":\"QT_X\"}");
        assertEquals(1, q.path("locations").size());
    }

    @Test
    void item04_unknownNestedFieldsIgnored() {
        // the vLLM form on a session with one location: {"bool_masks":{"offset":0}} is an EMPTY bool vector, so
        // it does not fit 1 location (5); read as offset 0 it would have been valid
        JsonNode s = ok200("startWriteCache", startJson(rndKey()));
        assertEquals(1, s.path("locations").size());
        JsonNode f = ok200("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"write_session_id\":\"" + s.path("write_session_id").asText()
                + "\",\"success_blocks\":{\"bool_masks\":{\"offset\":0}}}");
        assertEquals("INVALID_ARGUMENT", codeOf(f));

        // on a 0-location session the same body is accepted
        long k = rndKey();
        write(api(Transport.HTTP), inst(), k);
        JsonNode s0 = ok200("startWriteCache", startJson(k));
        assertEquals(0, s0.path("locations").size());
        JsonNode f0 = ok200("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"write_session_id\":\"" + s0.path("write_session_id").asText()
                + "\",\"success_blocks\":{\"bool_masks\":{\"offset\":0,\"deep\":{\"deeper\":[{\"x\":1}]}}}}");
        assertEquals("OK", codeOf(f0));

        // unknown members next to a oneof member, and inside it
        JsonNode q = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[" + k + "],\"block_mask\":{\"offset\":0,\"x\":{\"y\":1}}}");
        assertEquals(1, q.path("locations").size());
    }

    @Test
    void item05_lowerCamelInputNames() {
        long k = rndKey();
        JsonNode s = ok200("startWriteCache", "{\"traceId\":\"t\",\"instanceId\":\"" + inst() + "\",\"blockKeys\":[" + k
                + "],\"writeTimeoutSeconds\":30}");
        assertEquals("OK", codeOf(s));
        assertEquals(1, s.path("locations").size());
        JsonNode f = ok200("finishWriteCache", "{\"traceId\":\"t\",\"instanceId\":\"" + inst() + "\",\"writeSessionId\":\""
                + s.path("write_session_id").asText() + "\",\"successBlocks\":{\"boolMasks\":{\"values\":[true]}}}");
        assertEquals("OK", codeOf(f));
        JsonNode camel = ok200("getCacheLocation", "{\"traceId\":\"t\",\"instanceId\":\"" + inst()
                + "\",\"queryType\":\"QT_PREFIX_MATCH\",\"blockKeys\":[" + k + "],\"blockMask\":{\"offset\":0}}");
        JsonNode snake = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[" + k + "],\"block_mask\":{\"offset\":0}}");
        assertEquals(1, camel.path("locations").size());
        assertEquals(snake.path("locations"), camel.path("locations"));
        assertEquals(s.path("locations"), camel.path("locations"));
    }

    @Test
    void item06_int64AsStrings() {
        long k = rndKey();
        JsonNode s = ok200("startWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst() + "\",\"block_keys\":[\""
                + k + "\"],\"token_ids\":[],\"write_timeout_seconds\":30}");
        assertEquals(1, s.path("locations").size());
        ok200("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst() + "\",\"write_session_id\":\""
                + s.path("write_session_id").asText() + "\",\"success_blocks\":{\"bool_masks\":{\"values\":[true]}}}");
        JsonNode asString = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[\"" + k + "\"]}");
        JsonNode asNumber = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[" + k + "]}");
        assertEquals(1, asString.path("locations").size());
        assertEquals(asNumber.path("locations"), asString.path("locations"));
        // location_spec_infos sizes as strings too
        JsonNode reg = ok200("registerInstance", "{\"trace_id\":\"t\",\"instance_group\":\"default\",\"instance_id\":\""
                + uid("strsize") + "\",\"block_size\":\"128\",\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"FP8\"},"
                + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":\"1024\"}]}");
        assertEquals("OK", codeOf(reg));
    }

    @Test
    void item07_nineteenDigitKeyRoundTripsExactly() {
        long key = -8366447770138823354L;
        assertNotEquals(key, (long) (double) key, "the key must not survive a trip through double");
        String id = registered(api(Transport.HTTP), reg(uid("k19")));
        JsonNode s = ok200("startWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + id
                + "\",\"block_keys\":[-8366447770138823354],\"write_timeout_seconds\":30}");
        assertEquals(1, s.path("locations").size());
        assertEquals("OK", codeOf(ok200("finishWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + id
                + "\",\"write_session_id\":\"" + s.path("write_session_id").asText()
                + "\",\"success_blocks\":{\"bool_masks\":{\"values\":[true]}}}")));
        JsonNode meta = ok200("getCacheMeta", "{\"trace_id\":\"t\",\"instance_id\":\"" + id
                + "\",\"block_keys\":[-8366447770138823354," + (long) (double) key + ",-8366447770138823353]}");
        assertTrue(meta.path("metas").get(0).asText().contains("CLS_SERVING"), meta.toString());
        assertEquals("{\"status\":\"CLS_NOT_FOUND\"}", meta.path("metas").get(1).asText());
        assertEquals("{\"status\":\"CLS_NOT_FOUND\"}", meta.path("metas").get(2).asText());
        JsonNode q = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + id
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[\"-8366447770138823354\"]}");
        assertEquals(s.path("locations"), q.path("locations"));
        // and the same key over gRPC
        GetCacheMetaResponse g = metaOf(api(Transport.GRPC), id, key);
        assertTrue(g.getMetas(0).contains("CLS_SERVING"));
    }

    @Test
    void item08_enumAsInteger() {
        long[] k = rndKeys(3);
        write(api(Transport.HTTP), inst(), k[0], k[1]);
        String keys = k[0] + "," + k[1] + "," + k[2];
        JsonNode byName = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[" + keys + "]}");
        JsonNode byNumber = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":2,\"block_keys\":[" + keys + "]}");
        assertEquals(2, byNumber.path("locations").size());
        assertEquals(byName.path("locations"), byNumber.path("locations"));
        JsonNode batch = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":1,\"block_keys\":[" + keys + "]}");
        assertEquals(3, batch.path("locations").size());
        // an unknown enum name is "absent" (0 = unspecified): non-OK, but a logical answer
        JsonNode unknown = ok200("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst()
                + "\",\"query_type\":\"QT_NO_SUCH\",\"block_keys\":[" + keys + "]}");
        assertNotEquals("OK", codeOf(unknown));
    }

    // ---- 9–14 ----------------------------------------------------------------------------------------------

    private static void assertSnake(JsonNode n, String where) {
        if (n.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                assertTrue(SNAKE.matcher(e.getKey()).matches(), where + ": field name " + e.getKey());
                assertSnake(e.getValue(), where);
            }
        } else if (n.isArray()) {
            n.forEach(c -> assertSnake(c, where));
        }
    }

    /** One successful answer of every meta RPC, as raw JSON text, keyed by route. */
    private Map<String, String> answersOfEveryRpc() {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        String id = uid("every");
        String reg = "{\"trace_id\":\"tr-every\",\"instance_group\":\"default\",\"instance_id\":\"" + id
                + "\",\"block_size\":4,\"model_deployment\":{\"model_name\":\"test_model\",\"dtype\":\"FP8\"},"
                + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1024},{\"name\":\"tp1\",\"size\":1024}],"
                + "\"location_spec_groups\":[{\"name\":\"g\",\"spec_names\":[\"tp1\"]}]}";
        out.put("registerInstance", MetaApi.post("registerInstance", reg));
        String common = "\"trace_id\":\"tr-every\",\"instance_id\":\"" + id + "\"";
        out.put("getInstanceInfo", MetaApi.post("getInstanceInfo", "{" + common + "}"));
        String start = MetaApi.post("startWriteCache", "{" + common + ",\"block_keys\":[1,2,3],\"write_timeout_seconds\":30}");
        out.put("startWriteCache", start);
        out.put("finishWriteCache", MetaApi.post("finishWriteCache", "{" + common + ",\"write_session_id\":\""
                + MetaApi.tree(start).path("write_session_id").asText() + "\",\"success_blocks\":{\"offset\":3}}"));
        String partial = MetaApi.post("startWriteCache", "{" + common + ",\"block_keys\":[1,4,2,5],\"write_timeout_seconds\":30}");
        out.put("startWriteCache(bool)", partial);
        MetaApi.post("finishWriteCache", "{" + common + ",\"write_session_id\":\""
                + MetaApi.tree(partial).path("write_session_id").asText() + "\",\"success_blocks\":{\"offset\":2}}");
        out.put("getCacheLocation", MetaApi.post("getCacheLocation", "{" + common
                + ",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1,2,3]}"));
        out.put("getCacheLocation(batch)", MetaApi.post("getCacheLocation", "{" + common
                + ",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[1,9,3]}"));
        out.put("getCacheMeta", MetaApi.post("getCacheMeta", "{" + common + ",\"block_keys\":[1,9]}"));
        out.put("getCacheLocationLen", MetaApi.post("getCacheLocationLen", "{" + common
                + ",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1,2,3]}"));
        out.put("getCacheLocationsByBackend", MetaApi.post("getCacheLocationsByBackend", "{" + common
                + ",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[1,9],\"backend_selectors\":[{\"backend_type\":\"ST_NFS\",\"strategy\":3}]}"));
        out.put("getClusterInfo", MetaApi.post("getClusterInfo", "{\"trace_id\":\"tr-every\"}"));
        out.put("removeCache", MetaApi.post("removeCache", "{" + common + ",\"block_keys\":[3]}"));
        out.put("trimCache", MetaApi.post("trimCache", "{" + common + ",\"strategy\":\"TS_REMOVE_ALL_CACHE\"}"));
        for (Map.Entry<String, String> e : out.entrySet()) {
            assertEquals("OK", codeOf(MetaApi.tree(e.getValue())), e.getKey() + ": " + e.getValue());
        }
        return out;
    }

    @Test
    void items09to14_responseShapes() {
        Map<String, String> answers = answersOfEveryRpc();
        for (Map.Entry<String, String> e : answers.entrySet()) {
            JsonNode n = MetaApi.tree(e.getValue());
            assertSnake(n, e.getKey());                                            // 9
            assertTrue(e.getValue().contains("\"code\":\"OK\""), e.getKey());    // 10
            assertFalse(e.getValue().contains("\n") || e.getValue().startsWith("{ "), e.getKey() + " is compact");
        }
        String loc = answers.get("getCacheLocation");
        assertTrue(loc.contains("\"type\":\"ST_NFS\""), loc);                   // 10
        assertTrue(loc.contains("\"spec_size\":2"), loc);                      // int32 as a number
        assertTrue(answers.get("getCacheLocation(batch)").contains("\"type\":\"ST_UNSPECIFIED\""));
        String info = answers.get("getInstanceInfo");
        assertTrue(info.contains("\"size\":\"1024\""), info);                   // 11: int64 as a string
        assertTrue(info.contains("\"block_size\":4"), info);
        assertTrue(info.contains("\"use_mla\":false") && info.contains("\"lora_name\":\"\""), info); // defaults
        assertTrue(answers.get("getCacheLocationLen").contains("\"cache_location_len\":\"3\""));
        // 13: the zero offset is printed
        assertTrue(answers.get("startWriteCache").contains("\"block_mask\":{\"offset\":0}"), answers.get("startWriteCache"));
        // 14: exactly one member per block_mask, in both forms
        JsonNode bm = MetaApi.tree(answers.get("startWriteCache")).path("block_mask");
        assertEquals(List.of("offset"), names(bm));
        JsonNode bb = MetaApi.tree(answers.get("startWriteCache(bool)")).path("block_mask");
        assertEquals(List.of("bool_masks"), names(bb));
        assertEquals("[true,false,true,false]", bb.path("bool_masks").path("values").toString());
        // 12: defaults on success too
        String meta = answers.get("getCacheMeta");
        assertTrue(meta.contains("\"{\\\"status\\\":\\\"CLS_NOT_FOUND\\\"}\""), meta);
    }

    private static List<String> names(JsonNode n) {
        List<String> out = new ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }

    @Test
    void item12_errorResponsesPrintDefaults() {
        String loc = MetaApi.post("getCacheLocation", "{\"trace_id\":\"t\",\"instance_id\":\"no-such-instance\","
                + "\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1]}");
        assertEquals("INSTANCE_NOT_EXIST", codeOf(MetaApi.tree(loc)));
        assertTrue(loc.contains("\"locations\":[]"), loc);
        String reg = MetaApi.post("registerInstance", "{\"trace_id\":\"t\",\"instance_id\":\"x\"}");
        assertEquals("INVALID_ARGUMENT", codeOf(MetaApi.tree(reg)));
        assertTrue(reg.contains("\"storage_configs\":\"\""), reg);
        String start = MetaApi.post("startWriteCache", "{\"trace_id\":\"t\",\"instance_id\":\"" + inst() + "\"}");
        assertEquals("INVALID_ARGUMENT", codeOf(MetaApi.tree(start)));
        assertTrue(start.contains("\"write_session_id\":\"\"") && start.contains("\"locations\":[]"), start);
        assertFalse(start.contains("block_mask"), "an unset message field is omitted: " + start);
        String info = MetaApi.post("getInstanceInfo", "{\"trace_id\":\"t\",\"instance_id\":\"no-such-instance\"}");
        assertEquals("INSTANCE_NOT_EXIST", codeOf(MetaApi.tree(info)));
        assertTrue(info.contains("\"instance_group\":\"\"") && !info.contains("instance_info"), info);
        String meta = MetaApi.post("getCacheMeta", "{\"trace_id\":\"t\",\"instance_id\":\"no-such-instance\",\"block_keys\":[1]}");
        assertTrue(meta.contains("\"locations\":[]") && meta.contains("\"metas\":[]"), meta);
        String len = MetaApi.post("getCacheLocationLen", "{\"trace_id\":\"t\",\"instance_id\":\"no-such-instance\",\"block_keys\":[1]}");
        assertTrue(len.contains("\"cache_location_len\":\"0\""), len);
    }

    // ---- 15 ------------------------------------------------------------------------------------------------

    @Test
    void item15_logicalErrorsAreHttp200AndGrpcOk() {
        // every body below is a logical error; MetaApi.post asserts HTTP 200 + JSON with a header
        List<String[]> errors = List.of(
                new String[] {"registerInstance", "{}"},
                new String[] {"registerInstance", "{\"instance_group\":\"no-such-group\",\"instance_id\":\"" + uid("x")
                        + "\",\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"d\"},\"location_spec_infos\":[{\"name\":\"a\"}]}"},
                new String[] {"getInstanceInfo", "{}"},
                new String[] {"getCacheMeta", "{\"instance_id\":\"nope\"}"},
                new String[] {"getCacheLocation", "{\"instance_id\":\"" + inst() + "\",\"block_keys\":[1]}"},
                new String[] {"getCacheLocation", "{\"instance_id\":\"" + inst()
                        + "\",\"query_type\":\"QT_REVERSE_ROLL_SW_MATCH\",\"block_keys\":[1],\"sw_size\":0}"},
                new String[] {"startWriteCache", "{\"instance_id\":\"" + inst() + "\"}"},
                new String[] {"finishWriteCache", "{\"instance_id\":\"" + inst() + "\",\"write_session_id\":\"nope\",\"success_blocks\":{}}"},
                new String[] {"finishWriteCache", "{\"instance_id\":\"" + inst() + "\"}"},
                new String[] {"removeCache", "{\"instance_id\":\"" + inst() + "\"}"},
                new String[] {"trimCache", "{\"instance_id\":\"" + inst() + "\"}"},
                new String[] {"getCacheLocationLen", "{\"instance_id\":\"nope\"}"},
                new String[] {"getCacheLocationsByBackend", "{\"instance_id\":\"" + inst() + "\",\"query_type\":1,\"block_keys\":[1]}"});
        for (String[] e : errors) {
            assertNotEquals("OK", codeOf(ok200(e[0], e[1])), e[0] + " " + e[1]);
        }
        // gRPC: a logical error is an OK gRPC status carrying the code (the Mutiny client throws otherwise)
        MetaApi g = api(Transport.GRPC);
        assertCode(ErrorCode.INVALID_ARGUMENT, g.register(RegisterInstanceRequest.getDefaultInstance()));
        assertCode(ErrorCode.INVALID_ARGUMENT, g.info(GetInstanceInfoRequest.getDefaultInstance()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, g.meta(GetCacheMetaRequest.newBuilder().setInstanceId("nope").build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, g.location(GetCacheLocationRequest.getDefaultInstance()));
        assertCode(ErrorCode.INVALID_ARGUMENT, g.start(StartWriteCacheRequest.newBuilder().setInstanceId(inst()).build()));
        assertNotOk(g.finish(finishReq(inst(), "nope", bools())));
        assertCode(ErrorCode.INVALID_ARGUMENT, g.remove(RemoveCacheRequest.newBuilder().setInstanceId(inst()).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, g.trim(TrimCacheRequest.newBuilder().setInstanceId(inst()).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, g.locationLen(GetCacheLocationLenRequest.getDefaultInstance()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, g.byBackend(GetCacheLocationsByBackendRequest.getDefaultInstance()));
    }

    // ---- 18, 19 --------------------------------------------------------------------------------------------

    @Test
    void items18and19_requestIdAndTracerResult() {
        String id = inst();
        long k = rndKey();
        String c = "\"instance_id\":\"" + id + "\"";
        List<String[]> calls = new ArrayList<>(List.of(
                new String[] {"registerInstance", "{\"trace_id\":\"TR\",\"instance_group\":\"default\"," + c
                        + ",\"block_size\":128,\"model_deployment\":{\"model_name\":\"test_model\",\"dtype\":\"FP8\",\"tp_size\":1,\"dp_size\":1,\"pp_size\":1},"
                        + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1024}]}"},
                new String[] {"getInstanceInfo", "{\"trace_id\":\"TR\"," + c + "}"},
                new String[] {"getCacheMeta", "{\"trace_id\":\"TR\"," + c + ",\"block_keys\":[" + k + "]}"},
                new String[] {"getCacheLocation", "{\"trace_id\":\"TR\"," + c + ",\"query_type\":2,\"block_keys\":[" + k + "]}"},
                new String[] {"finishWriteCache", "{\"trace_id\":\"TR\"," + c + ",\"write_session_id\":\"x\",\"success_blocks\":{}}"},
                new String[] {"removeCache", "{\"trace_id\":\"TR\"," + c + ",\"block_keys\":[" + k + "]}"},
                new String[] {"trimCache", "{\"trace_id\":\"TR\"," + c + ",\"strategy\":\"TS_UNSPECIFIED\"}"},
                new String[] {"getClusterInfo", "{\"trace_id\":\"TR\"}"},
                new String[] {"getCacheLocationLen", "{\"trace_id\":\"TR\"," + c + ",\"query_type\":2,\"block_keys\":[" + k + "]}"},
                new String[] {"getCacheLocationsByBackend", "{\"trace_id\":\"TR\"," + c
                        + ",\"query_type\":1,\"block_keys\":[" + k + "],\"backend_selectors\":[{\"backend_type\":4}]}"},
                new String[] {"startWriteCache", "{\"trace_id\":\"TR\"," + c + ",\"block_keys\":[" + k + "],\"write_timeout_seconds\":5}"},
                // a call stopped by the instance pre-check still gets a request id in KVPool
                new String[] {"getCacheLocation", "{\"trace_id\":\"TR\",\"instance_id\":\"nope\",\"block_keys\":[1]}"}));
        for (String[] call : calls) {
            JsonNode h = ok200(call[0], call[1]).path("header");
            assertTrue(h.path("request_id").asText().startsWith("TR_"), call[0] + ": " + h);
            assertTrue(h.path("request_id").asText().length() > 3, call[0] + ": " + h);
            assertTrue(h.has("tracer_result") && h.path("tracer_result").isTextual(), call[0] + ": " + h);
        }
        MetaApi g = api(Transport.GRPC);
        assertTrue(g.clusterInfo(GetClusterInfoRequest.newBuilder().setTraceId("TG").build()).getHeader()
                .getRequestId().startsWith("TG_"));
        assertTrue(g.location(locReq(id, QueryType.QT_PREFIX_MATCH, k).setTraceId("TG").build()).getHeader()
                .getRequestId().startsWith("TG_"));
        assertTrue(g.start(startReq(id, rndKey()).setTraceId("TG").build()).getHeader().getRequestId().startsWith("TG_"));
    }

    // ---- 20 ------------------------------------------------------------------------------------------------

    private static final int MiB = 1 << 20;

    /** Writes the first two blocks of the token sequence so that the big query has something to find. */
    private static void writeFirstBlocks(MetaApi a, String id, Supplier<long[]> first256Tokens) {
        long[] keys = KvcmHash.keys(first256Tokens.get(), 128);
        assertEquals(2, keys.length);
        write(a, id, keys);
    }

    @Test
    void item20_bigHttpBodyOf64MiB() throws Exception {
        String id = registered(api(Transport.HTTP), reg(uid("big-http")));
        writeFirstBlocks(api(Transport.HTTP), id, () -> {
            long[] t = new long[256];
            for (int i = 0; i < t.length; i++) {
                t[i] = 1_000_000 + i;
            }
            return t;
        });
        byte[] head = ("{\"trace_id\":\"big\",\"instance_id\":\"" + id
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_mask\":{\"offset\":0},\"token_ids\":[")
                .getBytes(StandardCharsets.US_ASCII);
        int target = 64 * MiB - 64 * 1024; // just under the 64 MiB limit
        int n = (target - head.length - 2) / 8;
        ByteArrayOutputStream out = new ByteArrayOutputStream(target);
        out.write(head);
        for (int i = 0; i < n; i++) {
            out.write(Long.toString(1_000_000 + (i % 9_000_000)).getBytes(StandardCharsets.US_ASCII));
            if (i + 1 < n) {
                out.write(',');
            }
        }
        out.write(']');
        out.write('}');
        byte[] body = out.toByteArray();
        assertTrue(body.length > 63 * MiB && body.length <= 64 * MiB, "body of " + body.length + " bytes");
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(MetaApi.base()
                        + "/api/getCacheLocation")).timeout(Duration.ofSeconds(120)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        JsonNode res = MetaApi.tree(r.body());
        assertEquals("OK", codeOf(res), r.body());
        assertEquals(2, res.path("locations").size(), "a " + n + "-token prompt whose first 2 blocks are cached");
    }

    @Test
    void item20_bigGrpcMessageOf32MiB() {
        MetaApi g = api(Transport.GRPC);
        String id = registered(g, reg(uid("big-grpc")));
        writeFirstBlocks(g, id, () -> {
            long[] t = new long[256];
            for (int i = 0; i < t.length; i++) {
                t[i] = 1_000_000 + i;
            }
            return t;
        });
        GetCacheLocationRequest.Builder b = locReq(id, QueryType.QT_PREFIX_MATCH).setBlockMask(offset(0));
        int n = 32 * MiB / 3 + 1024; // 3-byte varints
        for (int i = 0; i < n; i++) {
            b.addTokenIds(1_000_000 + (i % 1_000_000));
        }
        GetCacheLocationRequest req = b.build();
        assertTrue(req.getSerializedSize() >= 32 * MiB, "message of " + req.getSerializedSize() + " bytes");
        GetCacheLocationResponse r = g.location(req);
        assertOk(r);
        assertEquals(2, r.getLocationsCount());
    }
}
