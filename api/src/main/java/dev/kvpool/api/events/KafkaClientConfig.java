package dev.kvpool.api.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Kafka client security settings (TLS, SASL) from a directory with one file per property, named after it and
 * holding its value: a Kubernetes Secret mounted as a volume ({@code kvpool.kafka.client-config-dir}, env
 * {@code KVPOOL_KAFKA_CLIENT_CONFIG_DIR}). Every Kafka client of a service adds them to its own settings, so a
 * cluster behind SASL_SSL needs no code change. One file per key keeps a PEM certificate or a JAAS line as it is.
 *
 * <p>Only {@code security.protocol}, {@code sasl.*} and {@code ssl.*} are taken: anything else (bootstrap servers,
 * serializers, acks, idempotence) is the service's own and is refused, naming the file, so a Secret cannot silently
 * change delivery guarantees. Hidden entries (Kubernetes' {@code ..data} links) are skipped; values are trimmed
 * (a Secret often ends in a newline); sizes are bounded.
 */
public final class KafkaClientConfig {
    public static final String PROPERTY = "kvpool.kafka.client-config-dir";
    /** Named in every refusal: the data agent reads the same env through kvpool.agent.events.client-config-dir. */
    static final String WHERE = PROPERTY + " (env KVPOOL_KAFKA_CLIENT_CONFIG_DIR)";
    static final Pattern ALLOWED = Pattern.compile("^(security\\.protocol|sasl\\.[a-z0-9.]+|ssl\\.[a-z0-9.]+)$");
    static final int MAX_ENTRIES = 64;
    /** A Secret holds at most 1 MiB in all. */
    static final long MAX_VALUE_BYTES = 1 << 20;

    private KafkaClientConfig() {
    }

    /** The settings in {@code dir}; none when it is unset or blank. Refuses a missing directory or a foreign key. */
    public static Map<String, String> load(Optional<String> dir) {
        if (dir.isEmpty() || dir.get().isBlank()) {
            return Map.of();
        }
        Path d = Path.of(dir.get().trim());
        if (!Files.isDirectory(d)) {
            throw new IllegalArgumentException(WHERE + " " + d + " is not a directory");
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(d)) {
            files = s.filter(p -> !p.getFileName().toString().startsWith(".")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(WHERE + " " + d + " cannot be listed", e);
        }
        if (files.size() > MAX_ENTRIES) {
            throw new IllegalArgumentException(WHERE + " " + d + " holds " + files.size() + " entries (at most "
                    + MAX_ENTRIES + ")");
        }
        Map<String, String> out = new TreeMap<>();
        for (Path f : files) {
            String key = f.getFileName().toString();
            if (!ALLOWED.matcher(key).matches()) {
                throw new IllegalArgumentException(WHERE + ": " + f + " is not a Kafka client security setting "
                        + "(only security.protocol, sasl.* and ssl.* are taken)");
            }
            if (!Files.isRegularFile(f)) {
                throw new IllegalArgumentException(WHERE + ": " + f + " is not a file");
            }
            try {
                if (Files.size(f) > MAX_VALUE_BYTES) {
                    throw new IllegalArgumentException(WHERE + ": " + f + " is over " + MAX_VALUE_BYTES + " bytes");
                }
                out.put(key, Files.readString(f, StandardCharsets.UTF_8).trim());
            } catch (IOException e) {
                throw new UncheckedIOException(WHERE + ": " + f + " cannot be read", e);
            }
        }
        return out;
    }
}
