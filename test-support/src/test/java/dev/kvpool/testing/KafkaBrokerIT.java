package dev.kvpool.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class KafkaBrokerIT {

    @Test
    void keepsItsDataAndPortAcrossAKill() throws Exception {
        try (KafkaBroker broker = KafkaBroker.started()) {
            broker.createTopics("t");
            String bootstrap = broker.bootstrapServers();
            send(bootstrap, "before");
            broker.stop();
            assertFalse(broker.running());
            broker.start();
            assertEquals(bootstrap, broker.bootstrapServers());
            send(bootstrap, "after");
            assertEquals(List.of("before", "after"), readAll(bootstrap, 2));
            assertTrue(broker.running());
        }
    }

    private static void send(String bootstrap, String value) throws Exception {
        try (var p = new KafkaProducer<String, String>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                new StringSerializer(), new StringSerializer())) {
            p.send(new ProducerRecord<>("t", "k", value)).get();
        }
    }

    private static List<String> readAll(String bootstrap, int n) {
        var out = new ArrayList<String>();
        try (var c = new KafkaConsumer<String, String>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "g", ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of("t"));
            long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (out.size() < n && System.nanoTime() < until) {
                c.poll(Duration.ofMillis(200)).forEach(r -> out.add(r.value()));
            }
        }
        return out;
    }
}
