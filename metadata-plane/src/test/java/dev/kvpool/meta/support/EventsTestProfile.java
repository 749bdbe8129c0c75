package dev.kvpool.meta.support;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.List;
import java.util.Map;

/** The reclaim profile plus a Kafka broker: operations and evictions go to kvpool.cache. */
public class EventsTestProfile implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.startup-config", TestDirs.testResource("reclaim-startup.json"),
                "kvpool.data-dir", TestDirs.freshDataDir("events"));
    }

    @Override
    public List<TestResourceEntry> testResources() {
        return List.of(new TestResourceEntry(KafkaResource.class));
    }
}
