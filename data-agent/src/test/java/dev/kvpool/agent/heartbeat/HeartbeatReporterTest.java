package dev.kvpool.agent.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.testing.Await;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The heartbeat body, its bounds, and the backoff while the control plane refuses heartbeats or is out of reach. */
class HeartbeatReporterTest {
    private static final ObjectMapper M = new ObjectMapper();
    static final HeartbeatReporter.Info INFO = new HeartbeatReporter.Info("node1-6390", "http://node1:6390", "0.1.0",
            Instant.parse("2026-11-27T09:00:00Z"));

    /** A control plane that records the bodies and answers from a script (204 when it runs out). */
    static final class FakeControlPlane implements HeartbeatReporter.Poster {
        final List<JsonNode> bodies = new ArrayList<>();
        final Deque<Object> answers = new ArrayDeque<>();
        final CountDownLatch posted = new CountDownLatch(2);

        @Override
        public synchronized ControlPlaneClient.Reply post(String path, JsonNode body) throws IOException {
            assertEquals("/api/v1/services/heartbeat", path);
            bodies.add(body.deepCopy());
            posted.countDown();
            Object a = answers.poll();
            if (a instanceof IOException e) {
                throw e;
            }
            if (a instanceof RuntimeException e) {
                throw e;
            }
            if (a instanceof ControlPlaneClient.Reply r) {
                return r;
            }
            return new ControlPlaneClient.Reply(204, M.missingNode());
        }
    }

    List<HeartbeatReporter.TierUsage> usage = List.of(
            new HeartbeatReporter.TierUsage("host", 256L << 20, 3L << 18, 3),
            new HeartbeatReporter.TierUsage("nvme", 1L << 30, 0, 0),
            new HeartbeatReporter.TierUsage("pool", null, 5L << 18, 5));

    @Test
    void theBodyCarriesTheAgentAndEachTier() throws Exception {
        var r = new HeartbeatReporter((p, b) -> null, INFO, () -> usage, Duration.ofSeconds(10));
        JsonNode b = r.body(usage);
        assertEquals(M.readTree("""
                {"kind": "agent", "id": "node1-6390", "url": "http://node1:6390", "version": "0.1.0",
                 "startedAt": "2026-11-27T09:00:00Z", "periodSeconds": 10,
                 "tiers": {"host": {"capacityBytes": 268435456, "usedBytes": 786432, "blocks": 3},
                           "nvme": {"capacityBytes": 1073741824, "usedBytes": 0, "blocks": 0},
                           "pool": {"usedBytes": 1310720, "blocks": 5}}}"""), M.readTree(b.toString()));
        // optional fields stay out when unknown
        var bare = new HeartbeatReporter((p, x) -> null, new HeartbeatReporter.Info("n-1", null, null, null),
                List::of, Duration.ofSeconds(30)).body(List.of());
        assertEquals(M.readTree("{\"kind\":\"agent\",\"id\":\"n-1\",\"periodSeconds\":30,\"tiers\":{}}"),
                M.readTree(bare.toString()));
    }

    @Test
    void theBodyStaysWithinTheControlPlanesBounds() {
        List<HeartbeatReporter.TierUsage> many = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            many.add(new HeartbeatReporter.TierUsage("t" + i, 10L, 20, -1));
        }
        many.set(0, new HeartbeatReporter.TierUsage("t0", Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE));
        var r = new HeartbeatReporter((p, b) -> null, INFO, () -> many, Duration.ofDays(3));
        JsonNode b = r.body(many);
        assertEquals(16, b.path("tiers").size(), "at most 16 tiers");
        assertEquals(1L << 53, b.path("tiers").path("t0").path("capacityBytes").asLong());
        assertEquals(1L << 53, b.path("tiers").path("t0").path("blocks").asLong());
        assertEquals(10, b.path("tiers").path("t1").path("usedBytes").asLong(), "used never above capacity");
        assertEquals(0, b.path("tiers").path("t1").path("blocks").asLong(), "never negative");
        assertEquals(86_400, b.path("periodSeconds").asInt(), "the control plane's largest period");
        assertEquals(1, new HeartbeatReporter((p, x) -> null, INFO, List::of, Duration.ofMillis(10)).body(List.of())
                .path("periodSeconds").asInt(), "at least one second");
    }

    @Test
    void failuresBackOffUpToTheBoundAndOneSuccessResets() {
        FakeControlPlane cp = new FakeControlPlane();
        var r = new HeartbeatReporter(cp, INFO, () -> usage, Duration.ofSeconds(10));
        assertTrue(r.beatOnce());
        assertEquals(Duration.ofSeconds(10), r.nextDelay());
        cp.answers.add(new ConnectException("connection refused"));
        cp.answers.add(new ControlPlaneClient.Reply(503, M.createObjectNode().put("detail", "starting")));
        cp.answers.add(new ControlPlaneClient.Reply(401, M.createObjectNode().put("detail", "expired")));
        cp.answers.add(new IllegalStateException("bug"));
        assertFalse(r.beatOnce());
        assertEquals(Duration.ofSeconds(20), r.nextDelay());
        assertFalse(r.beatOnce());
        assertEquals(Duration.ofSeconds(40), r.nextDelay());
        assertFalse(r.beatOnce());
        assertEquals(Duration.ofSeconds(80), r.nextDelay());
        assertFalse(r.beatOnce(), "an unexpected exception is a failed heartbeat, not the end of them");
        assertEquals(4, r.failures());
        for (int i = 0; i < 30; i++) {
            cp.answers.add(new ConnectException("connection refused"));
            r.beatOnce();
        }
        assertEquals(HeartbeatReporter.MAX_BACKOFF, r.nextDelay(), "bounded");
        assertTrue(r.beatOnce());
        assertEquals(0, r.failures());
        assertEquals(Duration.ofSeconds(10), r.nextDelay());
        // a period longer than the bound is never shortened
        var slow = new HeartbeatReporter(cp, INFO, () -> usage, Duration.ofMinutes(10));
        cp.answers.add(new ConnectException("connection refused"));
        slow.beatOnce();
        assertEquals(Duration.ofMinutes(10), slow.nextDelay());
    }

    @Test
    void theTimerPostsOnItsOwnDaemonThreadAndStopsOnClose() throws Exception {
        FakeControlPlane cp = new FakeControlPlane();
        List<Thread> threads = new ArrayList<>();
        var r = new HeartbeatReporter(cp, INFO, () -> {
            synchronized (threads) {
                threads.add(Thread.currentThread());
            }
            return usage;
        }, Duration.ofSeconds(1)).start();
        try {
            assertTrue(cp.posted.await(10, TimeUnit.SECONDS), "a heartbeat at once, the next one a period later");
        } finally {
            r.close();
        }
        Thread timer;
        synchronized (threads) {
            timer = threads.getFirst();
            assertEquals("kvpool-agent-heartbeat", timer.getName());
            assertTrue(timer.isDaemon());
        }
        int n = cp.bodies.size();
        // the timer's thread ends: no later heartbeat can be sent (a leftover timer would keep it waiting)
        Await.until("the heartbeat thread ends on close", Duration.ofSeconds(10), () -> !timer.isAlive());
        assertEquals(n, cp.bodies.size(), "no heartbeat after close");
        synchronized (threads) {
            assertTrue(threads.stream().allMatch(t -> t == timer), "one thread posted: " + threads);
        }
    }
}
