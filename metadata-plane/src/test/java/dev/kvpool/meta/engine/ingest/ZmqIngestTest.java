package dev.kvpool.meta.engine.ingest;

import static dev.kvpool.meta.engine.ingest.Batches.batch;
import static dev.kvpool.meta.engine.ingest.Batches.removed;
import static dev.kvpool.meta.engine.ingest.Batches.stored;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.engine.view.MapWalkEngineView;
import dev.kvpool.engine.view.PrefixScores;
import dev.kvpool.engine.view.TierWeights;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.ZContext;

/**
 * A real JeroMQ publisher and replay ROUTER (FakeEngine, built as vLLM builds them) feeding a ZmqSubscriber and the
 * EventApplier into a view, directly (no Kafka): live batches, replays in both layouts, pruned history, engine
 * restarts, malformed payloads, DP ranks.
 */
class ZmqIngestTest {
    static final String INSTANCE = "llama";
    /** Generous: a loaded 2-core CI machine can stall a reply; a timeout would read as pruned history. */
    static final Duration REPLAY_TIMEOUT = Duration.ofSeconds(10);
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final MapWalkEngineView view = new MapWalkEngineView();
    final PodStates states = new PodStates();
    final EventApplier applier = new EventApplier(view, states, Clock.systemUTC(), s -> Map.of("CPU_TIER1", "cpu"),
            meters);
    final Counter replays = Counter.builder("replays").register(meters);
    final ZContext ctx = new ZContext();
    FakeEngine engine;
    ZmqSubscriber sub;

    @AfterEach
    void close() {
        stopEngine();
        ctx.close();
    }

    void stopEngine() {
        if (sub != null) {
            sub.close();
        }
        if (engine != null) {
            engine.close();
        }
    }

    static void await(String what, BooleanSupplier cond) {
        if (!within(Duration.ofSeconds(20), cond)) {
            throw new AssertionError("timed out waiting for " + what);
        }
    }

    static boolean within(Duration d, BooleanSupplier cond) {
        long until = System.nanoTime() + d.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > until) {
                return false;
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(5); // polling for another thread's effect, not letting time pass
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        return true;
    }

    /** Starts the engine and a subscriber; returns once batch 0 (stored key 1 on gpu) went through. */
    String start(String topic, boolean replay) {
        engine = new FakeEngine(topic);
        EngineSource src = new EngineSource("pod-a", INSTANCE, null, engine.endpoint(),
                replay ? engine.replayEndpoint() : null, "", Map.of());
        String pod = src.podOf(topic);
        byte[] first = batch(0, stored("GPU", 1));
        engine.buffer.put(0L, first);
        // a SUB misses what is published before its subscription reaches the PUB: resend batch 0 until it arrives
        // (the repeats are duplicates to the cursor). A connection JeroMQ leaves without a handshake is torn down
        // and redone by the subscriber's handshake timer (ZmqSubscriber.HANDSHAKE_IVL_MS), well within the wait.
        sub = new ZmqSubscriber(ctx, src, applier::apply, states, applier,
                new ZmqSubscriber.Settings(REPLAY_TIMEOUT, 100_000, 100_000), replays);
        await("batch 0", () -> {
            engine.send(0, first);
            return view.holds(INSTANCE, pod, "gpu", 1);
        });
        return pod;
    }

    PodStates.State state(String pod) {
        return states.get(INSTANCE, pod).state();
    }

    @Test
    void liveBatchesBecomeScoresPerTier() {
        String pod = start("kv@10.0.0.7:8000@llama", false);
        assertEquals("10.0.0.7:8000", pod, "the pod id comes from the llm-d topic");
        engine.publish(1, batch(0, stored("GPU", 2, 3)));
        engine.publish(2, batch(0, stored("CPU_TIER1", 1, 2, 3, 4))); // aliased to cpu
        engine.publish(3, batch(0, stored("GPU", 99), new Batches.Stored(new long[] {5}, "GPU", 1))); // group 1 ignored
        await("batch 3", () -> states.get(INSTANCE, pod).lastSeq() == 3);
        PrefixScores s = view.score(INSTANCE, new long[] {1, 2, 3, 4, 5}, TierWeights.LLM_D);
        assertEquals(1, s.pods().size());
        PrefixScores.PodScore p = s.pods().getFirst();
        assertEquals(4, p.longestPrefix());
        assertEquals(Map.of("gpu", 3, "cpu", 4), p.prefixPerTier());
        assertEquals(3 * 1.0 + 0.8, p.score(), 1e-9);
        assertEquals(PodStates.State.LIVE, state(pod));
        assertFalse(view.holds(INSTANCE, pod, "gpu", 5), "KV-cache group 1 is not applied");
        engine.publish(4, batch(0, removed("GPU", 2)));
        await("batch 4", () -> states.get(INSTANCE, pod).lastSeq() == 4);
        assertEquals(1, view.score(INSTANCE, new long[] {1, 2, 3}, TierWeights.LLM_D).pods().getFirst()
                .prefixPerTier().get("gpu"));
        assertEquals(0, applier.gaps());
    }

