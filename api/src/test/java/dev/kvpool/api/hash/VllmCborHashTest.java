package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.SharedData;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import net.openhft.hashing.LongTupleHashFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * vLLM's CBOR-chained block hashes: sha256_cbor against shared/data/hash-vectors/vllm_sha256_cbor_sample.json, the
 * canonical CBOR writer, and XXH3-128's byte order (spec hashing.md §3.6).
 */
class VllmCborHashTest {

    private static final HexFormat HEX = HexFormat.of();

    static VllmCborHash sha(String seed) {
        return new VllmCborHash(VllmCborHash.Algorithm.SHA256_CBOR, seed);
    }

    static VllmCborHash xxh(String seed) {
        return new VllmCborHash(VllmCborHash.Algorithm.XXHASH_CBOR, seed);
    }

    static Stream<JsonNode> sampleCases() throws IOException {
        JsonNode root = new ObjectMapper().readTree(
                SharedData.sharedDir().resolve("data/hash-vectors/vllm_sha256_cbor_sample.json").toFile());
        List<JsonNode> cases = new ArrayList<>();
        root.get("cases").forEach(cases::add);
        return cases.stream();
    }

    @ParameterizedTest(name = "{index}")
    @MethodSource("sampleCases")
    void sampleVectors(JsonNode c) {
        String seed = c.get("python_hash_seed").asText();
        int blockSize = c.get("block_size").asInt();
        VllmCborHash hasher = new VllmCborHash(VllmCborHash.Algorithm.SHA256_CBOR, seed);

        CborWriter seedCbor = new CborWriter().writeText(seed);
        assertEquals(c.get("none_hash_cbor_input_hex").asText(), HEX.formatHex(seedCbor.toByteArray()));
        assertEquals(c.get("none_hash_hex").asText(), HEX.formatHex(hasher.noneHash()));

        JsonNode blocks = c.get("blocks");
        long[] tokens = new long[c.get("num_tokens").asInt()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = 90_000 + i; // trailing tokens past the listed blocks: must not be hashed
        }
        List<Object> extras = new ArrayList<>();
        for (JsonNode b : blocks) {
            int index = b.get("block_index").asInt();
            long[] blockTokens = longs(b.get("token_ids"));
            System.arraycopy(blockTokens, 0, tokens, index * blockSize, blockTokens.length);
            extras.add(extraKeys(b.get("extra_keys")));
            byte[] parent = HEX.parseHex(b.get("parent_hex").asText());
            // the payload, byte for byte
            assertEquals(b.get("cbor_payload_hex").asText(), HEX.formatHex(VllmCborHash.blockPayload(
                    parent, tokens, index * blockSize, (index + 1) * blockSize, extras.get(index))), "block " + index);
        }

        List<byte[]> digests = hasher.blockDigests(tokens, blockSize, extras);
        long[] keys = hasher.keys(tokens, blockSize);
        assertEquals(blocks.size(), digests.size());
        for (int i = 0; i < blocks.size(); i++) {
            JsonNode b = blocks.get(i);
            assertEquals(b.get("block_hash_hex").asText(), HEX.formatHex(digests.get(i)), "digest of block " + i);
            long expectedKey = b.get("external_int64_unsigned").bigIntegerValue().longValue();
            assertEquals(expectedKey, VllmCborHash.toKey(digests.get(i)));
            assertEquals(expectedKey, keys[i]);
            assertEquals(b.get("external_int64_unsigned").asText(), Long.toUnsignedString(keys[i]));
        }
    }

    private static long[] longs(JsonNode array) {
        long[] v = new long[array.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = array.get(i).asLong();
        }
        return v;
    }

