package dev.kvpool.meta.support;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/** src/test/resources/reclaim-startup.json: group "evict" (40 blocks of 1000 bytes, water level 3.2 = never). */
public class ReclaimTestProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.startup-config", TestDirs.testResource("reclaim-startup.json"),
                "kvpool.data-dir", TestDirs.freshDataDir("reclaim"));
    }
}