    @Test
    void aGapIsFilledByReplayInBothLayouts() {
        for (boolean newer : new boolean[] {true, false}) {
            stopEngine();
            String pod = start("", true);
            assertEquals("127.0.0.1:" + engine.pubPort, pod, "without a topic the pod is the endpoint's host:port");
            engine.newerLayout = newer;
            engine.lose(1, batch(0, stored("GPU", 2)));
            engine.lose(2, batch(0, stored("GPU", 3)));
            engine.publish(3, batch(0, stored("GPU", 4)));
            await("batch 3", () -> states.get(INSTANCE, pod).lastSeq() == 3);
            assertEquals(4, view.score(INSTANCE, new long[] {1, 2, 3, 4}, TierWeights.LLM_D).pods().getFirst()
                    .longestPrefix(), "replayed batches 1 and 2 are applied before 3 (layout newer=" + newer + ")");
            assertEquals(PodStates.State.LIVE, state(pod));
            assertEquals(0, applier.gaps());
            assertTrue(engine.replayRequests >= 1);
        }
    }

    @Test
    void prunedReplayMakesThePodUncertainUntilAllBlocksCleared() {
        String pod = start("", true);
        engine.lose(1, batch(0, stored("GPU", 2)));
        engine.lose(2, batch(0, stored("GPU", 3)));
        engine.prune(2); // batch 1 is gone from the engine's buffer
        engine.publish(3, batch(0, stored("GPU", 4)));
        await("batch 3", () -> states.get(INSTANCE, pod).lastSeq() == 3);
        assertEquals(PodStates.State.UNCERTAIN, state(pod));
        assertEquals(1, applier.gaps());
        assertTrue(view.holds(INSTANCE, pod, "gpu", 3), "what the replay had is applied");
        engine.publish(4, batch(0, new Batches.Cleared(), stored("GPU", 7)));
        await("batch 4", () -> states.get(INSTANCE, pod).lastSeq() == 4);
        assertEquals(PodStates.State.LIVE, state(pod), "AllBlocksCleared is an authoritative point");
        assertFalse(view.holds(INSTANCE, pod, "gpu", 1));
        assertTrue(view.holds(INSTANCE, pod, "gpu", 7));
    }

    @Test
    void aGapWithoutReplayEndpointMakesThePodUncertain() {
        String pod = start("", false);
        engine.lose(1, batch(0, stored("GPU", 2)));
        engine.publish(2, batch(0, stored("GPU", 3)));
        await("batch 2", () -> states.get(INSTANCE, pod).lastSeq() == 2);
        assertEquals(PodStates.State.UNCERTAIN, state(pod));
        assertEquals(0, engine.replayRequests);
    }

    @Test
    void aSequenceDropIsANewEpochThatClearsThePod() {
        String pod = start("", true);
        engine.publish(1, batch(0, stored("GPU", 2)));
        engine.publish(2, batch(0, stored("GPU", 3)));
        await("batch 2", () -> states.get(INSTANCE, pod).lastSeq() == 2);
        engine.buffer.clear(); // the engine restarted: a new buffer, counting from 0
        engine.publish(0, batch(0, stored("GPU", 50)));
        await("the new epoch", () -> view.holds(INSTANCE, pod, "gpu", 50));
        assertFalse(view.holds(INSTANCE, pod, "gpu", 1), "the old epoch's blocks are gone");
        assertFalse(view.holds(INSTANCE, pod, "gpu", 3));
        assertEquals(PodStates.State.LIVE, state(pod));
        assertEquals(1.0, meters.get("kvpool.engine.ingest.resets").counter().count());
    }

