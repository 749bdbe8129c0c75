package dev.kvpool.meta.events;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.events.CacheEvent;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.sim.CacheEventTrace;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.sim.TraceSimulation;
import dev.kvpool.meta.support.EventsTestProfile;
import dev.kvpool.meta.support.KafkaResource;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import dev.kvpool.testing.Await;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** kvpool.cache on a real broker: every operation of a connector's cycle, and evictions, replayable. */
@QuarkusTest
@TestProfile(EventsTestProfile.class)
class CacheEventsIT extends KvcmTestBase {

    @Test
    void aWriteReadEvictCycleIsPublishedInOrderPerInstance() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, reg(uid("ev"), 16, "tp0", 1000).setInstanceGroup("evict"));
        long[] keys = rndKeys(3);
        StartWriteCacheResponse s = start(a, id, keys);
        finish(a, id, s.getWriteSessionId(), offset(3));
        assertEquals(2, prefix(a, id, keys[0], keys[1], rndKey()).size());
        given().contentType("application/json").body("{\"trigger_strategy\":{\"used_percentage\":0.01},\"delay_before_delete_ms\":0}")
                .put("/api/v1/groups/evict/reclaim").then().statusCode(200);

        List<ConsumerRecord<String, byte[]>> got = consume(id, CacheEvent.EVICT);
        List<CacheEvent> mine = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        for (var r : got) {
            if (!r.key().equals(id)) {
                continue;
            }
            mine.add(EventCodec.fromJson(r.value(), CacheEvent.class));
            String ceId = new String(r.headers().lastHeader("ce_id").value(), StandardCharsets.UTF_8);
            assertTrue(ids.add(ceId), "ce_id repeated: " + ceId);
            assertEquals("1.0", new String(r.headers().lastHeader("ce_specversion").value(), StandardCharsets.UTF_8));
            assertTrue(new String(r.headers().lastHeader("ce_type").value(), StandardCharsets.UTF_8)
                    .startsWith("dev.kvpool.cache."));
            assertNotNull(r.headers().lastHeader("ce_time"));
        }
        List<String> types = mine.stream().map(CacheEvent::type).toList();
        assertEquals(List.of("StartWriteCache", "FinishWriteCache", "GetCacheLocation", "Evict"), types.subList(0, 4),
                "events of one instance in operation order: " + types);
        assertArrayEquals(keys, mine.get(0).keys());
        assertEquals(s.getWriteSessionId(), mine.get(0).sessionId());
        assertEquals(s.getWriteSessionId(), mine.get(1).sessionId());
        assertEquals(3, mine.get(1).hitCount());
        assertEquals("QT_PREFIX_MATCH", mine.get(2).queryType());
        assertEquals(2, mine.get(2).hitCount());
        assertEquals("water_level", mine.get(3).reason());
        assertTrue(mine.get(0).triggerTimeUs() <= mine.get(2).triggerTimeUs());
    }

    @Test
    void anOperationOverAMillionTokensIsPublishedInPartsKafkaTakes() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, reg(uid("big"), 16, "tp0", 1000).setInstanceGroup("evict"));
        long[] keys = rndKeys(60_000); // 960,000 tokens in blocks of 16: 1.2 MB of JSON keys, over Kafka's 1 MiB
        assertEquals(0, prefix(a, id, keys).size());
        List<CacheEvent> parts = new ArrayList<>();
        for (var r : consume(id, CacheEvent.GET_CACHE_LOCATION)) {
            if (r.key().equals(id)) {
                parts.add(EventCodec.fromJson(r.value(), CacheEvent.class));
            }
        }
        assertEquals(4, parts.size(), "60,000 keys in parts of 16,384");
        long[] joined = parts.stream().flatMapToLong(e -> java.util.Arrays.stream(e.keys())).toArray();
        assertArrayEquals(keys, joined, "the parts, in order, are the whole query");
        for (int i = 0; i < 4; i++) {
            assertEquals(i, parts.get(i).part());
            assertEquals(4, parts.get(i).parts());
            assertEquals("QT_PREFIX_MATCH", parts.get(i).queryType());
        }
        // read back as a workload, the four parts are one query again
        List<MooncakeTrace.Request> recorded = CacheEventTrace.read(KafkaResource.broker().bootstrapServers(), id,
                Integer.MAX_VALUE, Duration.ofSeconds(10), null).requests();
        assertEquals(1, recorded.size());
        assertArrayEquals(keys, recorded.get(0).hashIds());
    }

    /**
     * "Enough to replay the workload": a connector's cycles (prefix query, then a write of what missed) over the first
     * requests of Mooncake's conversation trace, read back from kvpool.cache and replayed in a TraceSimulation with
     * room for everything, give the same hits, request by request, as the plane answered.
     */
    @Test
    void theRecordedWorkloadReplaysToThePlanesOwnHits() {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, reg(uid("rec"), 16, "tp0", 1000).setInstanceGroup("replay"));
        List<MooncakeTrace.Request> trace = MooncakeTrace.read(MooncakeTrace.conversation(), 150);
        List<Integer> planeHits = new ArrayList<>();
        for (var r : trace) {
            long[] keys = r.hashIds();
            int hits = prefix(a, id, keys).size();
            planeHits.add(hits);
            if (hits < keys.length) {
                write(a, id, java.util.Arrays.copyOfRange(keys, hits, keys.length));
            }
        }
        assertTrue(planeHits.stream().mapToInt(Integer::intValue).sum() > 0, "the trace shares prefixes");
        long misses = 0;
        for (int i = 0; i < trace.size(); i++) {
            misses += planeHits.get(i) < trace.get(i).hashIds().length ? 1 : 0;
        }
        CacheEventTrace.Recorded rec = null;
        long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        // sent asynchronously: wait for the writes too (the last query's write may land after every query)
        while ((rec == null || rec.requests().size() < trace.size()
                || rec.ops().stream().filter(CacheEventTrace.Op::write).count() < misses) && System.nanoTime() < end) {
            rec = CacheEventTrace.read(KafkaResource.broker().bootstrapServers(), id, Integer.MAX_VALUE,
                    Duration.ofSeconds(10), null);
        }
        List<MooncakeTrace.Request> recorded = rec.requests();
        assertEquals(trace.size(), recorded.size(), "one request per query");
        ReclaimConfig keepAll = new ReclaimConfig(ReclaimPolicy.LRU, 0.9, 0, 0, 0, 5, 0, 0, 60);
        // as a connector: each query writes what it missed
        try (TraceSimulation sim = new TraceSimulation(keepAll, 10_000_000, 16)) {
            for (int i = 0; i < trace.size(); i++) {
                assertArrayEquals(trace.get(i).hashIds(), recorded.get(i).hashIds(), "request " + i);
                assertEquals(planeHits.get(i), sim.request(1_763_800_000_000L + recorded.get(i).timestampMs(),
                        recorded.get(i).hashIds()), "hits of request " + i);
            }
        }
        // the writes as recorded, in between
        try (TraceSimulation sim = new TraceSimulation(keepAll, 10_000_000, 16)) {
            int q = 0;
            for (CacheEventTrace.Op op : rec.ops()) {
                if (op.write()) {
                    sim.write(1_763_800_000_000L + op.tsMs(), op.keys());
                } else {
                    assertEquals(planeHits.get(q), sim.query(1_763_800_000_000L + op.tsMs(), op.keys()),
                            "hits of request " + q + " with the recorded writes");
                    q++;
                }
            }
            assertEquals(trace.size(), q);
            assertEquals(misses, rec.ops().stream().filter(CacheEventTrace.Op::write).count(), "one write per miss");
        }
    }

    /**
     * Operations a plane drops (its queue full while Kafka lags) are not silently missing from the recorded
     * workload: the next record it sends carries their count (ce_missingbefore), and a reader adds them up.
     */
    @Test
    void operationsDroppedByAFullQueueAreCountedOnTheTopic() throws Exception {
        String id = uid("drops");
        CacheEvents events = new CacheEvents(KafkaResource.broker().bootstrapServers(), "drop-test", 1, Map.of());
        int offered = 0;
        try {
            while (events.dropped.get() == 0 && offered < 1_000_000) { // a queue of 1 cannot keep up with this loop
                events.offer(query(id, offered++));
            }
            int sent = offered;
            Await.within(Duration.ofSeconds(10), () -> events.published.get() + events.failed.get()
                    >= sent - events.dropped.get());
            events.offer(query(id, offered++)); // carries whatever was dropped after the last record sent
        } finally {
            events.close();
        }
        long dropped = events.dropped.get();
        assertTrue(dropped > 0);
        assertEquals(0, events.failed.get());
        CacheEventTrace.Recorded r = CacheEventTrace.read(KafkaResource.broker().bootstrapServers(), id,
                Integer.MAX_VALUE, Duration.ofSeconds(10), null);
        assertEquals(offered - dropped, r.requests().size(), "every operation not dropped is on the topic");
        assertEquals(dropped, r.missing(), "and the dropped ones are counted there");
    }

    private static CacheEvent query(String id, int n) {
        return new CacheEvent(CacheEvent.GET_CACHE_LOCATION, id, CacheEvents.nowMicros(), "QT_PREFIX_MATCH",
                new long[] {n, n + 1L}, 0, null, 0, null, null, null);
    }

    /** This instance's records up to the first of type {@code until} (30 s at most). */
    private static List<ConsumerRecord<String, byte[]>> consume(String id, String until) {
        List<ConsumerRecord<String, byte[]>> got = new ArrayList<>();
        try (var c = new KafkaConsumer<String, byte[]>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaResource.broker().bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, "t-" + id, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                new StringDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(Topics.CACHE));
            long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < end && got.stream().noneMatch(r -> r.key().equals(id)
                    && EventCodec.fromJson(r.value(), CacheEvent.class).type().equals(until)
                    && isLastPart(EventCodec.fromJson(r.value(), CacheEvent.class)))) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        return got;
    }

    private static boolean isLastPart(CacheEvent e) {
        return e.parts() == null || e.part() == e.parts() - 1;
    }
}
