package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The per-block extra keys of spec hashing.md §3.4 and the bounds on their inputs. */
class ExtraKeysTest {

    private static List<Object> pair(String id, long offset) {
        return Arrays.asList(id, offset);
    }

    @Test
    void noInputsGiveNullPerBlockNeverAnEmptyList() {
        assertEquals(Arrays.asList(null, null, null), ExtraKeys.perBlock(ExtraKeyInputs.NONE, 3, 4));
        assertEquals(Arrays.asList(null, null), ExtraKeys.perBlock(null, 2, 4));
        assertEquals(Arrays.asList(null, null), ExtraKeys.perBlock(new ExtraKeyInputs(null, "", List.of()), 2, 4));
        assertTrue(new ExtraKeyInputs(null, "", null).isEmpty());
        assertEquals(List.of(), ExtraKeys.perBlock(ExtraKeyInputs.NONE, 0, 4));
    }

    @Test
    void orderIsLoraThenMultimodalThenSaltThenEmbeddings() {
        byte[] e0 = new byte[32];
        e0[0] = 7;
        List<Object> keys = ExtraKeys.perBlock(
                new ExtraKeyInputs("lora", "salt", List.of(new MmItem("a", 2, 3), new MmItem("b", 6, 4))),
                2, 8, Arrays.asList(e0, null), Long.MAX_VALUE);
        List<?> b0 = (List<?>) keys.get(0);
        assertEquals(5, b0.size());
        assertEquals(List.of("lora", pair("a", 2), pair("b", 6), "salt"), b0.subList(0, 4));
        assertEquals(7, ((byte[]) b0.get(4))[0]);
        // b at [6, 10) runs into block 1 at −2; no salt, no embedding digest there
        assertEquals(List.of("lora", pair("b", -2)), keys.get(1));
    }

    @Test
    void overlapWalk() {
        List<MmItem> items = List.of(new MmItem("a", 0, 4), new MmItem("b", 4, 20), new MmItem("c", 30, 2),
                new MmItem("d", 40, 1));
        List<Object> keys = ExtraKeys.perBlock(new ExtraKeyInputs(null, null, items), 6, 8);
        assertEquals(List.of(pair("a", 0), pair("b", 4)), keys.get(0)); // a ends inside, b runs on
        assertEquals(List.of(pair("b", -4)), keys.get(1)); // b began 4 tokens before block 1
        assertEquals(List.of(pair("b", -12)), keys.get(2)); // and ends exactly at 24 = block 2's end
        assertEquals(List.of(pair("c", 6)), keys.get(3)); // [24, 32): c at 30
        assertEquals(List.of(pair("d", 0)), keys.get(5)); // [40, 48)
        assertNull(keys.get(4)); // [32, 40): nothing
    }

    @Test
    void generatedBlocksRestartAtTheLastItem() {
        // prompt of 30 tokens, block size 16: block 0 is hashed with the prompt; block 1 ([16, 32)) is completed by
        // generated tokens, where vLLM restarts the walk from the last item and so sees only "y"
        List<MmItem> items = List.of(new MmItem("x", 18, 2), new MmItem("y", 22, 2));
        ExtraKeyInputs in = new ExtraKeyInputs(null, null, items);
        assertEquals(List.of(pair("x", 2), pair("y", 6)), ExtraKeys.perBlock(in, 2, 16).get(1));
        assertEquals(List.of(pair("y", 6)), ExtraKeys.perBlock(in, 2, 16, null, 30).get(1));
        assertEquals(List.of(pair("x", 2), pair("y", 6)), ExtraKeys.perBlock(in, 2, 16, null, 32).get(1));
    }

    @Test
    void nullAndEmptyExtrasHashDifferently() {
        VllmCborHash h = new VllmCborHash(VllmCborHash.Algorithm.XXHASH_CBOR, "0");
        long[] tokens = KvcmHashTest.range(1, 8);
        assertFalse(Arrays.equals(h.blockDigests(tokens, 8, null).get(0),
                h.blockDigests(tokens, 8, List.of(List.of())).get(0)));
    }

    @Test
    void inputBounds() {
        assertEquals("identifier: must not be empty",
                assertThrows(IllegalArgumentException.class, () -> new MmItem("", 0, 1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new MmItem(null, 0, 1));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new MmItem("x".repeat(1025), 0, 1))
                .getMessage().contains("at most 1024 UTF-8 bytes"));
        new MmItem("x".repeat(1024), 0, 1);
        // 512 three-byte characters: 1,536 bytes although only 512 chars
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new MmItem("中".repeat(512), 0, 1))
                .getMessage().contains("got 1536"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new MmItem("a\uD800", 0, 1))
                .getMessage().contains("surrogate"));
        assertEquals("offset: must be >= 0, was -1",
                assertThrows(IllegalArgumentException.class, () -> new MmItem("x", -1, 1)).getMessage());
        assertEquals("length: must be >= 0, was -2",
                assertThrows(IllegalArgumentException.class, () -> new MmItem("x", 0, -2)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new MmItem("x", Long.MAX_VALUE, 1))
                .getMessage().contains("overflows"));
        new MmItem("x", Long.MAX_VALUE - 1, 1);

        List<MmItem> many = new ArrayList<>(Collections.nCopies(4096, new MmItem("x", 0, 1)));
        assertEquals(4096, new ExtraKeyInputs(null, null, many).mmItems().size());
        many.add(new MmItem("x", 0, 1));
        assertEquals("mm_items: at most 4096 items, got 4097",
                assertThrows(IllegalArgumentException.class, () -> new ExtraKeyInputs(null, null, many)).getMessage());
        assertEquals("mm_items[1] is null", assertThrows(IllegalArgumentException.class,
                () -> new ExtraKeyInputs(null, null, Arrays.asList(new MmItem("x", 0, 1), null))).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ExtraKeyInputs("", null, null))
                .getMessage().startsWith("lora_name: must not be empty"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ExtraKeyInputs(null, "s".repeat(4097), null))
                .getMessage().startsWith("cache_salt: at most 4096"));
        // the item list is copied: later changes to the caller's list do not reach the inputs
        List<MmItem> mine = new ArrayList<>(List.of(new MmItem("x", 0, 1)));
        ExtraKeyInputs in = new ExtraKeyInputs(null, null, mine);
        mine.clear();
        assertEquals(1, in.mmItems().size());

        assertThrows(IllegalArgumentException.class, () -> ExtraKeys.perBlock(ExtraKeyInputs.NONE, 1, 4,
                List.of(new byte[31]), Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> ExtraKeys.perBlock(ExtraKeyInputs.NONE, 1, 4,
                List.of(new byte[32], new byte[32]), Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> ExtraKeys.perBlock(ExtraKeyInputs.NONE, 1, 0));
    }

    @Test
    void farOffsetsDoNotOverflow() {
        ExtraKeyInputs in = new ExtraKeyInputs(null, null, List.of(new MmItem("big", 0, Long.MAX_VALUE)));
        List<Object> keys = ExtraKeys.perBlock(in, 3, 1 << 30);
        assertEquals(pair("big", -(2L << 30)), ((List<?>) keys.get(2)).get(0));
    }
}
