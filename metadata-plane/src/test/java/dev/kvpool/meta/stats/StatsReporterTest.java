package dev.kvpool.meta.stats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.meta.reclaim.Reclaimer;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The per-instance counters and the stats report built from them: deltas, carry-over, refusals, bounds. */
class StatsReporterTest {
    private static final ObjectMapper M = new ObjectMapper();
    static final Instant T0 = Instant.parse("2026-11-27T10:00:00Z");
    static final StatsReporter.ReplicaInfo INFO = new StatsReporter.ReplicaInfo("meta-host-6382", "http://host:6382",
            true, "embedded", "0.1.0", Instant.parse("2026-11-27T09:00:00Z"), 3, 12345);

    /** A control plane that records the bodies and answers from a script (200 when it runs out). */
    static final class FakeControlPlane implements StatsReporter.Poster {
        final List<JsonNode> bodies = new ArrayList<>();
        final Deque<Object> answers = new ArrayDeque<>();

        @Override
        public ControlPlaneClient.Reply post(String path, JsonNode body) throws IOException {
            assertEquals("/api/v1/stats", path);
            bodies.add(body.deepCopy());
            Object a = answers.poll();
            if (a instanceof IOException e) {
                throw e;
            }
            if (a instanceof ControlPlaneClient.Reply r) {
                return r;
            }
            return new ControlPlaneClient.Reply(202, M.createObjectNode().put("accepted", 1));
        }

        JsonNode last() {
            return bodies.getLast();
        }
    }

    static ControlPlaneClient.Reply refused(String field) {
        return new ControlPlaneClient.Reply(400, M.createObjectNode().put("status", 400).put("field", field)
                .put("detail", field + " is wrong"));
    }

    final StatsCounters counters = new StatsCounters();
    final FakeControlPlane cp = new FakeControlPlane();
    final Set<String> registered = new HashSet<>(Set.of("i1", "i2", "i3"));
    final StatsReporter reporter = new StatsReporter(counters, cp, () -> INFO, registered::contains,
            Duration.ofSeconds(30), Duration.ofMinutes(10));

    static JsonNode entry(JsonNode body, String instance) {
        for (JsonNode n : body.path("instances")) {
            if (n.path("instance").asText().equals(instance)) {
                return n;
            }
        }
        return null;
    }

    @Test
    void countersAccumulatePerInstance() {
        counters.prefixQuery("i1", "g", 10, 4);
        counters.prefixQuery("i1", "g", 6, 6);
        counters.written("i1", "g", 7);
        counters.written("i1", "g", 0);
        counters.evicted("i1", "g", Reclaimer.Reason.WATER_LEVEL, 3);
        counters.evicted("i1", "g", Reclaimer.Reason.TTL, 2);
        counters.evicted("i1", "g", Reclaimer.Reason.TTL, 1);
        counters.prefixQuery("i2", "h", 5, 0);
        var s = counters.snapshot();
        assertEquals(new StatsCounters.Snapshot("g", 2, 16, 10, 7, new long[] {3, 0, 0, 3}), s.get("i1"));
        assertEquals(new StatsCounters.Snapshot("h", 1, 5, 0, 0, new long[] {0, 0, 0, 0}), s.get("i2"));
        assertEquals(List.of("water_level", "type_water_level", "key_count", "ttl"), StatsCounters.REASONS);
    }

    @Test
    void theReportCarriesTheReplicaAndTheDeltasSinceTheLastAcceptedOne() throws Exception {
        counters.prefixQuery("i1", "g", 100, 40);
        counters.written("i1", "g", 60);
        counters.evicted("i1", "g", Reclaimer.Reason.WATER_LEVEL, 5);
        counters.prefixQuery("i2", "g", 10, 10);
        reporter.reportOnce(T0);
        assertEquals(M.readTree("""
                {"replica": {"id": "meta-host-6382", "url": "http://host:6382", "leader": true, "store": "embedded",
                             "version": "0.1.0", "startedAt": "2026-11-27T09:00:00Z", "instances": 3, "keys": 12345,
                             "periodSeconds": 30},
                 "intervalEnd": "2026-11-27T10:00:00Z",
                 "instances": [{"instance": "i1", "group": "g", "queries": 1, "queriedBlocks": 100, "hitBlocks": 40,
                                "writtenBlocks": 60, "evictedBlocks": {"water_level": 5}},
                               {"instance": "i2", "group": "g", "queries": 1, "queriedBlocks": 10, "hitBlocks": 10,
                                "writtenBlocks": 0, "evictedBlocks": {}}]}"""), reparsed(sorted(cp.last())));

        // accepted: the next report has only what came since, and idle instances are left out
        counters.prefixQuery("i1", "g", 20, 5);
        reporter.reportOnce(T0.plusSeconds(30));
        JsonNode b = cp.last();
        assertEquals(1, b.path("instances").size());
        assertEquals(M.readTree("""
                {"instance": "i1", "group": "g", "queries": 1, "queriedBlocks": 20, "hitBlocks": 5, "writtenBlocks": 0,
                 "evictedBlocks": {}}"""), reparsed(entry(b, "i1")));
        assertEquals("2026-11-27T10:00:30Z", b.path("intervalEnd").asText());

        // nothing new: a report with no instances still goes (it is the replica's heartbeat)
        reporter.reportOnce(T0.plusSeconds(60));
        assertEquals(0, cp.last().path("instances").size());
        assertEquals(3, cp.bodies.size());
    }

