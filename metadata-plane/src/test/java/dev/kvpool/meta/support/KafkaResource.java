package dev.kvpool.meta.support;

import dev.kvpool.api.events.Topics;
import dev.kvpool.testing.KafkaBroker;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/** A real KRaft broker (child JVM) for one test profile; the metadata plane publishes kvpool.cache to it. */
public class KafkaResource implements QuarkusTestResourceLifecycleManager {
    private static volatile KafkaBroker broker;

    @Override
    public Map<String, String> start() {
        broker = KafkaBroker.started();
        broker.createTopics(Topics.CACHE);
        return Map.of("kvpool.meta.events.bootstrap-servers", broker.bootstrapServers());
    }

    @Override
    public void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    public static KafkaBroker broker() {
        return broker;
    }
}
