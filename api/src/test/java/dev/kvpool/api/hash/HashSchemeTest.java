package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class HashSchemeTest {

    @Test
    void namesRoundTrip() {
        for (HashScheme s : HashScheme.values()) {
            assertEquals(s, HashScheme.fromName(s.schemeName()));
        }
        assertEquals(HashScheme.KVCM, HashScheme.fromName("kvcm"));
        assertEquals(HashScheme.VLLM_SHA256_CBOR, HashScheme.fromName("vllm-sha256-cbor"));
        assertEquals(HashScheme.VLLM_XXHASH_CBOR, HashScheme.fromName("vllm-xxhash-cbor"));
    }

    @Test
    void unknownNameListsTheValidOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName("md5"));
        assertTrue(e.getMessage().contains("'md5'"), e.getMessage());
        assertTrue(e.getMessage().contains("kvcm, vllm-sha256-cbor, vllm-xxhash-cbor"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName(null));
        // vLLM's pickle-based algorithms are not offered (their bytes depend on CPython object identity)
        assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName("vllm-sha256"));
        assertThrows(IllegalArgumentException.class, () -> HashScheme.fromName("vllm-xxhash"));
    }

    @Test
    void keysDelegateToTheScheme() {
        long[] tokens = KvcmHashTest.range(1, 10);
        assertArrayEquals(KvcmHash.keys(tokens, 4), HashScheme.KVCM.keys(tokens, 4, null));
        assertArrayEquals(KvcmHash.keys(tokens, 4), HashScheme.KVCM.keys(tokens, 4, null, ExtraKeyInputs.NONE));
        assertArrayEquals(new VllmCborHash(VllmCborHash.Algorithm.SHA256_CBOR, "0").keys(tokens, 4),
                HashScheme.VLLM_SHA256_CBOR.keys(tokens, 4, "0"));
        assertArrayEquals(new VllmCborHash(VllmCborHash.Algorithm.XXHASH_CBOR, "0").keys(tokens, 4),
                HashScheme.VLLM_XXHASH_CBOR.keys(tokens, 4, "0"));
        assertEquals(2, HashScheme.VLLM_SHA256_CBOR.keys(tokens, 4, "0").length);
        assertFalse(Arrays.equals(HashScheme.VLLM_SHA256_CBOR.keys(tokens, 4, "0"),
                HashScheme.VLLM_XXHASH_CBOR.keys(tokens, 4, "0")));
    }

    @Test
    void vllmSchemesNeedASeed() {
        for (HashScheme s : List.of(HashScheme.VLLM_SHA256_CBOR, HashScheme.VLLM_XXHASH_CBOR)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> s.keys(new long[4], 4, null));
            assertTrue(e.getMessage().contains("PYTHONHASHSEED"), e.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> s.keys(new long[4], 4, null, new ExtraKeyInputs("lora", null, null)));
        }
    }

    @Test
    void badBlockSizesAreNamedWithOrWithoutExtras() {
        ExtraKeyInputs lora = new ExtraKeyInputs("lora", null, null);
        for (HashScheme s : HashScheme.values()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> s.keys(new long[4], 0, "0"));
            assertTrue(e.getMessage().contains("blockSize"), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HashScheme.VLLM_XXHASH_CBOR.keys(new long[4], 0, "0", lora));
        assertTrue(e.getMessage().contains("blockSize"), e.getMessage());
    }

    @Test
    void kvcmRefusesExtras() {
        long[] tokens = KvcmHashTest.range(1, 8);
        for (ExtraKeyInputs x : List.of(new ExtraKeyInputs("lora", null, null), new ExtraKeyInputs(null, "s", null),
                new ExtraKeyInputs(null, null, List.of(new MmItem("img", 0, 4))))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> HashScheme.KVCM.keys(tokens, 4, null, x));
            assertTrue(e.getMessage().contains("kvcm hash scheme has no extra keys"), e.getMessage());
        }
        // an empty salt is no salt (as in vLLM), so nothing to refuse
        assertArrayEquals(KvcmHash.keys(tokens, 4), HashScheme.KVCM.keys(tokens, 4, null,
                new ExtraKeyInputs(null, "", List.of())));
        assertThrows(IllegalArgumentException.class,
                () -> HashScheme.KVCM.keysWithBlockExtras(tokens, 4, null, Arrays.asList(null, List.of("x"))));
        assertArrayEquals(KvcmHash.keys(tokens, 4),
                HashScheme.KVCM.keysWithBlockExtras(tokens, 4, null, Arrays.asList(null, null)));
    }

    @Test
    void perBlockExtrasAsPublishedInEventsEqualTheRequestLevelBuild() {
        long[] tokens = KvcmHashTest.range(1, 48);
        ExtraKeyInputs in = new ExtraKeyInputs("lora-a", "salt", List.of(new MmItem("img", 10, 12)));
        List<Object> perBlock = ExtraKeys.perBlock(in, 3, 16);
        for (HashScheme s : List.of(HashScheme.VLLM_SHA256_CBOR, HashScheme.VLLM_XXHASH_CBOR)) {
            assertArrayEquals(s.keys(tokens, 16, "7", in), s.keysWithBlockExtras(tokens, 16, "7", perBlock));
            assertFalse(Arrays.equals(s.keys(tokens, 16, "7"), s.keys(tokens, 16, "7", in)));
        }
    }
}
