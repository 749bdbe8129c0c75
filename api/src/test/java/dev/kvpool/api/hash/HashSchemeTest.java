package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HashSchemeTest {

    @Test
    void namesRoundTrip() {
        for (HashScheme s : HashScheme.values()) {
            assertEquals(s, HashScheme.fromName(s.schemeName()));
        }
        assertEquals(HashScheme.KVCM, HashScheme.fromName("kvcm"));
        assertEquals(HashScheme.VLLM_SHA256_CBOR, HashScheme.fromName("vllm-sha256-cbor"));
    }

    @Test
    void unknownNameListsTheValidOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName("md5"));
        assertTrue(e.getMessage().contains("'md5'"), e.getMessage());
        assertTrue(e.getMessage().contains("kvcm, vllm-sha256-cbor"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName(null));
    }

    @Test
    void keysDelegateToTheScheme() {
        long[] tokens = KvcmHashTest.range(1, 10);
        assertArrayEquals(KvcmHash.keys(tokens, 4), HashScheme.KVCM.keys(tokens, 4, null));
        assertArrayEquals(new VllmSha256Cbor("0").keys(tokens, 4), HashScheme.VLLM_SHA256_CBOR.keys(tokens, 4, "0"));
        assertEquals(2, HashScheme.VLLM_SHA256_CBOR.keys(tokens, 4, "0").length);
    }

    @Test
    void vllmSchemeNeedsASeed() {
        assertThrows(IllegalArgumentException.class, () -> HashScheme.VLLM_SHA256_CBOR.keys(new long[4], 4, null));
    }
}
