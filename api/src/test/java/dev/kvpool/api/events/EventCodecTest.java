package dev.kvpool.api.events;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventCodecTest {

    @Test
    void blockBatchUsesTheSpecFieldNames() throws Exception {
        var batch = new BlockBatch("gpu-node-07", "qwen3-32b-prod", "search", 18231, 1763800000123L, List.of(
                BlockBatch.BlockEvent.stored(new long[]{123, -88}, 77L, 64, "cpu", "host0", 2097152),
                BlockBatch.BlockEvent.removed(new long[]{5}, "disk"),
                BlockBatch.BlockEvent.allCleared()));
        JsonNode n = EventCodec.mapper().readTree(EventCodec.toJson(batch));
        assertEquals("gpu-node-07", n.get("agent").asText());
        assertEquals("qwen3-32b-prod", n.get("instance_id").asText());
        assertEquals(18231, n.get("seq").asLong());
        assertEquals(1763800000123L, n.get("ts_ms").asLong());
        JsonNode stored = n.get("events").get(0);
        assertEquals("stored", stored.get("event_type").asText());
        assertEquals(-88, stored.get("block_hashes").get(1).asLong());
        assertEquals(77, stored.get("parent_block_hash").asLong());
        assertEquals("host0", stored.get("storage_location").asText());
        JsonNode cleared = n.get("events").get(2);
        assertEquals(1, cleared.size(), "absent fields are left out");

        BlockBatch back = EventCodec.fromJson(EventCodec.toJson(batch), BlockBatch.class);
        assertEquals(batch.seq(), back.seq());
        assertArrayEquals(new long[]{123, -88}, back.events().get(0).blockHashes());
    }

    @Test
    void cacheEventKeepsEitherMaskShape() throws Exception {
        var offset = new CacheEvent(CacheEvent.GET_CACHE_LOCATION, "i", 5, "QT_PREFIX_MATCH", new long[]{1, 2}, 1,
                null, 1, null, null, null);
        var bools = new CacheEvent(CacheEvent.REMOVE, "i", 5, null, new long[]{1, 2}, new boolean[]{true, false},
                null, null, null, null, "s1");
        assertEquals(1, EventCodec.mapper().readTree(EventCodec.toJson(offset)).get("block_mask").asInt());
        JsonNode m = EventCodec.mapper().readTree(EventCodec.toJson(bools)).get("block_mask");
        assertTrue(m.get(0).asBoolean());
        assertFalse(m.get(1).asBoolean());
        assertEquals("i", EventCodec.fromJson(EventCodec.toJson(offset), CacheEvent.class).instanceId());
    }

    @Test
    void aLargeOperationIsCutIntoPartsThatEachFitAKafkaRecord() throws Exception {
        int n = 60_000; // a million-token prompt in blocks of 16
        long[] keys = new long[n];
        boolean[] mask = new boolean[n];
        for (int i = 0; i < n; i++) {
            keys[i] = Long.MIN_VALUE + i * 7919L; // 20-digit keys: the longest JSON
            mask[i] = i % 3 == 0;
        }
        var whole = new CacheEvent(CacheEvent.REMOVE, "i", 5, null, keys, mask, null, 9, 1L << 30, "remove_cache", null);
        assertTrue(EventCodec.toJson(whole).length > 1 << 20, "whole, it is over Kafka's default 1 MiB");
        List<CacheEvent> parts = whole.split(CacheEvent.MAX_KEYS_PER_RECORD);
        assertEquals(4, parts.size());
        long[] joined = new long[0];
        List<Boolean> joinedMask = new java.util.ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            byte[] json = EventCodec.toJson(parts.get(i));
            assertTrue(json.length < 900 * 1024, "part " + i + ": " + json.length + " bytes");
            JsonNode node = EventCodec.mapper().readTree(json);
            assertEquals(i, node.get("part").asInt());
            assertEquals(4, node.get("parts").asInt());
            assertEquals(9, node.get("hit_count").asInt(), "the whole operation's fields on every part");
            CacheEvent back = EventCodec.fromJson(json, CacheEvent.class);
            long[] k = back.keys();
            long[] grown = java.util.Arrays.copyOf(joined, joined.length + k.length);
            System.arraycopy(k, 0, grown, joined.length, k.length);
            joined = grown;
            node.get("block_mask").forEach(b -> joinedMask.add(b.asBoolean()));
        }
        assertArrayEquals(keys, joined);
        for (int i = 0; i < n; i++) {
            assertEquals(mask[i], joinedMask.get(i), "mask bit " + i);
        }
        var small = new CacheEvent(CacheEvent.REMOVE, "i", 5, null, new long[]{1}, null, null, null, null, null, null);
        assertEquals(List.of(small), small.split(CacheEvent.MAX_KEYS_PER_RECORD));
        assertFalse(EventCodec.mapper().readTree(EventCodec.toJson(small)).has("part"), "absent when sent whole");
    }

    @Test
    void headersAreCloudEventsBinaryMode() {
        var h = CloudEventHeaders.of("id-1", "kvpool/meta/n1", CloudEventHeaders.TYPE_BLOCKS, Instant.EPOCH);
        assertEquals("1.0", new String(h.get("ce_specversion"), StandardCharsets.UTF_8));
        assertEquals("1970-01-01T00:00:00Z", new String(h.get("ce_time"), StandardCharsets.UTF_8));
        assertThrows(IllegalArgumentException.class, () -> CloudEventHeaders.of("", "s", "t", Instant.EPOCH));
    }

    @Test
    void garbageIsRefusedWithTheTypeName() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> EventCodec.fromJson("{".getBytes(StandardCharsets.UTF_8), ConfigEvent.class));
        assertTrue(e.getMessage().contains("ConfigEvent"));
    }
}
