package dev.kvpool.meta.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.store.embedded.EmbeddedSettings;
import dev.kvpool.meta.store.redis.RedisSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md is generated from the settings interfaces; this fails while it is out of date (the docs
 * are checked like code). Rewrite it with {@value #REGENERATE}.
 */
class ConfigurationReferenceTest {
    static final String REGENERATE = "./mvnw -o -pl metadata-plane test -Dtest=ConfigurationReferenceTest "
            + "-Dconfiguration.docs.write=true";

    static final Path DOC = Path.of("..", "docs", "configuration.md");

    /** The plane's settings and those of each backend module (a backend brings its own, kvpool.meta.<kind>.*). */
    static final List<Class<?>> MODULES = List.of(MetaSettings.class, EmbeddedSettings.class, RedisSettings.class);

    static List<ConfigurationReference.Section> sections() throws Exception {
        List<Class<?>> mappings = new ArrayList<>();
        List<Path> sources = new ArrayList<>();
        for (Class<?> m : MODULES) {
            Path classes = Path.of(m.getProtectionDomain().getCodeSource().getLocation().toURI());
            for (Class<?> c : ConfigurationReference.mappings(classes, "dev.kvpool.meta")) {
                if (!mappings.contains(c)) {
                    mappings.add(c);
                }
            }
        }
        sources.add(Path.of("src", "main", "java"));
        sources.add(Path.of("..", "metadata-store-embedded", "src", "main", "java"));
        sources.add(Path.of("..", "metadata-store-redis", "src", "main", "java"));
        var ref = new ConfigurationReference(sources,
                ConfigurationReference.plainProperties(Path.of("src", "main", "resources", "application.properties")));
        return ref.sections(mappings);
    }

    @Test
    void theReferenceIsUpToDate() throws Exception {
        String generated = ConfigurationReference.markdown(sections(), REGENERATE);
        if (Boolean.getBoolean("configuration.docs.write")) {
            Files.writeString(DOC, generated);
        }
        assertTrue(Files.exists(DOC), DOC + " is missing: " + REGENERATE);
        assertEquals(generated, Files.readString(DOC), DOC + " is out of date: " + REGENERATE);
    }

    @Test
    void everySettingSaysWhatItDoes() throws Exception {
        List<String> undocumented = new ArrayList<>();
        for (var s : sections()) {
            for (var x : s.settings()) {
                if (x.description().isBlank()) {
                    undocumented.add(x.name());
                }
            }
        }
        assertEquals(List.of(), undocumented, "settings without Javadoc");
    }

    /** A kvpool.* key in application.properties (any profile) that no interface declares would fail the start. */
    @Test
    void applicationPropertiesSetOnlyDeclaredSettings() throws Exception {
        Set<String> declared = new TreeSet<>();
        for (var s : sections()) {
            for (var x : s.settings()) {
                declared.add(x.name());
            }
        }
        assertTrue(declared.contains("kvpool.meta.store") && declared.contains("kvpool.meta.engine-events.enabled"),
                declared.toString());
        var p = new java.util.Properties();
        try (var r = Files.newBufferedReader(Path.of("src", "main", "resources", "application.properties"))) {
            p.load(r);
        }
        List<String> unknown = new ArrayList<>();
        for (String k : p.stringPropertyNames()) {
            String key = k.replaceFirst("^%[^.]+\\.", "");
            if (key.startsWith("kvpool.") && !declared.contains(key)) {
                unknown.add(k);
            }
        }
        assertEquals(List.of(), unknown);
    }
}
