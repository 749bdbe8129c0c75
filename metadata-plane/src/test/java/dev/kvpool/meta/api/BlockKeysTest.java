package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.Collections;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.3 Block keys (items 35–41): keys the server derives from token_ids, checked by block key. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class BlockKeysTest extends KvcmTestBase {
    static final long[] V1 = {455111481605203084L, 6902853672176602142L, -6574591296779146224L, 3436079420768077133L};
    static final long[] V2 = {2681637840371060507L, -6990124544746687103L};
    static final long[] V3 = {-8366447770138823354L, 555627685913999257L};
    static final long[] V4 = {-8366447769517741626L, 455111481605203084L};

    static List<Long> range(long from, long toExclusive) {
        return LongStream.range(from, toExclusive).boxed().toList();
    }

    /** Writes token_ids in token mode, finishes all, and checks that exactly {@code expected} are now SERVING. */
    private void writesKeys(MetaApi a, int blockSize, List<Long> tokens, long[] expected) {
        String id = registered(a, reg(uid("keys" + blockSize), blockSize, "tp0", 1024));
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addAllTokenIds(tokens).setWriteTimeoutSeconds(30).build());
        assertOk(s);
        assertEquals(expected.length, s.getLocationsCount());
        assertEquals(offset(0), s.getBlockMask());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(filled(expected.length, true))));
        assertEquals(Collections.nCopies(expected.length, "CLS_SERVING"), statuses(a, id, expected));
        assertEquals(expected.length, prefix(a, id, expected).size());
        // and the same tokens in token mode find them
        GetCacheLocationResponse q = a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllTokenIds(tokens).build());
        assertOk(q);
        assertEquals(s.getLocationsList(), q.getLocationsList());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item35_vectorV1(Transport t) {
        writesKeys(api(t), 4, range(1, 17), V1);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item36_vectorsV2V3V4(Transport t) {
        writesKeys(api(t), 64, range(0, 128), V2);
        writesKeys(api(t), 2, List.of(151643L, 872L, 198L, 3838L), V3);
        writesKeys(api(t), 2, range(1, 6), V4); // the 5th token is dropped
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items37to40_keySource(Transport t) {
        MetaApi a = api(t);
        String id = registered(a, reg(uid("src"), 64, "tp0", 1024));
        // 37: 130 tokens at block_size 64 give 2 keys
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(range(5000, 5130)).setWriteTimeoutSeconds(30).build());
        assertOk(s);
        assertEquals(2, s.getLocationsCount());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true)));
        GetCacheMetaResponse m = a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(range(5000, 5130)).build());
        assertOk(m);
        assertEquals(2, m.getMetasCount());

        // 38: fewer tokens than one block
        StartWriteCacheResponse few = a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(range(1, 8)).setWriteTimeoutSeconds(30).build());
        assertOk(few);
        assertEquals(0, few.getLocationsCount());
        assertFalse(few.getWriteSessionId().isEmpty());
        assertOk(finish(a, id, few.getWriteSessionId(), bools()));
        GetCacheLocationResponse fewQ = a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllTokenIds(range(1, 8)).build());
        assertOk(fewQ);
        assertEquals(0, fewQ.getLocationsCount());

        // 39: block_keys win over token_ids
        long k = rndKey();
        StartWriteCacheResponse both = a.start(startReq(id, k).addAllTokenIds(range(0, 128)).build());
        assertOk(both);
        assertEquals(1, both.getLocationsCount());
        assertOk(finish(a, id, both.getWriteSessionId(), bools(true)));
        assertEquals(List.of("CLS_SERVING"), statuses(a, id, k));
        assertEquals(List.of("CLS_NOT_FOUND", "CLS_NOT_FOUND"), statuses(a, id, V2)); // the tokens' keys
        assertEquals(1, a.location(locReq(id, QueryType.QT_PREFIX_MATCH, k).addAllTokenIds(range(0, 128)).build())
                .getLocationsCount());

        // 40: neither keys nor tokens
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(locReq(id, QueryType.QT_PREFIX_MATCH).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(id).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.start(startReq(id).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.remove(RemoveCacheRequest.newBuilder().setInstanceId(id).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.locationLen(GetCacheLocationLenRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).build()));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item41_tokenModeNeedsABlockSize(Transport t) {
        MetaApi a = api(t);
        String id = registered(a, reg(uid("bs0"), 0, "tp0", 1024));
        List<Long> tokens = range(1, 17);
        assertCode(ErrorCode.INVALID_ARGUMENT, a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(tokens).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllTokenIds(tokens).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(tokens).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.remove(RemoveCacheRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(tokens).build()));
        // key mode works on such an instance
        long k = rndKey();
        write(a, id, k);
        assertEquals(1, prefix(a, id, k).size());
        assertTrue(statuses(a, id, k).contains("CLS_SERVING"));
    }

    /** KVPool's REST "why does this prompt miss": the keys of a token sequence and which are cached. */
    @org.junit.jupiter.api.Test
    void restBlockKeysExplainAMissAndRefuseBadBodiesByName() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, reg(uid("why"), 4, "tp0", 1024));
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addAllTokenIds(range(1, 9)).setWriteTimeoutSeconds(30).build());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true)));
        io.restassured.response.ValidatableResponse r = io.restassured.RestAssured.given().contentType("application/json")
                .body("{\"token_ids\":" + range(1, 18) + "}").post("/api/v1/instances/" + id + "/block-keys").then()
                .statusCode(200);
        r.body("tokens", org.hamcrest.Matchers.is(17)).body("tokens_not_in_a_full_block", org.hamcrest.Matchers.is(1))
                .body("prefix_hit_blocks", org.hamcrest.Matchers.is(2))
                .body("blocks.key", org.hamcrest.Matchers.contains(LongStream.of(V1).mapToObj(Long::toString).toArray()))
                .body("blocks.status", org.hamcrest.Matchers.contains("CLS_SERVING", "CLS_SERVING", "CLS_NOT_FOUND",
                        "CLS_NOT_FOUND"))
                .body("blocks.cached", org.hamcrest.Matchers.contains(true, true, false, false));
        io.restassured.RestAssured.given().contentType("application/json").body("{\"token_ids\":[1]}")
                .post("/api/v1/instances/no-such-instance/block-keys").then().statusCode(404)
                .body("detail", org.hamcrest.Matchers.is("instance 'no-such-instance' is not registered"));
        // bodies Jackson cannot take name the field (Quarkus alone answered an empty 400, and read 1.5 as 1)
        java.util.Map<String, String> bad = new java.util.LinkedHashMap<>();
        bad.put("{\"token_ids\":\"x\"}", "request body: token_ids: expected an array, got the string \"x\"");
        bad.put("{\"token_ids\":[1,2.5]}", "request body: token_ids[1]: expected an integer, got 2.5");
        bad.put("{\"token_idz\":[1]}", "request body: token_idz: unknown field; known fields: cache_salt, lora_name, "
                + "mm_items, token_ids");
        bad.put("{\"token_ids\":[1,null]}", "token_ids[1] is null");
        bad.put("{\"token_ids\":[1", "request body: malformed JSON at line 1, column 16: Unexpected end-of-input: "
                + "expected close marker for Array (start marker at [line: 1, column: 14])");
        for (var b : bad.entrySet()) {
            io.restassured.RestAssured.given().contentType("application/json").body(b.getKey())
                    .post("/api/v1/instances/" + id + "/block-keys").then().statusCode(400)
                    .contentType("application/problem+json").body("detail", org.hamcrest.Matchers.is(b.getValue()));
        }
    }

    private static RegisterInstanceRequest.Builder vllmReg(String id, int blockSize, String extraJson) {
        RegisterInstanceRequest.Builder b = reg(id, blockSize, "tp0", 1024);
        return b.setModelDeployment(b.getModelDeployment().toBuilder().setExtra(extraJson));
    }

    private static io.restassured.response.ValidatableResponse restKeys(String id, String body) {
        return io.restassured.RestAssured.given().contentType("application/json").body(body)
                .post("/api/v1/instances/" + id + "/block-keys").then();
    }

    private static Object[] signed(String... unsigned) {
        return java.util.Arrays.stream(unsigned).map(u -> Long.toString(Long.parseUnsignedLong(u))).toArray();
    }

    /** hashing.md §3.7: xxhash_cbor keys, through KVCM token mode and the REST, with the spec's int64 values. */
    @org.junit.jupiter.api.Test
    void vllmXxhashCborInstance_tokenModeAndRestAgreeWithTheSpec() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, vllmReg(uid("xxh"), 16, "{\"hash_scheme\":\"vllm-xxhash-cbor\",\"hash_seed\":\"0\"}"));
        // KVCM token mode derives the same keys: write block 0 only (a 16-token prompt)
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addAllTokenIds(range(1, 17)).setWriteTimeoutSeconds(30).build());
        assertOk(s);
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true)));
        restKeys(id, "{\"token_ids\":" + range(1, 33) + "}").statusCode(200)
                .body("hash_scheme", org.hamcrest.Matchers.is("vllm-xxhash-cbor"))
                .body("blocks.key", org.hamcrest.Matchers.contains(signed("882618318818381833",
                        "12890060145260523405")))
                .body("blocks.hex", org.hamcrest.Matchers.contains("c3fb0af456c1009", "b2e2b1685bac6f8d"))
                .body("blocks.cached", org.hamcrest.Matchers.contains(true, false))
                .body("prefix_hit_blocks", org.hamcrest.Matchers.is(1));
        io.restassured.RestAssured.given().get("/api/v1/instances/" + id).then().statusCode(200)
                .body("hash_scheme", org.hamcrest.Matchers.is("vllm-xxhash-cbor"));
        // extras change every key from the first block they touch
        restKeys(id, "{\"token_ids\":" + range(1, 33) + ",\"lora_name\":\"my-lora\"}").statusCode(200)
                .body("blocks.key", org.hamcrest.Matchers.not(org.hamcrest.Matchers.hasItem(
                        Long.toString(Long.parseUnsignedLong("882618318818381833")))))
                .body("blocks.cached", org.hamcrest.Matchers.contains(false, false));
    }

    /** hashing.md §3.7: LoRA + cache salt, and a multimodal item seen from blocks 0 (offset 8) and 1 (−8). */
    @org.junit.jupiter.api.Test
    void vllmSha256CborRestTakesLoraSaltAndMultimodalItems() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, vllmReg(uid("sha"), 16, "{\"hash_scheme\":\"vllm-sha256-cbor\",\"hash_seed\":\"0\"}"));
        restKeys(id, "{\"token_ids\":" + range(1, 33) + ",\"lora_name\":\"my-lora\",\"cache_salt\":\"salt-A\"}")
                .statusCode(200).body("hash_scheme", org.hamcrest.Matchers.is("vllm-sha256-cbor"))
                .body("blocks.key", org.hamcrest.Matchers.contains(signed("859214314393778358",
                        "8381049053207322388")));
        restKeys(id, "{\"token_ids\":" + range(1, 33)
                + ",\"mm_items\":[{\"identifier\":\"mm-hash-abc\",\"offset\":8,\"length\":16}]}")
                .statusCode(200).body("blocks.key", org.hamcrest.Matchers.contains(signed("5879507683218172094",
                        "1674493178585245433")));
        // an empty salt and an empty item list are no extras at all
        String plain = restKeys(id, "{\"token_ids\":" + range(1, 33) + "}").statusCode(200).extract()
                .path("blocks.key").toString();
        assertEquals(plain, restKeys(id, "{\"token_ids\":" + range(1, 33) + ",\"cache_salt\":\"\",\"mm_items\":[]}")
                .statusCode(200).extract().path("blocks.key").toString());
    }

    @org.junit.jupiter.api.Test
    void badExtrasAnswer400NamingTheField() {
        MetaApi a = api(Transport.HTTP);
        String vllm = registered(a, vllmReg(uid("bad"), 4, "{\"hash_scheme\":\"vllm-sha256-cbor\",\"hash_seed\":\"0\"}"));
        String kvcm = registered(a, reg(uid("badk"), 4, "tp0", 1024));
        String t = "\"token_ids\":[1,2,3,4]";
        java.util.Map<String, String> bad = new java.util.LinkedHashMap<>();
        bad.put("{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":-1,\"length\":2}]}",
                "mm_items[0].offset: must be >= 0, was -1");
        bad.put("{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":0,\"length\":2},"
                + "{\"identifier\":\"\",\"offset\":0,\"length\":2}]}", "mm_items[1].identifier: must not be empty");
        bad.put("{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":0}]}", "mm_items[0].length is required");
        bad.put("{" + t + ",\"mm_items\":[null]}", "mm_items[0] is null");
        bad.put("{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":9223372036854775807,\"length\":1}]}",
                "mm_items[0].offset + length overflows a 64-bit integer (9223372036854775807 + 1)");
        bad.put("{" + t + ",\"mm_items\":[{\"identifier\":\"" + "x".repeat(1025) + "\",\"offset\":0,\"length\":1}]}",
                "mm_items[0].identifier: at most 1024 UTF-8 bytes, got 1025 characters");
        bad.put("{" + t + ",\"lora_name\":\"\"}", "lora_name: must not be empty (leave it out when there is no LoRA)");
        bad.put("{" + t + ",\"cache_salt\":\"" + "s".repeat(4097) + "\"}",
                "cache_salt: at most 4096 UTF-8 bytes, got 4097 characters");
        String many = "{\"identifier\":\"x\",\"offset\":0,\"length\":1}";
        bad.put("{" + t + ",\"mm_items\":[" + String.join(",", Collections.nCopies(4097, many)) + "]}",
                "mm_items: at most 4096 items, got 4097");
        for (var b : bad.entrySet()) {
            restKeys(vllm, b.getKey()).statusCode(400).contentType("application/problem+json")
                    .body("detail", org.hamcrest.Matchers.is(b.getValue()));
        }
        // what Jackson refuses names the nested field too
        restKeys(vllm, "{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":1.5,\"length\":1}]}")
                .statusCode(400).body("detail", org.hamcrest.Matchers.containsString("mm_items[0].offset"));
        restKeys(vllm, "{" + t + ",\"mm_items\":[{\"identifier\":\"x\",\"offset\":1,\"length\":1,\"hash\":2}]}")
                .statusCode(400).body("detail", org.hamcrest.Matchers.containsString("hash: unknown field"));
        // the kvcm scheme has no extra keys
        restKeys(kvcm, "{" + t + ",\"lora_name\":\"my-lora\"}").statusCode(400)
                .body("detail", org.hamcrest.Matchers.containsString("kvcm hash scheme has no extra keys"));
        restKeys(kvcm, "{" + t + ",\"cache_salt\":\"\",\"mm_items\":[]}").statusCode(200);
    }

    /** hashing.md §3.2: without PYTHONHASHSEED vLLM's root hash is random, so token ids cannot be keyed. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void vllmInstanceWithoutASeedRefusesTokenIdsButTakesKeys(Transport tr) {
        MetaApi a = api(tr);
        String id = registered(a, vllmReg(uid("noseed"), 4, "{\"hash_scheme\":\"vllm-xxhash-cbor\"}"));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id)
                .addAllTokenIds(range(1, 9)).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllTokenIds(range(1, 9)).build()));
        long k = rndKey();
        write(a, id, k);
        assertEquals(1, prefix(a, id, k).size());
        if (tr == Transport.HTTP) {
            restKeys(id, "{\"token_ids\":[1,2,3,4]}").statusCode(400)
                    .body("detail", org.hamcrest.Matchers.containsString("PYTHONHASHSEED"));
        }
        // a seed that is not a string is refused at registration
        RegisterInstanceResponse r = a.register(vllmReg(uid("objseed"), 4,
                "{\"hash_scheme\":\"vllm-xxhash-cbor\",\"hash_seed\":{\"v\":0}}").build());
        assertCode(ErrorCode.INVALID_ARGUMENT, r);
        assertTrue(r.getHeader().getStatus().getMessage().contains("hash_seed must be a string"),
                r.getHeader().getStatus().getMessage());
    }
}
