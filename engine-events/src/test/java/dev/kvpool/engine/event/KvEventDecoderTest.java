package dev.kvpool.engine.event;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.engine.event.EngineEvent.AllBlocksCleared;
import dev.kvpool.engine.event.EngineEvent.BlockRemoved;
import dev.kvpool.engine.event.EngineEvent.BlockStored;
import dev.kvpool.engine.event.KvEventDecoder.MalformedEventException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

class KvEventDecoderTest {

    static final long H1 = 2164874634404590027L;
    static final long H2 = Long.parseUnsignedLong("17270480062156288726");

    /** The payload_hex of one layout in vllm_kv_event_fixtures.json (array / map). */
    static byte[] fixture(String layout) throws IOException {
        String json = Files.readString(SharedData.sharedDir().resolve(
                "data/engine-events/vllm_kv_event_fixtures.json"));
        int at = json.indexOf("\"" + layout + "\"");
        Matcher m = Pattern.compile("\"payload_hex\"\\s*:\\s*\"([0-9a-f]+)\"").matcher(json);
        assertTrue(at >= 0 && m.find(at), "fixture " + layout);
        return HexFormat.of().parseHex(m.group(1));
    }

    interface Body {
        void write(MessageBufferPacker p) throws IOException;
    }

    static byte[] pack(Body b) throws IOException {
        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        b.write(p);
        return p.toByteArray();
    }

    static void longs(MessageBufferPacker p, long... v) throws IOException {
        p.packArrayHeader(v.length);
        for (long x : v) {
            p.packLong(x);
        }
    }

    static String malformed(byte[] payload) {
        return assertThrows(MalformedEventException.class, () -> KvEventDecoder.decode(payload)).getMessage();
    }

    static void assertFixtureBatch(EventBatch b) {
        assertEquals(1700000000.5, b.ts());
        assertEquals(0, b.dataParallelRank());
        assertEquals(3, b.events().size());
        BlockStored s = assertInstanceOf(BlockStored.class, b.events().get(0));
        assertArrayEquals(new long[] {H1, H2}, s.blockHashes());
        assertTrue(s.blockHashes()[1] < 0, "uint64 >= 2^63 keeps its bits in a negative long");
        assertNull(s.parentBlockHash());
        assertArrayEquals(new long[] {1, 2, 3, 4, 5, 6, 7, 8}, s.tokenIds());
        assertEquals(4, s.blockSize());
        assertNull(s.loraId());
        assertEquals("GPU", s.medium());
        assertNull(s.loraName());
        assertEquals(Arrays.asList(null, null), s.extraKeys());
        assertEquals(0, s.groupIdx());
        assertEquals("full_attention", s.kvCacheSpecKind());
        assertNull(s.slidingWindow());
        BlockRemoved r = assertInstanceOf(BlockRemoved.class, b.events().get(1));
        assertArrayEquals(new long[] {H2}, r.blockHashes());
        assertEquals("GPU", r.medium());
        assertEquals(0, r.groupIdx());
        assertInstanceOf(AllBlocksCleared.class, b.events().get(2));
        assertEquals(0, b.skippedCount());
    }

    @Test
    void vllmLegacyArrayFixture() throws IOException {
        assertFixtureBatch(KvEventDecoder.decode(fixture("array")));
    }

    @Test
    void vllmMapEventFixture() throws IOException {
        assertFixtureBatch(KvEventDecoder.decode(fixture("map")));
    }

