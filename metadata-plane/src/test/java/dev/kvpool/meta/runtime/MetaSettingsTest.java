package dev.kvpool.meta.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.quarkus.runtime.configuration.DurationConverter;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.runtime.configuration.MemorySizeConverter;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The typed settings accept what users' configs say today: lower-case kinds and modes, as before the enums. */
class MetaSettingsTest {
    /** The mapping as Quarkus builds it, with Quarkus' converters for "5s"-style durations and "64M" sizes. */
    static MetaSettings settings(Map<String, String> props) {
        return new SmallRyeConfigBuilder().withMapping(MetaSettings.class)
                .withConverter(Duration.class, 100, new DurationConverter())
                .withConverter(MemorySize.class, 100, new MemorySizeConverter())
                .withSources(new PropertiesConfigSource(props, "test", 100)).build()
                .getConfigMapping(MetaSettings.class);
    }

    @Test
    void storeKindsKeepTheirSpellings() {
        assertEquals(MetaSettings.StoreKind.EMBEDDED, settings(Map.of()).store());
        assertEquals(MetaSettings.StoreKind.EMBEDDED, settings(Map.of("kvpool.meta.store", "embedded")).store());
        assertEquals(MetaSettings.StoreKind.REDIS, settings(Map.of("kvpool.meta.store", "redis")).store());
        assertEquals(MetaSettings.StoreKind.REDIS, settings(Map.of("kvpool.meta.store", "REDIS")).store());
    }

    @Test
    void fsyncModesKeepTheirSpellings() {
        assertEquals(MetaSettings.Fsync.INTERVAL, settings(Map.of()).index().fsync());
        assertEquals(MetaSettings.Fsync.INTERVAL, settings(Map.of("kvpool.meta.index.fsync", "interval")).index().fsync());
        assertEquals(MetaSettings.Fsync.ALWAYS, settings(Map.of("kvpool.meta.index.fsync", "always")).index().fsync());
    }

    @Test
    void anUnknownKindIsRefusedAtStartNamingTheAllowedOnes() {
        var e = assertThrows(RuntimeException.class, () -> settings(Map.of("kvpool.meta.store", "postgres")));
        String all = String.valueOf(e.getMessage()) + " " + (e.getCause() == null ? "" : e.getCause().getMessage());
        assertEquals(true, all.contains("postgres") && all.contains("embedded") && all.contains("redis"), all);
    }
}
