package dev.kvpool.meta.support;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/**
 * The API suite's profile: the repository's replica of KVCM's built-in startup config (group "default",
 * storage nfs_01 at /tmp/nfs/, key_count_per_file 8) and an empty index.
 */
public class KvcmTestProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        // no scheduled storage sweep: StorageSweepApiTest runs its own and counts what they delete
        return Map.of("kvpool.meta.startup-config", TestDirs.repoFile("config/kvcm-default-startup.json"),
                "kvpool.data-dir", TestDirs.freshDataDir("kvcm"), "kvpool.meta.files.sweep-interval", "0");
    }
}