    @Test
    void malformedPayloadsAreSkippedAndCounted() {
        String pod = start("", false);
        engine.publish(1, new byte[] {(byte) 0xc1, 1, 2}); // 0xc1 is never valid msgpack
        engine.publish(2, "not msgpack at all".getBytes());
        engine.send(3, new byte[0]);
        engine.publish(4, batch(0, stored("GPU", 2)));
        await("batch 4", () -> states.get(INSTANCE, pod).lastSeq() == 4);
        assertEquals(3, applier.malformed());
        assertTrue(view.holds(INSTANCE, pod, "gpu", 2), "the loop goes on after bad batches");
        // a skipped batch is a hole in what is known: the pod says so
        assertEquals(PodStates.State.UNCERTAIN, state(pod));
    }

    @Test
    void dataParallelRanksAreSeparatePods() {
        String pod = start("kv@pod-b@llama", false);
        engine.publish(0, batch(1, stored("GPU", 10)));
        engine.publish(1, batch(1, stored("GPU", 11)));
        await("rank 1", () -> view.holds(INSTANCE, pod + "/dp1", "gpu", 11));
        assertEquals(PodStates.State.LIVE, state(pod + "/dp1"), "rank 1 has its own sequence");
        assertFalse(view.holds(INSTANCE, pod, "gpu", 10));
    }

    @Test
    void aFirstBatchPastZeroAsksForAReplayFromZero() {
        engine = new FakeEngine("");
        engine.lose(0, batch(0, stored("GPU", 1)));
        engine.lose(1, batch(0, stored("GPU", 2)));
        EngineSource src = new EngineSource("late", INSTANCE, "late-pod", engine.endpoint(), engine.replayEndpoint(),
                "", Map.of());
        sub = new ZmqSubscriber(ctx, src, applier::apply, states, applier,
                new ZmqSubscriber.Settings(REPLAY_TIMEOUT, 100_000, 100_000), replays);
        byte[] b2 = batch(0, stored("GPU", 3));
        engine.buffer.put(2L, b2);
        await("batch 2", () -> {
            engine.send(2, b2);
            return view.holds(INSTANCE, "late-pod", "gpu", 3);
        });
        assertTrue(view.holds(INSTANCE, "late-pod", "gpu", 1), "batches 0 and 1 came by replay");
        assertEquals(PodStates.State.LIVE, state("late-pod"));
    }

    @Test
    void bindModeTakesThePodFromTheTopic() throws Exception {
        int port;
        try (var probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        sub = new ZmqSubscriber(ctx, "bind", INSTANCE, "tcp://127.0.0.1:" + port, "kv@", applier::apply, states,
                applier, new ZmqSubscriber.Settings(REPLAY_TIMEOUT, 100_000, 100_000), replays);
        try (ZContext podCtx = new ZContext()) {
            var pub = podCtx.createSocket(org.zeromq.SocketType.PUB);
            pub.setHandshakeIvl(ZmqSubscriber.HANDSHAKE_IVL_MS); // a connecting JeroMQ socket: see that constant
            pub.connect("tcp://127.0.0.1:" + port); // vLLM connects when its endpoint has no '*'
            byte[] b = batch(0, stored("GPU", 77));
            await("a batch through the bound socket", () -> {
                pub.sendMore("kv@pod-z@llama");
                pub.sendMore(FakeEngine.seq(0));
                pub.send(b);
                return view.holds(INSTANCE, "pod-z", "gpu", 77);
            });
            pub.sendMore("other-topic");
            pub.sendMore(FakeEngine.seq(0));
            pub.send(b);
            pub.sendMore("kv@no-model");
            pub.sendMore(FakeEngine.seq(1));
            pub.send(b);
            pub.sendMore("kv@pod-z@llama");
            pub.sendMore(FakeEngine.seq(1));
            pub.send(batch(0, stored("GPU", 78)));
            await("batch 1", () -> view.holds(INSTANCE, "pod-z", "gpu", 78));
            assertEquals(1, applier.malformed(), "kv@no-model names no pod; other-topic is filtered by the SUB");
            assertEquals(PodStates.State.LIVE, state("pod-z"));
        }
    }
}
