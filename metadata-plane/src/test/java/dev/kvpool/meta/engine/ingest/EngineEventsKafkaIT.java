package dev.kvpool.meta.engine.ingest;

import static dev.kvpool.meta.engine.ingest.Batches.batch;
import static dev.kvpool.meta.engine.ingest.Batches.removed;
import static dev.kvpool.meta.engine.ingest.Batches.stored;
import static dev.kvpool.meta.engine.ingest.ZmqIngestTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.events.Topics;
import dev.kvpool.engine.view.EngineView;
import dev.kvpool.engine.view.MapWalkEngineView;
import dev.kvpool.testing.KafkaBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.zeromq.ZContext;

/**
 * ZMQ → kvpool.engine-events → indexer through a real KRaft broker that is killed (SIGKILL) mid-stream and restarted:
 * nothing is lost (the view equals the engine's own state), and a restarted indexer that replays the topic from the
 * beginning into a fresh view ends with the same contents.
 */
class EngineEventsKafkaIT {
    static final String INSTANCE = "llama";
    static final String POD = "10.1.2.3:8000";
    static final int N = 300;

    record Indexer(MapWalkEngineView view, PodStates states, EventApplier applier, EngineEventsConsumer consumer)
            implements AutoCloseable {
        static Indexer start(String bootstrap) {
            var meters = new SimpleMeterRegistry();
            var view = new MapWalkEngineView();
            var states = new PodStates();
            var applier = new EventApplier(view, states, Clock.systemUTC(), s -> Map.of(), meters);
            return new Indexer(view, states, applier,
                    new EngineEventsConsumer(bootstrap, Topics.ENGINE_EVENTS, Map.of(), "test", applier, meters));
        }

        long lastSeq() {
            PodStates.Pod p = states.get(INSTANCE, POD);
            return p == null ? -1 : p.lastSeq();
        }

        @Override
        public void close() {
            consumer.close();
        }
    }

    @Test
    void aBrokerKilledMidStreamLosesNothingAndARestartedIndexerReplaysTheTopic() throws Exception {
        try (KafkaBroker broker = KafkaBroker.started(); FakeEngine engine = new FakeEngine("kv@" + POD + "@llama");
             ZContext ctx = new ZContext()) {
            broker.createTopics(Topics.ENGINE_EVENTS);
            var meters = new SimpleMeterRegistry();
            PodStates zmqStates = new PodStates();
            EventApplier unused = new EventApplier(new MapWalkEngineView(), zmqStates, Clock.systemUTC(),
                    s -> Map.of(), meters);
            try (var producer = new EngineEventsProducer(broker.bootstrapServers(), Topics.ENGINE_EVENTS, Map.of(),
                    "test-producer", zmqStates, meters);
                 Indexer a = Indexer.start(broker.bootstrapServers())) {
                EngineSource src = new EngineSource("pod-k", INSTANCE, null, engine.endpoint(),
                        engine.replayEndpoint(), "", Map.of());
                ZmqSubscriber sub = new ZmqSubscriber(ctx, src, producer, zmqStates, unused,
                        new ZmqSubscriber.Settings(Duration.ofSeconds(2), 100_000, 100_000),
                        Counter.builder("replays").register(meters));
                try {
                    TreeSet<Long> expected = new TreeSet<>();
                    byte[] first = batch(0, stored("GPU", 0));
                    expected.add(0L);
                    engine.buffer.put(0L, first);
                    await("batch 0 through Kafka", () -> {
                        engine.send(0, first);
                        return a.view().holds(INSTANCE, POD, "gpu", 0);
                    });
                    for (int i = 1; i <= N; i++) {
                        long k1 = 2L * i, k2 = 2L * i + 1;
                        byte[] b = i % 10 == 0 ? batch(0, stored("GPU", k1, k2), removed("GPU", k1 - 4))
                                : batch(0, stored("GPU", k1, k2));
                        expected.add(k1);
                        expected.add(k2);
                        if (i % 10 == 0) {
                            expected.remove(k1 - 4);
                        }
                        engine.publish(i, b);
                        if (i == N / 3) {
                            broker.stop(); // SIGKILL mid-stream: the producer holds and retries
                        }
                        if (i == 2 * N / 3) {
                            broker.start();
                        }
                    }
                    await("every batch applied", () -> a.lastSeq() == N);
                    assertEquals(0, a.applier().gaps(), "no batch lost");
                    assertEquals(0, a.applier().malformed());
                    assertEquals(PodStates.State.LIVE, a.states().get(INSTANCE, POD).state());
                    assertEquals(expected, contents(a.view(), 2L * N + 2));

                    // a restarted indexer replays the topic from the beginning into a fresh view
                    try (Indexer b = Indexer.start(broker.bootstrapServers())) {
                        await("the replay", () -> b.consumer().caughtUp() && b.lastSeq() == N);
                        assertEquals(contents(a.view(), 2L * N + 2), contents(b.view(), 2L * N + 2));
                        assertEquals(a.view().pods(INSTANCE).toString(), b.view().pods(INSTANCE).toString());
                        assertEquals(PodStates.State.LIVE, b.states().get(INSTANCE, POD).state());
                        assertEquals(0, b.applier().gaps());
                    }
                    assertTrue(meters.get("kvpool.engine.ingest.kafka.produced").counter().count() >= N + 1);
                    assertEquals(0, meters.get("kvpool.engine.ingest.kafka.failed").counter().count());
                } finally {
                    sub.close();
                }
            }
        }
    }

    /** Every key 0..max the pod holds on gpu. */
    static TreeSet<Long> contents(EngineView v, long max) {
        TreeSet<Long> out = new TreeSet<>();
        for (long k = 0; k <= max; k++) {
            if (v.holds(INSTANCE, POD, "gpu", k)) {
                out.add(k);
            }
        }
        assertFalse(out.isEmpty());
        assertEquals(List.of("gpu"), List.copyOf(v.pods(INSTANCE).getFirst().keysPerTier().keySet()));
        return out;
    }
}
