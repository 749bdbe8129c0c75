package dev.kvpool.meta.support;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/**
 * Quota and capacity tests: src/test/resources/quota-startup.json defines small groups (max_key_count 16, a
 * capacity of exactly 8 blocks, a file-type quota of 5 blocks, a 20-block race group and a wide one).
 */
public class QuotaTestProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.startup-config", TestDirs.testResource("quota-startup.json"),
                "kvpool.data-dir", TestDirs.freshDataDir("quota"));
    }
}
