package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import net.openhft.hashing.LongTupleHashFunction;
import org.junit.jupiter.api.Test;

/**
 * The rows of spec hashing.md §3.7. Each payload is assembled here from the spec's hex, hashed with the JDK's
 * MessageDigest or the XXH3 library directly, checked against the spec's digest and int64, and then compared with
 * what HashScheme computes from the same tokens and request-level extras.
 */
class SpecVectorsTest {

    private static final HexFormat HEX = HexFormat.of();
    private static final String SHA_NONE_0 = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e";
    private static final String XXH_NONE_0 = "1ebe36576dcb573f26b99533a20aaeca";
    /** cbor array(16) of tokens 1..16 and 17..32, as the spec writes them. */
    private static final String TOKENS_1_16 = "90" + "0102030405060708090a0b0c0d0e0f10";
    private static final String TOKENS_17_32 = "90" + "11121314151617" + "18181819181a181b181c181d181e181f1820";
    private static final long[] TOKENS = KvcmHashTest.range(1, 32);

    private static byte[] sha256(String payloadHex) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(HEX.parseHex(payloadHex));
    }

    private static byte[] xxh3(String payloadHex) {
        long[] lowHigh = LongTupleHashFunction.xx128().hashBytes(HEX.parseHex(payloadHex));
        return HEX.parseHex(String.format("%016x%016x", lowHigh[1], lowHigh[0]));
    }

    private static long int64(byte[] digest) {
        return Long.parseUnsignedLong(HEX.formatHex(digest, digest.length - 8, digest.length), 16);
    }

    private static void assertDigest(byte[] d, String head, String tail, String unsignedInt64) {
        String hex = HEX.formatHex(d);
        assertTrue(hex.startsWith(head) && hex.endsWith(tail), hex);
        assertEquals(unsignedInt64, Long.toUnsignedString(int64(d)));
    }

    @Test
    void noneHashes() throws Exception {
        assertEquals(SHA_NONE_0, HEX.formatHex(sha256("6130")));
        assertEquals(XXH_NONE_0, HEX.formatHex(xxh3("6130")));
    }

    @Test
    void xxhashCbor_twoBlockChain() {
        byte[] d0 = xxh3("8350" + XXH_NONE_0 + TOKENS_1_16 + "f6");
        assertEquals("c2d7a75070fc6d6b0c3fb0af456c1009", HEX.formatHex(d0));
        assertEquals("882618318818381833", Long.toUnsignedString(int64(d0)));
        byte[] d1 = xxh3("8350" + HEX.formatHex(d0) + TOKENS_17_32 + "f6");
        assertEquals("93add93233ea572fb2e2b1685bac6f8d", HEX.formatHex(d1));
        assertEquals("12890060145260523405", Long.toUnsignedString(int64(d1)));

        long[] keys = HashScheme.VLLM_XXHASH_CBOR.keys(TOKENS, 16, "0");
        assertEquals(List.of(int64(d0), int64(d1)), List.of(keys[0], keys[1]));
        // with a trailing partial block and an explicitly empty extras object: the same two keys
        long[] more = HashScheme.VLLM_XXHASH_CBOR.keys(KvcmHashTest.range(1, 40), 16, "0", ExtraKeyInputs.NONE);
        assertEquals(2, more.length);
        assertEquals(keys[1], more[1]);
    }

    @Test
    void sha256Cbor_loraAndCacheSalt() throws Exception {
        byte[] d0 = sha256("835820" + SHA_NONE_0 + TOKENS_1_16 + "82" + "676d792d6c6f7261" + "6673616c742d41");
        assertDigest(d0, "360a0f3e", "5f38b6", "859214314393778358");
        // block 2: the salt is on the first block only
        byte[] d1 = sha256("835820" + HEX.formatHex(d0) + TOKENS_17_32 + "81" + "676d792d6c6f7261");
        assertDigest(d1, "538b59b2", "8bdf14", "8381049053207322388");

        long[] keys = HashScheme.VLLM_SHA256_CBOR.keys(TOKENS, 16, "0",
                new ExtraKeyInputs("my-lora", "salt-A", null));
        assertEquals(List.of(int64(d0), int64(d1)), List.of(keys[0], keys[1]));
    }

    @Test
    void sha256Cbor_multimodalOffsets8AndMinus8() throws Exception {
        byte[] d0 = sha256("835820" + SHA_NONE_0 + TOKENS_1_16 + "81" + "82" + "6b6d6d2d686173682d616263" + "08");
        assertDigest(d0, "ac93157e", "6628be", "5879507683218172094");
        // the same item seen from block 1: it began 8 tokens before the block, so −8 (CBOR 27)
        byte[] d1 = sha256("835820" + HEX.formatHex(d0) + TOKENS_17_32 + "81" + "82" + "6b6d6d2d686173682d616263"
                + "27");
        assertDigest(d1, "3d2ef6fa", "6366f9", "1674493178585245433");

        // an item at [8, 24) touches both blocks
        long[] keys = HashScheme.VLLM_SHA256_CBOR.keys(TOKENS, 16, "0",
                new ExtraKeyInputs(null, null, List.of(new MmItem("mm-hash-abc", 8, 16))));
        assertEquals(List.of(int64(d0), int64(d1)), List.of(keys[0], keys[1]));
    }

    @Test
    void sha256Cbor_multimodalItemEndingInBlock0_doesNotReachBlock1() throws Exception {
        byte[] d0 = sha256("835820" + SHA_NONE_0 + TOKENS_1_16 + "81" + "82" + "6b6d6d2d686173682d616263" + "08");
        byte[] d1 = sha256("835820" + HEX.formatHex(d0) + TOKENS_17_32 + "f6");
        long[] keys = HashScheme.VLLM_SHA256_CBOR.keys(TOKENS, 16, "0",
                new ExtraKeyInputs(null, null, List.of(new MmItem("mm-hash-abc", 8, 8))));
        assertEquals(List.of(int64(d0), int64(d1)), List.of(keys[0], keys[1]));
    }
}
