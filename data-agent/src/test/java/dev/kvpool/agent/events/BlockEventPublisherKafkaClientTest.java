package dev.kvpool.agent.events;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** The kvpool.blocks producer takes the TLS/SASL settings of KafkaClientConfig. */
class BlockEventPublisherKafkaClientTest {

    @Test
    void securitySettingsReachTheProducer() {
        var e = assertThrows(ConfigException.class, () -> BlockEventPublisher.createProducer("127.0.0.1:9093",
                Map.of("security.protocol", "NO_SUCH_PROTOCOL")));
        assertTrue(e.getMessage().contains("security.protocol"), e.getMessage());
        BlockEventPublisher.createProducer("127.0.0.1:9093", Map.of("security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", "PLAIN", "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule"
                        + " required username=\"kvpool\" password=\"secret\";")).close(Duration.ZERO);
    }
}
