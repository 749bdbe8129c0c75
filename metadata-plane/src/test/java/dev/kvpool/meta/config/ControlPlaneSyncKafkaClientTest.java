package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kvpool.meta.events.CacheEvents;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** Both Kafka clients of the metadata plane take the TLS/SASL settings of KafkaClientConfig. */
class ControlPlaneSyncKafkaClientTest {

    static final Map<String, String> SASL = Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
            "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    + "username=\"kvpool\" password=\"secret\";");

    @Test
    void theConfigConsumerTakesThem() {
        Properties p = ConfigStream.consumerProperties(
                new ControlPlaneSync.Settings("127.0.0.1:9093", Duration.ofMinutes(5), Duration.ofMinutes(1), SASL));
        assertEquals("SASL_PLAINTEXT", p.get("security.protocol"));
        assertEquals("false", p.get("enable.auto.commit"), "its own settings stay");
        new KafkaConsumer<String, String>(p).close(Duration.ZERO); // a real client accepts them
        Properties none = ConfigStream.consumerProperties(
                new ControlPlaneSync.Settings("127.0.0.1:9093", Duration.ofMinutes(5), Duration.ofMinutes(1), Map.of()));
        assertEquals(null, none.get("security.protocol"));
    }

    @Test
    void theCacheEventsProducerTakesThem() {
        assertThrows(ConfigException.class, () -> new CacheEvents("127.0.0.1:9093", "n1", 16,
                Map.of("security.protocol", "NO_SUCH_PROTOCOL")));
        CacheEvents ok = new CacheEvents("127.0.0.1:9093", "n1", 16, SASL);
        ok.close();
    }
}
