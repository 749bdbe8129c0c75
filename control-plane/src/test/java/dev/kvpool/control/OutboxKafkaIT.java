package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import dev.kvpool.control.outbox.OutboxEvent;
import dev.kvpool.control.outbox.OutboxRelay;
import dev.kvpool.control.outbox.OutboxRepository;
import dev.kvpool.control.testing.Api;
import dev.kvpool.control.testing.KafkaResource;
import dev.kvpool.testing.Await;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** The outbox against a real broker: changes made while Kafka is down arrive after it is back, in order, none lost. */
@QuarkusTest
class OutboxKafkaIT {
    @Inject
    OutboxRepository outbox;
    @Inject
    OutboxRelay relay;

    record Seen(String ceId, long position, ConfigEvent event, Map<String, String> headers) {
    }

    long pending() {
        return QuarkusTransaction.requiringNew().call(() -> outbox.pending());
    }

    void awaitDrained() {
        Await.until("outbox did not drain", Duration.ofSeconds(60), () -> pending() == 0);
    }

    /** Reads kvpool.config from the start until {@code done} holds for what was seen (records matching {@code keep}). */
    static List<Seen> consume(Predicate<ConfigEvent> keep, Predicate<List<Seen>> done) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaResource.broker().bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "t-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<Seen> seen = new ArrayList<>();
        try (var c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(Topics.CONFIG));
            long end = System.currentTimeMillis() + 60_000;
            while (!done.test(seen) && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(200))) {
                    ConfigEvent e = EventCodec.fromJson(r.value(), ConfigEvent.class);
                    if (!keep.test(e)) {
                        continue;
                    }
                    Map<String, String> h = new LinkedHashMap<>();
                    r.headers().forEach(x -> h.put(x.key(), new String(x.value(), StandardCharsets.UTF_8)));
                    assertEquals(e.name(), r.key(), "key = object name");
                    seen.add(new Seen(h.get(CloudEventHeaders.ID), Long.parseLong(h.get(OutboxRelay.POSITION_HEADER)), e, h));
                }
            }
        }
        return seen;
    }

    List<OutboxEvent> rows(String prefix) {
        return QuarkusTransaction.requiringNew().call(() ->
                outbox.list("name like ?1 order by position", prefix + "%"));
    }

    @Test
    void changesMadeWhileKafkaIsDownArriveInOrderAfterItReturns() throws Exception {
        awaitDrained();
        KafkaResource.broker().stop();
        try {
            Api.nfsStorage("ob_nfs");
            Api.group("ob-g", "ob_nfs");
            for (int i = 1; i <= 5; i++) {
                admin().header("If-Match", Integer.toString(i)).body(Map.of("quotaBytes", 1_000_000_000L + i))
                        .put("/api/v1/instance-groups/ob-g").then().statusCode(200);
            }
            admin().body(Api.instanceBody("ob-inst", "ob-g")).post("/api/v1/instances").then().statusCode(201);
            Thread.sleep(1500);
            assertTrue(pending() >= 8, "the changes wait in the outbox while Kafka is down");
        } finally {
            KafkaResource.broker().start();
        }
        List<OutboxEvent> expected = rows("ob");
        assertEquals(8, expected.size());
        List<Seen> seen = consume(e -> e.name().startsWith("ob"),
                s -> s.stream().map(Seen::ceId).distinct().count() >= expected.size());
        // dedupe on ce_id (delivery is at least once), then compare with the outbox, in order
        Map<String, Seen> unique = new LinkedHashMap<>();
        seen.forEach(s -> unique.putIfAbsent(s.ceId(), s));
        List<Long> positions = unique.values().stream().map(Seen::position).toList();
        assertEquals(expected.stream().map(r -> r.position).toList(), positions, "none lost, in position order");
        assertEquals(expected.stream().map(r -> r.eventId).toList(), new ArrayList<>(unique.keySet()),
                "ce_id = the outbox event id, unique per change");
        List<Long> versions = unique.values().stream().filter(s -> s.event().name().equals("ob-g"))
                .map(s -> s.event().version()).toList();
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), versions);
        Seen first = unique.values().iterator().next();
        assertEquals(ConfigEvent.STORAGE, first.event().kind());
        assertEquals("1.0", first.headers().get(CloudEventHeaders.SPEC_VERSION));
        assertEquals("dev.kvpool.config.storage.created", first.headers().get(CloudEventHeaders.TYPE));
        assertEquals(OutboxRelay.SOURCE, first.headers().get(CloudEventHeaders.SOURCE));
        awaitDrained();
    }

    @Test
    void aCrashBetweenAckAndCommitResendsWithTheSameId() throws Exception {
        awaitDrained();
        relay.simulateCrashAfterNextSend();
        Api.nfsStorage("rs_nfs");
        awaitDrained();
        List<Seen> seen = consume(e -> e.name().equals("rs_nfs"), s -> s.size() >= 2);
        assertEquals(2, seen.size(), "sent, crashed before the commit, sent again: " + seen);
        assertEquals(seen.get(0).ceId(), seen.get(1).ceId(), "the re-sent record keeps its ce_id");
        Map<String, Integer> ids = new HashMap<>();
        seen.forEach(s -> ids.merge(s.ceId(), 1, Integer::sum));
        assertEquals(1, ids.size());
        assertTrue(rows("rs_nfs").get(0).publishedAt != null);
    }

    @Test
    void snapshotPositionMatchesTheTopic() throws Exception {
        awaitDrained();
        Api.nfsStorage("sp_nfs");
        long position = ((Number) admin().get("/api/v1/config/snapshot").then().statusCode(200).extract()
                .path("position")).longValue();
        awaitDrained();
        List<Seen> seen = consume(e -> e.name().equals("sp_nfs"), s -> !s.isEmpty());
        assertEquals(position, seen.get(0).position(), "the snapshot already contains everything up to its position");
    }
}
