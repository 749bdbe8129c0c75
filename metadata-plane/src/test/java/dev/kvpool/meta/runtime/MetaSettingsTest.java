package dev.kvpool.meta.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kvpool.meta.backend.BackendProvider;
import dev.kvpool.meta.store.embedded.EmbeddedBackendProvider;
import dev.kvpool.meta.store.embedded.EmbeddedSettings;
import dev.kvpool.meta.store.redis.RedisBackendProvider;
import io.quarkus.runtime.configuration.DurationConverter;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.runtime.configuration.MemorySizeConverter;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The settings accept what users' configs say today: kinds and modes in any case, as the enums did. */
class MetaSettingsTest {
    /** The mapping as Quarkus builds it, with Quarkus' converters for "5s"-style durations and "64M" sizes. */
    static MetaSettings settings(Map<String, String> props) {
        return new SmallRyeConfigBuilder().withMapping(MetaSettings.class)
                .withConverter(Duration.class, 100, new DurationConverter())
                .withConverter(MemorySize.class, 100, new MemorySizeConverter())
                .withSources(new PropertiesConfigSource(props, "test", 100)).build()
                .getConfigMapping(MetaSettings.class);
    }

    static EmbeddedSettings embedded(Map<String, String> props) {
        return new SmallRyeConfigBuilder().withMapping(EmbeddedSettings.class)
                .withConverter(Duration.class, 100, new DurationConverter())
                .withSources(new PropertiesConfigSource(props, "test", 100)).build()
                .getConfigMapping(EmbeddedSettings.class);
    }

    /** The backends on the plane's class path, as CDI finds them. */
    static final List<BackendProvider> BACKENDS = List.of(new EmbeddedBackendProvider(), new RedisBackendProvider());

    static String kind(Map<String, String> props) {
        return BackendProvider.select(settings(props).store(), BACKENDS).kind();
    }

    @Test
    void storeKindsKeepTheirSpellings() {
        assertEquals("embedded", kind(Map.of()));
        assertEquals("embedded", kind(Map.of("kvpool.meta.store", "embedded")));
        assertEquals("redis", kind(Map.of("kvpool.meta.store", "redis")));
        assertEquals("redis", kind(Map.of("kvpool.meta.store", "REDIS")));
        assertEquals("redis", kind(Map.of("kvpool.meta.store", " Redis ")));
    }

    @Test
    void fsyncModesKeepTheirSpellings() {
        assertEquals(EmbeddedSettings.Fsync.INTERVAL, embedded(Map.of()).fsync());
        assertEquals(EmbeddedSettings.Fsync.INTERVAL, embedded(Map.of("kvpool.meta.index.fsync", "interval")).fsync());
        assertEquals(EmbeddedSettings.Fsync.ALWAYS, embedded(Map.of("kvpool.meta.index.fsync", "always")).fsync());
    }

    @Test
    void anUnknownKindIsRefusedAtStartNamingTheKnownOnes() {
        var e = assertThrows(IllegalArgumentException.class, () -> kind(Map.of("kvpool.meta.store", "postgres")));
        assertEquals("kvpool.meta.store=postgres names no backend; known: [embedded, redis]", e.getMessage());
    }
}
