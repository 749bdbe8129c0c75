package dev.kvpool.control.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** The relay's producer takes the TLS/SASL settings of kvpool.kafka.client-config-dir (KafkaClientConfig). */
class OutboxRelayKafkaClientTest {

    static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required "
            + "username=\"kvpool\" password=\"secret\";";

    @Test
    void securitySettingsReachTheProducer() {
        Properties p = OutboxRelay.producerProperties("127.0.0.1:9093", Duration.ofSeconds(10),
                Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN", "sasl.jaas.config", JAAS));
        assertEquals("SASL_PLAINTEXT", p.get("security.protocol"));
        assertEquals("all", p.get("acks"), "the relay's own settings stay");
        assertEquals("127.0.0.1:9093", p.get("bootstrap.servers"));
        // a real client accepts them (the SASL login happens here, without a broker)
        new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer()).close(Duration.ZERO);
    }

    @Test
    void aBadSettingFailsInTheClientNotSilently() {
        Properties p = OutboxRelay.producerProperties("127.0.0.1:9093", Duration.ofSeconds(10),
                Map.of("security.protocol", "NO_SUCH_PROTOCOL"));
        ConfigException e = assertThrows(ConfigException.class,
                () -> new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer()));
        assertTrue(e.getMessage().contains("security.protocol"), e.getMessage());
    }
}