    @Test
    void aFailedOrRefusedReportLeavesItsCountsForTheNext() throws Exception {
        counters.prefixQuery("i1", "g", 10, 1);
        cp.answers.add(new IOException("connection refused"));
        reporter.reportOnce(T0);
        counters.prefixQuery("i1", "g", 10, 2);
        cp.answers.add(new ControlPlaneClient.Reply(503, M.createObjectNode().put("detail", "database down")));
        reporter.reportOnce(T0.plusSeconds(30));
        counters.prefixQuery("i1", "g", 10, 3);
        cp.answers.add(new ControlPlaneClient.Reply(401, M.createObjectNode().put("detail", "expired")));
        reporter.reportOnce(T0.plusSeconds(60));
        reporter.reportOnce(T0.plusSeconds(90));
        JsonNode e = entry(cp.last(), "i1");
        assertEquals(3, e.path("queries").asLong());
        assertEquals(30, e.path("queriedBlocks").asLong());
        assertEquals(6, e.path("hitBlocks").asLong());
        reporter.reportOnce(T0.plusSeconds(120));
        assertEquals(0, cp.last().path("instances").size(), "accepted once, not again");
    }

    @Test
    void countsNotAcceptedForLongerThanTheCarryAreDropped() {
        counters.prefixQuery("i1", "g", 10, 1);
        for (int i = 0; i <= 21; i++) { // ten minutes and a half of failures
            cp.answers.add(new IOException("down"));
            reporter.reportOnce(T0.plusSeconds(30L * i));
        }
        counters.prefixQuery("i1", "g", 7, 7);
        reporter.reportOnce(T0.plusSeconds(30L * 22));
        JsonNode e = entry(cp.last(), "i1");
        assertEquals(1, e.path("queries").asLong(), "only what came after the drop");
        assertEquals(7, e.path("queriedBlocks").asLong());
    }

    @Test
    void anEntryTheControlPlaneRefusesIsDroppedAndTheRestSentAgain() {
        counters.prefixQuery("i1", "gone", 10, 1);
        counters.prefixQuery("i2", "g", 10, 2);
        // the entries go in the snapshot's order: refuse whichever one is in group 'gone'
        String first = reporter.prepare(counters.snapshot(), INFO, T0).body().path("instances").get(0)
                .path("instance").asText(); // prepare has no side effect
        int idx = first.equals("i1") ? 0 : 1;
        cp.answers.add(refused("instances[" + idx + "].group"));
        reporter.reportOnce(T0);
        assertEquals(2, cp.bodies.size(), "sent again at once");
        assertNull(entry(cp.last(), "i1"));
        assertEquals(2, entry(cp.last(), "i2").path("hitBlocks").asLong());
        reporter.reportOnce(T0.plusSeconds(30));
        assertEquals(0, cp.last().path("instances").size(), "the refused entry is not sent again");
        // a refusal that names no entry keeps everything
        counters.prefixQuery("i2", "g", 1, 1);
        cp.answers.add(refused("replica.url"));
        reporter.reportOnce(T0.plusSeconds(60));
        reporter.reportOnce(T0.plusSeconds(90));
        assertEquals(1, entry(cp.last(), "i2").path("queries").asLong());
    }

    @Test
    void aRemovedInstanceIsForgottenOnceItsCountsAreReported() {
        counters.prefixQuery("i3", "g", 4, 4);
        registered.remove("i3");
        reporter.reportOnce(T0);
        assertEquals(4, entry(cp.last(), "i3").path("queriedBlocks").asLong());
        assertFalse(counters.snapshot().containsKey("i3"));
        assertNull(reporter.accepted("i3"));
    }

    @Test
    void concurrentCountingLosesNothing() throws Exception {
        int threads = 4, calls = 50_000;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < calls; i++) {
                    counters.prefixQuery("i1", "g", 3, i % 4 == 0 ? 3 : 1);
                }
            }));
        }
        go.countDown();
        long reportedQueries = 0, reportedQueried = 0, reportedHits = 0;
        for (int r = 0; r < 20; r++) {
            reporter.reportOnce(T0.plusSeconds(r));
        }
        for (Thread t : ts) {
            t.join();
        }
        reporter.reportOnce(T0.plusSeconds(100));
        for (JsonNode b : cp.bodies) {
            JsonNode e = entry(b, "i1");
            if (e != null) {
                assertTrue(e.path("hitBlocks").asLong() <= e.path("queriedBlocks").asLong(), e.toString());
                reportedQueries += e.path("queries").asLong();
                reportedQueried += e.path("queriedBlocks").asLong();
                reportedHits += e.path("hitBlocks").asLong();
            }
        }
        long n = (long) threads * calls;
        assertEquals(n, reportedQueries);
        assertEquals(3 * n, reportedQueried);
        assertEquals(threads * (calls / 4 * 3 + (calls - calls / 4)), reportedHits);
    }

    @Test
    void entryIndexFromTheRefusedField() {
        assertEquals(3, StatsReporter.entryIndex("instances[3].group"));
        assertEquals(0, StatsReporter.entryIndex("instances[0]"));
        assertNull(StatsReporter.entryIndex("replica.id"));
        assertNull(StatsReporter.entryIndex("instances"));
    }

    /** As read back from its text (numbers typed as the parser types them, as in the expected trees). */
    static JsonNode reparsed(JsonNode n) {
        try {
            return M.readTree(n.toString());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The body with its instances sorted by name (the snapshot's order is a hash map's). */
    static JsonNode sorted(JsonNode body) {
        var copy = body.deepCopy();
        List<JsonNode> list = new ArrayList<>();
        copy.path("instances").forEach(list::add);
        list.sort(java.util.Comparator.comparing(n -> n.path("instance").asText()));
        var arr = ((com.fasterxml.jackson.databind.node.ObjectNode) copy).putArray("instances");
        list.forEach(arr::add);
        return copy;
    }
}
