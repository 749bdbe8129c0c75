package dev.kvpool.control.testing;

import dev.kvpool.api.events.Topics;
import dev.kvpool.testing.KafkaBroker;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/** A real KRaft broker (child JVM) for the whole suite; tests stop and restart it through {@link #broker()}. */
public class KafkaResource implements QuarkusTestResourceLifecycleManager {
    private static volatile KafkaBroker broker;

    public static KafkaBroker broker() {
        return broker;
    }

    @Override
    public Map<String, String> start() {
        broker = KafkaBroker.started();
        broker.createTopics(Topics.CONFIG);
        return Map.of("kafka.bootstrap.servers", broker.bootstrapServers());
    }

    @Override
    public void stop() {
        if (broker != null) {
            broker.close();
        }
    }
}