    /** JSON extra keys → the Java shapes the hasher takes (null, String, Long, nested List). */
    private static Object extraKeys(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isArray()) {
            List<Object> list = new ArrayList<>();
            n.forEach(e -> list.add(extraKeys(e)));
            return list;
        }
        return n.isIntegralNumber() ? (Object) n.asLong() : n.asText();
    }

    @ParameterizedTest
    @CsvSource({
        "0, 00", "1, 01", "23, 17", "24, 1818", "255, 18ff", "256, 190100", "65535, 19ffff",
        "65536, 1a00010000", "4294967295, 1affffffff", "4294967296, 1b0000000100000000",
        "9223372036854775807, 1b7fffffffffffffff",
        "-1, 20", "-24, 37", "-25, 3818", "-256, 38ff", "-257, 390100",
        "-9223372036854775808, 3b7fffffffffffffff",
    })
    void integersUseShortestHeads(long value, String hex) {
        assertEquals(hex, HEX.formatHex(new CborWriter().writeLong(value).toByteArray()));
    }

    @Test
    void otherTypesEncodeCanonically() {
        assertEquals("f6", cbor(null));
        assertEquals("6130", cbor("0"));
        assertEquals("60", cbor(""));
        assertEquals("65c3a9e4b8ad", cbor("é中")); // byte length 5, not char length 2
        assertEquals("4201ff", cbor(new byte[] {1, (byte) 0xFF}));
        assertEquals("80", cbor(List.of()));
        assertEquals("83016161" + "82" + "6178" + "07", cbor(Arrays.asList(1, "a", List.of("x", 7L))));
        assertEquals("8201f6", cbor(new Object[] {1, null}));
        String long24 = "x".repeat(24);
        assertEquals("7818" + HEX.formatHex(long24.getBytes(StandardCharsets.UTF_8)), cbor(long24));
        assertThrows(IllegalArgumentException.class, () -> cbor(1.5));
    }

    private static String cbor(Object v) {
        return HEX.formatHex(new CborWriter().writeValue(v).toByteArray());
    }

    @Test
    void extraKeysChangeTheChain_nullDiffersFromEmpty() {
        VllmCborHash h = sha("0");
        long[] tokens = KvcmHashTest.range(1, 8);
        List<byte[]> none = h.blockDigests(tokens, 4, null);
        List<byte[]> explicitNulls = h.blockDigests(tokens, 4, Arrays.asList(null, null));
        List<byte[]> shortList = h.blockDigests(tokens, 4, List.of()); // blocks past the end: null
        List<byte[]> empty = h.blockDigests(tokens, 4, Arrays.asList(List.of(), null));
        List<byte[]> lora = h.blockDigests(tokens, 4, Arrays.asList(List.of("my-lora"), null));
        List<byte[]> mm = h.blockDigests(tokens, 4, Arrays.asList(List.of(List.of("mm-hash", 0L)), null));
        assertArrayEquals(none.get(1), explicitNulls.get(1));
        assertArrayEquals(none.get(1), shortList.get(1));
        assertFalse(Arrays.equals(none.get(0), empty.get(0)), "null and [] hash differently");
        assertFalse(Arrays.equals(none.get(0), lora.get(0)));
        assertFalse(Arrays.equals(lora.get(0), mm.get(0)));
        assertFalse(Arrays.equals(none.get(1), lora.get(1)), "extra keys of block 0 reach block 1 via the parent");
    }

    @Test
    void seedMattersAndIsRequired() {
        assertFalse(Arrays.equals(sha("0").noneHash(), sha("1").noneHash()));
        assertThrows(IllegalArgumentException.class, () -> sha(null));
        assertEquals(0, sha("0").keys(new long[3], 4).length);
    }

    @Test
    void xxh3_128IsWrittenHighHalfFirst() {
        byte[] abc = "abc".getBytes(StandardCharsets.US_ASCII);
        // §3.6: xxh3_128_digest("abc") = 06b05ab6733a6185 78af5f94892f3950
        assertEquals("06b05ab6733a618578af5f94892f3950",
                HEX.formatHex(VllmCborHash.Algorithm.XXHASH_CBOR.digest(abc, abc.length)));
        long[] lowHigh = LongTupleHashFunction.xx128().hashBytes(abc);
        assertEquals(0x78af5f94892f3950L, lowHigh[0], "the library returns the low half first");
        assertEquals(0x06b05ab6733a6185L, lowHigh[1]);
        // the published int64 is the low half
        assertEquals(0x78af5f94892f3950L, VllmCborHash.toKey(VllmCborHash.Algorithm.XXHASH_CBOR.digest(abc, 3)));
        // only the first len bytes of the buffer count
        byte[] padded = Arrays.copyOf(abc, 64);
        assertEquals("06b05ab6733a618578af5f94892f3950",
                HEX.formatHex(VllmCborHash.Algorithm.XXHASH_CBOR.digest(padded, 3)));
    }

    @ParameterizedTest
    @CsvSource({
        // spec §3.2 table, seed "0"
        "SHA256_CBOR, 0, 4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e",
        "XXHASH_CBOR, 0, 1ebe36576dcb573f26b99533a20aaeca",
    })
    void noneHashOfSeedZero(VllmCborHash.Algorithm algorithm, String seed, String hex) {
        assertEquals(hex, HEX.formatHex(new VllmCborHash(algorithm, seed).noneHash()));
        assertEquals(algorithm.digestBytes(), new VllmCborHash(algorithm, seed).noneHash().length);
    }

    @Test
    void emptySeedIsASeedButAnUnsetOneIsRefused() {
        // PYTHONHASHSEED="" is set: H(cbor("")) = H(60)
        assertArrayEquals(Digests.sha256().digest(new byte[] {0x60}), sha("").noneHash());
        for (VllmCborHash.Algorithm a : VllmCborHash.Algorithm.values()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new VllmCborHash(a, null));
            assertTrue(e.getMessage().contains("PYTHONHASHSEED") && e.getMessage().contains("random"),
                    e.getMessage());
        }
    }

    @Test
    void xxhashChainUsesFullSixteenByteParents() {
        VllmCborHash h = xxh("0");
        long[] tokens = KvcmHashTest.range(1, 40);
        List<byte[]> d = h.blockDigests(tokens, 16, null);
        assertEquals(2, d.size());
        assertEquals(16, d.get(0).length);
        // block 1's payload starts 83 50 <16-byte digest of block 0>
        byte[] payload = VllmCborHash.blockPayload(d.get(0), tokens, 16, 32, null);
        assertEquals("8350" + HEX.formatHex(d.get(0)), HEX.formatHex(payload, 0, 18));
        byte[] expected = new byte[16];
        long[] lowHigh = LongTupleHashFunction.xx128().hashBytes(payload);
        for (int i = 0; i < 8; i++) {
            expected[i] = (byte) (lowHigh[1] >>> (56 - 8 * i));
            expected[8 + i] = (byte) (lowHigh[0] >>> (56 - 8 * i));
        }
        assertArrayEquals(expected, d.get(1));
    }
}
