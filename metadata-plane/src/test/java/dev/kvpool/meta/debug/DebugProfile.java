package dev.kvpool.meta.debug;

import dev.kvpool.meta.support.TestDirs;
import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/** KVCM's default startup config with the debug service on, through KVCM's own key. */
public class DebugProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.startup-config", TestDirs.repoFile("config/kvcm-default-startup.json"),
                "kvpool.data-dir", TestDirs.freshDataDir("debug"), "kvpool.meta.files.sweep-interval", "0",
                "kvcm.service.enable_debug_service", "true");
    }
}
