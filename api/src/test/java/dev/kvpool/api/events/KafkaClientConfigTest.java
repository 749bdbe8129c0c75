package dev.kvpool.api.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaClientConfigTest {

    /** The layout of a Secret mounted as a volume: ..data and a timestamped dir, the keys as links into them. */
    static Path mountedSecret(Path root, Map<String, String> keys) throws Exception {
        Path ts = Files.createDirectory(root.resolve("..2026_11_27_13_00_00.1"));
        for (var e : keys.entrySet()) {
            Files.writeString(ts.resolve(e.getKey()), e.getValue());
        }
        Files.createSymbolicLink(root.resolve("..data"), ts.getFileName());
        for (String k : keys.keySet()) {
            Files.createSymbolicLink(root.resolve(k), Path.of("..data").resolve(k));
        }
        return root;
    }

    @Test
    void readsAMountedSecretOneFilePerProperty(@TempDir Path dir) throws Exception {
        String pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        mountedSecret(dir, Map.of(
                "security.protocol", "SASL_SSL\n",
                "sasl.mechanism", "SCRAM-SHA-512",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                        + "username=\"kvpool\" password=\"p=w;\";",
                "ssl.truststore.type", "PEM",
                "ssl.truststore.certificates", pem));
        Map<String, String> c = KafkaClientConfig.load(Optional.of(dir.toString()));
        assertEquals(5, c.size(), c.toString());
        assertEquals("SASL_SSL", c.get("security.protocol"));
        assertEquals("SCRAM-SHA-512", c.get("sasl.mechanism"));
        assertTrue(c.get("sasl.jaas.config").endsWith("password=\"p=w;\";"));
        assertEquals(pem.trim(), c.get("ssl.truststore.certificates"));
    }

    @Test
    void nothingWhenUnset() {
        assertEquals(Map.of(), KafkaClientConfig.load(Optional.empty()));
        assertEquals(Map.of(), KafkaClientConfig.load(Optional.of(" ")));
    }

    @Test
    void refusesKeysThatAreNotSecuritySettings(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("security.protocol"), "SSL");
        Files.writeString(dir.resolve("acks"), "0");
        var e = assertThrows(IllegalArgumentException.class, () -> KafkaClientConfig.load(Optional.of(dir.toString())));
        assertTrue(e.getMessage().contains("acks"), e.getMessage());
        Files.delete(dir.resolve("acks"));
        Files.writeString(dir.resolve("bootstrap.servers"), "evil:9092");
        assertThrows(IllegalArgumentException.class, () -> KafkaClientConfig.load(Optional.of(dir.toString())));
    }

    @Test
    void refusesAMissingDirectoryAndTooManyOrTooLargeEntries(@TempDir Path dir) throws Exception {
        var e = assertThrows(IllegalArgumentException.class,
                () -> KafkaClientConfig.load(Optional.of(dir.resolve("nope").toString())));
        assertTrue(e.getMessage().contains("kvpool.kafka.client-config-dir"), e.getMessage());
        Files.write(dir.resolve("ssl.truststore.certificates"), new byte[(1 << 20) + 1]);
        assertThrows(IllegalArgumentException.class, () -> KafkaClientConfig.load(Optional.of(dir.toString())));
        Files.delete(dir.resolve("ssl.truststore.certificates"));
        for (int i = 0; i < 65; i++) {
            Files.writeString(dir.resolve("sasl.x" + i), "v");
        }
        assertThrows(IllegalArgumentException.class, () -> KafkaClientConfig.load(Optional.of(dir.toString())));
    }
}