    @Test
    void batchAsMapWithUnknownKeysAndTypeNotFirst() throws IOException {
        byte[] payload = pack(p -> {
            p.packMapHeader(4);
            p.packString("future_field").packArrayHeader(2).packString("x").packMapHeader(0);
            p.packString("events").packArrayHeader(2);
            p.packMapHeader(4); // type last, unknown key first
            p.packString("locality").packString("LOCAL");
            p.packString("block_hashes");
            longs(p, 5, -6);
            p.packString("medium").packString("CPU");
            p.packString("type").packString("BlockRemoved");
            p.packMapHeader(1).packString("type").packString("AllBlocksCleared");
            p.packString("data_parallel_rank").packInt(3);
            p.packString("ts").packDouble(12.25);
        });
        EventBatch b = KvEventDecoder.decode(payload);
        assertEquals(12.25, b.ts());
        assertEquals(3, b.dataParallelRank());
        BlockRemoved r = assertInstanceOf(BlockRemoved.class, b.events().get(0));
        assertArrayEquals(new long[] {5, -6}, r.blockHashes());
        assertEquals("CPU", r.medium());
        assertNull(r.groupIdx());
        assertInstanceOf(AllBlocksCleared.class, b.events().get(1));
    }

    @Test
    void twoElementBatchAndMissingTrailingFieldsAreNil() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(2).packDouble(1.0).packArrayHeader(2);
            p.packArrayHeader(2).packString("BlockStored");
            longs(p, 9);
            p.packArrayHeader(1).packString("BlockRemoved");
        });
        EventBatch b = KvEventDecoder.decode(payload);
        assertNull(b.dataParallelRank());
        BlockStored s = (BlockStored) b.events().get(0);
        assertArrayEquals(new long[] {9}, s.blockHashes());
        assertNull(s.parentBlockHash());
        assertArrayEquals(new long[0], s.tokenIds());
        assertEquals(0, s.blockSize());
        assertNull(s.medium());
        assertNull(s.extraKeys());
        assertArrayEquals(new long[0], ((BlockRemoved) b.events().get(1)).blockHashes());
    }

    @Test
    void extraTrailingArrayElementsAreIgnored() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(3).packDouble(1.0).packArrayHeader(2);
            p.packArrayHeader(15).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            longs(p, 1, 2);
            p.packInt(2).packNil().packString("GPU").packString("adapter-a");
            p.packArrayHeader(1).packArrayHeader(2).packString("salt").packLong(7);
            p.packInt(1).packString("sliding_window").packInt(128);
            p.packString("LOCAL").packMapHeader(1).packString("k").packBinaryHeader(1).addPayload(new byte[] {1});
            p.packExtensionTypeHeader((byte) 1, 1).addPayload(new byte[] {0});
            p.packArrayHeader(5).packString("BlockRemoved");
            longs(p, 1);
            p.packString("GPU").packInt(1).packString("future");
            p.packInt(0);
        });
        EventBatch b = KvEventDecoder.decode(payload);
        BlockStored s = (BlockStored) b.events().get(0);
        assertEquals("adapter-a", s.loraName());
        assertEquals(List.of(List.of("salt", 7L)), s.extraKeys());
        assertEquals(1, s.groupIdx());
        assertEquals("sliding_window", s.kvCacheSpecKind());
        assertEquals(128, s.slidingWindow());
        assertEquals(1, ((BlockRemoved) b.events().get(1)).groupIdx());
    }

    @Test
    void hashForms() throws IOException {
        byte[] digest = new byte[32];
        for (int i = 0; i < 32; i++) {
            digest[i] = (byte) (i + 1);
        }
        byte[] payload = pack(p -> {
            p.packArrayHeader(3).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(7).packString("BlockStored");
            p.packArrayHeader(5);
            p.packBigInteger(new BigInteger("18446744073709551615")); // uint64 max
            p.packLong(-42); // SGLang signed int64
            p.packBinaryHeader(32).addPayload(digest); // sha256 digest
            p.packBinaryHeader(3).addPayload(new byte[] {1, 2, 3}); // short: left-padded
            p.packBinaryHeader(0); // empty: 0
            p.packBinaryHeader(16).addPayload(Arrays.copyOf(digest, 16)); // parent as xxhash-128 bin
            longs(p);
            p.packInt(16).packNil().packNil();
            p.packNil();
        });
        BlockStored s = (BlockStored) KvEventDecoder.decode(payload).events().get(0);
        assertArrayEquals(new long[] {-1L, -42L, 0x191a1b1c1d1e1f20L, 0x010203L, 0L}, s.blockHashes());
        assertEquals(0x090a0b0c0d0e0f10L, s.parentBlockHash());
        assertNull(s.medium());
    }

    @Test
    void sglangSevenElementBaseAndBlockRemoved() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(3).packDouble(5.5).packArrayHeader(2);
            p.packArrayHeader(7).packString("BlockStored");
            longs(p, -100, 200);
            p.packLong(-99);
            longs(p, 1, 2, 3, 4);
            p.packInt(2).packNil().packString("CPU_TIER1");
            p.packArrayHeader(3).packString("BlockRemoved");
            longs(p, -100);
            p.packString("GPU");
            p.packInt(1);
        });
        EventBatch b = KvEventDecoder.decode(payload);
        assertEquals(1, b.dataParallelRank());
        BlockStored s = (BlockStored) b.events().get(0);
        assertArrayEquals(new long[] {-100, 200}, s.blockHashes());
        assertEquals(-99L, s.parentBlockHash());
        assertEquals(2, s.blockSize());
        assertEquals("CPU_TIER1", s.medium());
        assertNull(s.loraName());
        assertNull(s.groupIdx());
        BlockRemoved r = (BlockRemoved) b.events().get(1);
        assertEquals("GPU", r.medium());
        assertNull(r.groupIdx());
    }

    @Test
    void sglangEighthElementMetadataMapIsToldApartFromLoraName() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(2);
            p.packArrayHeader(8).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            longs(p, 1);
            p.packInt(1).packLong(3).packString("GPU");
            p.packMapHeader(2).packString("cache_salt").packString("s").packString("session_id").packString("x");
            // llm-d's vLLM-aligned SGLang variant: lora_name and extra_keys at 7-8
            p.packArrayHeader(9).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            longs(p, 1);
            p.packInt(1).packNil().packString("GPU").packString("lora-x").packNil();
        });
        EventBatch b = KvEventDecoder.decode(payload);
        BlockStored s = (BlockStored) b.events().get(0);
        assertEquals(3L, s.loraId());
        assertEquals("GPU", s.medium());
        assertNull(s.loraName());
        BlockStored t = (BlockStored) b.events().get(1);
        assertEquals("lora-x", t.loraName());
        assertNull(t.extraKeys());
    }

    @Test
    void sglangBigramTokensAreFlattened() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(7).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            p.packArrayHeader(3);
            longs(p, 10, 11);
            longs(p, 11, 12);
            p.packInt(13);
            p.packInt(2).packNil().packString("GPU");
        });
        BlockStored s = (BlockStored) KvEventDecoder.decode(payload).events().get(0);
        assertArrayEquals(new long[] {10, 11, 11, 12, 13}, s.tokenIds());
        byte[] triple = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(4).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            p.packArrayHeader(1);
            longs(p, 1, 2, 3);
        });
        assertTrue(malformed(triple).contains("token_ids[0]"));
    }

    @Test
    void componentAwareTenElementVariant() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(10).packString("BlockStored");
            longs(p, 4);
            p.packNil();
            longs(p, 1, 2);
            p.packInt(2).packNil().packString("F0").packString("tp0").packLong(17).packString("CPU");
        });
        BlockStored s = (BlockStored) KvEventDecoder.decode(payload).events().get(0);
        assertEquals("CPU", s.medium());
        assertNull(s.loraName());
        assertNull(s.extraKeys());
        assertNull(s.groupIdx());
    }

    @Test
    void extraKeysValueTypes() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(9).packString("BlockStored");
            longs(p, 1, 2);
            p.packNil();
            longs(p);
            p.packInt(0).packNil().packString("GPU").packNil();
            p.packArrayHeader(2).packNil();
            p.packArrayHeader(4).packString("s").packBigInteger(new BigInteger("18446744073709551615"))
                    .packBinaryHeader(2).addPayload(new byte[] {7, 8});
            p.packArrayHeader(2).packString("mm").packLong(-5);
        });
        BlockStored s = (BlockStored) KvEventDecoder.decode(payload).events().get(0);
        assertNull(s.extraKeys().get(0));
        List<?> k = (List<?>) s.extraKeys().get(1);
        assertEquals("s", k.get(0));
        assertEquals(new BigInteger("18446744073709551615"), k.get(1));
        assertArrayEquals(new byte[] {7, 8}, (byte[]) k.get(2));
        assertEquals(List.of("mm", -5L), k.get(3));
        byte[] mismatch = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packArrayHeader(9).packString("BlockStored");
            longs(p, 1, 2);
            p.packNil();
            longs(p);
            p.packInt(0).packNil().packString("GPU").packNil();
            p.packArrayHeader(1).packNil();
        });
        assertTrue(malformed(mismatch).contains("1 entries for 2 block hashes"));
    }

    @Test
    void unknownTagsAreSkippedAndCounted() throws IOException {
        byte[] payload = pack(p -> {
            p.packArrayHeader(3).packDouble(0).packArrayHeader(4);
            p.packArrayHeader(3).packString("BlockMoved").packInt(1).packMapHeader(0);
            p.packArrayHeader(1).packString("AllBlocksCleared");
            p.packMapHeader(2).packString("block_hashes").packString("not hashes, not ours to check")
                    .packString("type").packString("BlockMoved");
            p.packMapHeader(1).packString("type").packString("Future");
            p.packNil();
        });
        EventBatch b = KvEventDecoder.decode(payload);
        assertEquals(1, b.events().size());
        assertEquals(Map.of("BlockMoved", 2, "Future", 1), b.skippedTags());
        assertEquals(3, b.skippedCount());
    }

    @Test
    void malformedInputsNameWhatAndWhere() throws IOException {
        assertTrue(malformed(new byte[0]).contains("empty"));
        assertTrue(malformed(pack(p -> p.packString("x"))).contains("expected an array or a map"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(1).packDouble(0))).contains("batch array needs"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(3).packString("t").packArrayHeader(0).packNil()))
                .contains("batch.ts"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(3).packDouble(0).packArrayHeader(0).packInt(-1)))
                .contains("data_parallel_rank"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packInt(3)))
                .contains("events[0]"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packArrayHeader(0)))
                .contains("no tag"));
        assertTrue(malformed(pack(p -> p.packArrayHeader(2).packDouble(0).packArrayHeader(1)
                .packMapHeader(1).packString("medium").packString("GPU"))).contains("without a \"type\""));
        String m = malformed(pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(2).packArrayHeader(1).packString("AllBlocksCleared");
            p.packArrayHeader(2).packString("BlockStored").packArrayHeader(2).packLong(1).packString("h");
        }));
        assertTrue(m.contains("events[1].block_hashes[1]") && m.contains("STRING"), m);
        m = malformed(pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
            p.packMapHeader(2).packString("type").packString("BlockStored").packString("block_size").packInt(-4);
        }));
        assertTrue(m.contains("events[0].block_size"), m);
        m = malformed(pack(p -> p.packArrayHeader(2).packDouble(0).packArrayHeader(0).packInt(1)));
        assertTrue(m.contains("trailing bytes"), m);
        byte[] badUtf8 = {(byte) 0x92, 0x00, (byte) 0x91, (byte) 0x91, (byte) 0xa2, (byte) 0xc3, 0x28};
        assertTrue(malformed(badUtf8).contains("UTF-8"));
        assertTrue(malformed(new byte[] {(byte) 0xc1}).contains("0xc1"));
        assertTrue(malformed(new byte[] {(byte) 0xdd, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff})
                .contains("exceed the limit"));
        assertTrue(malformed(new byte[] {(byte) 0x92, (byte) 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xdd, 0, 0, 0, 50})
                .contains("truncated"));
        assertThrows(MalformedEventException.class, () -> KvEventDecoder.decode(null));
    }

    @Test
    void limits() throws IOException {
        assertTrue(malformed(new byte[KvEventDecoder.MAX_PAYLOAD_BYTES + 1]).contains("MAX_PAYLOAD_BYTES"));
        byte[] events = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(KvEventDecoder.MAX_EVENTS + 1);
            for (int i = 0; i <= KvEventDecoder.MAX_EVENTS; i++) {
                p.packArrayHeader(1).packString("AllBlocksCleared");
            }
        });
        assertTrue(malformed(events).contains("MAX_EVENTS"));
        byte[] atLimit = Arrays.copyOf(events, events.length);
        atLimit[14] = (byte) 0xa0; // MAX_EVENTS exactly: header 0xdd 00 01 86 a1 → a0
        assertEquals(KvEventDecoder.MAX_EVENTS, KvEventDecoder.decode(Arrays.copyOf(atLimit, atLimit.length - 18))
                .events().size());
        byte[] hashes = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packArrayHeader(2).packString("BlockRemoved");
            p.packArrayHeader(KvEventDecoder.MAX_ITEMS_PER_EVENT + 1);
            for (int i = 0; i <= KvEventDecoder.MAX_ITEMS_PER_EVENT; i++) {
                p.packInt(1);
            }
        });
        assertTrue(malformed(hashes).contains("MAX_ITEMS_PER_EVENT"));
        byte[] string = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packArrayHeader(3).packString("BlockRemoved");
            p.packArrayHeader(0).packString("x".repeat(KvEventDecoder.MAX_STRING_BYTES + 1));
        });
        assertTrue(malformed(string).contains("MAX_STRING_BYTES"));
        byte[] deep = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packArrayHeader(9).packString("BlockStored");
            longs(p, 1);
            p.packNil();
            longs(p);
            p.packInt(0).packNil().packNil().packNil().packArrayHeader(1);
            for (int i = 0; i < 40; i++) {
                p.packArrayHeader(1);
            }
            p.packNil();
        });
        assertTrue(malformed(deep).contains("MAX_DEPTH"));
        // deep nesting in an ignored key is skipped without recursion
        byte[] skipped = pack(p -> {
            p.packArrayHeader(2).packDouble(0).packArrayHeader(1).packMapHeader(2);
            p.packString("junk");
            for (int i = 0; i < 100_000; i++) {
                p.packArrayHeader(1);
            }
            p.packNil();
            p.packString("type").packString("AllBlocksCleared");
        });
        assertEquals(1, KvEventDecoder.decode(skipped).events().size());
    }

    static void decodeOrMalformed(byte[] b, String what) {
        try {
            KvEventDecoder.decode(b);
        } catch (MalformedEventException e) {
            assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
        } catch (Throwable t) {
            fail(what + ": " + HexFormat.of().formatHex(b) + " threw " + t, t);
        }
    }

    @Test
    void fuzzOnlyMalformedOrSuccess() throws IOException {
        Random rnd = new Random(36);
        List<byte[]> seeds = List.of(fixture("array"), fixture("map"));
        for (byte[] f : seeds) {
            for (int n = 0; n < f.length; n++) {
                byte[] cut = Arrays.copyOf(f, n);
                if (n > 0) {
                    malformed(cut); // every strict truncation is incomplete
                }
            }
            for (int bit = 0; bit < f.length * 8; bit++) {
                byte[] flipped = f.clone();
                flipped[bit / 8] ^= (byte) (1 << (bit % 8));
                decodeOrMalformed(flipped, "bit flip " + bit);
            }
            for (int i = 0; i < 20_000; i++) {
                byte[] m = f.clone();
                int edits = 1 + rnd.nextInt(4);
                for (int e = 0; e < edits; e++) {
                    m[rnd.nextInt(m.length)] = (byte) rnd.nextInt(256);
                }
                decodeOrMalformed(m, "random edits");
            }
        }
        for (int i = 0; i < 20_000; i++) {
            byte[] b = new byte[rnd.nextInt(64)];
            rnd.nextBytes(b);
            if (b.length > 0 && rnd.nextBoolean()) {
                b[0] = (byte) (0x90 | rnd.nextInt(4)); // a plausible batch header, to get further in
            }
            decodeOrMalformed(b, "random bytes");
        }
    }
}
