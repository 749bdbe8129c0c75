package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.agent.AgentClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Layer-wise loads over HTTP (NDJSON lines) through the Java client, on an agent with 16 layers, layered. */
@QuarkusTest
@TestProfile(LayerwiseApiTest.Layered.class)
class LayerwiseApiTest {
    static final URI BASE = URI.create("http://127.0.0.1:16390");
    static final ObjectMapper M = new ObjectMapper();

    public static class Layered implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.agent.layers", "16", "kvpool.agent.layout", "layered",
                    "kvpool.agent.data-dir", "target/test-agent-layered",
                    "kvpool.agent.shm.path", "target/test-agent-layered/shm");
        }
    }

    @Test
    void layersArriveInOrderWithTheirBytesInTheBuffer() throws Exception {
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            int bb = c.blockBytes(), lb = bb / 16;
            JsonNode st = c.status();
            assertEquals("layered", st.path("layout").asText());
            assertEquals(16, st.path("layers").asInt());
            assertEquals(lb, st.path("layer_bytes").asInt());
            Random r = new Random(5);
            long[] keys = {71, 72};
            byte[][] data = new byte[2][bb];
            for (int i = 0; i < 2; i++) {
                r.nextBytes(data[i]);
                MemorySegment.copy(data[i], 0, c.block((long) i * bb), ValueLayout.JAVA_BYTE, 0, bb);
            }
            assertArrayEquals(new boolean[] {true, true}, c.save(keys, new long[] {0, bb}));
            long[] to = {4L * bb, 5L * bb, 6L * bb};
            try (AgentClient.LayerwiseLoad l = c.loadLayerwise(new long[] {72, 7777, 71}, to)) {
                for (int layer = 0; layer < 16; layer++) {
                    assertArrayEquals(new int[] {1}, l.awaitLayer(layer), "layer " + layer);
                    // in place the moment the line is read
                    assertArrayEquals(java.util.Arrays.copyOfRange(data[1], layer * lb, (layer + 1) * lb),
                            c.sharedMemory().asSlice(to[0] + (long) layer * lb, lb).toArray(ValueLayout.JAVA_BYTE));
                    assertArrayEquals(java.util.Arrays.copyOfRange(data[0], layer * lb, (layer + 1) * lb),
                            c.sharedMemory().asSlice(to[2] + (long) layer * lb, lb).toArray(ValueLayout.JAVA_BYTE));
                }
                AgentClient.Loaded res = l.result();
                assertArrayEquals(new boolean[] {true, false, true}, res.found());
                assertArrayEquals(to, res.offsets());
                assertEquals("host", res.tiers()[0]);
                assertThrows(IllegalStateException.class, () -> l.awaitLayer(16));
            }
        }
    }

    @Test
    void theAnswerIsOneFlushedJsonLinePerLayerThenTheResult() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(BASE.resolve("/v1/load"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":[123456],\"offsets\":[0],\"layerwise\":true}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("application/x-ndjson", r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        List<String> lines = r.body().lines().toList();
        assertEquals(17, lines.size(), r.body());
        for (int i = 0; i < 16; i++) {
            assertEquals("{\"layer\":" + i + ",\"missing\":[0]}", lines.get(i));
        }
        JsonNode last = M.readTree(lines.get(16));
        assertTrue(last.path("done").asBoolean());
        assertEquals(0, last.path("hits").asInt());
        assertEquals("[false]", last.path("found").toString());
        // layerwise false is a normal load
        r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(BASE.resolve("/v1/load"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":[123456],\"offsets\":[0],\"layerwise\":false}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("{\"found\":[false],\"offsets\":[0],\"tiers\":[null],\"hits\":0}", r.body());
    }

    @Test
    void badLayerwiseRequestsAre400BeforeAnythingStreams() throws Exception {
        HttpClient h = HttpClient.newHttpClient();
        Map<String, String> bodies = new java.util.LinkedHashMap<>();
        bodies.put("/v1/load {\"keys\":[1],\"offsets\":[0],\"layerwise\":\"yes\"}", "layerwise: ");
        bodies.put("/v1/load {\"keys\":[1],\"offsets\":[0],\"layerwise\":1}", "layerwise: ");
        bodies.put("/v1/load {\"keys\":[1],\"offsets\":[123],\"layerwise\":true}", "offsets[0]: ");
        bodies.put("/v1/load {\"keys\":[1,2],\"offsets\":[0],\"layerwise\":true}", "offsets: load has 1 offsets for 2");
        bodies.put("/v1/load {\"keys\":[],\"layerwise\":true}", "keys: ");
        bodies.put("/v1/load {\"keys\":[1],\"offsets\":[-65536],\"layerwise\":true}", "offsets[0]: ");
        bodies.put("/v1/save {\"keys\":[1],\"offsets\":[0],\"layerwise\":true}", "layerwise: not taken by save");
        bodies.put("/v1/query {\"keys\":[1],\"layerwise\":true}", "layerwise: not taken by query");
        for (var b : bodies.entrySet()) {
            String[] routeAndBody = b.getKey().split(" ", 2);
            HttpResponse<String> r = h.send(HttpRequest.newBuilder(BASE.resolve(routeAndBody[0]))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(routeAndBody[1])).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, r.statusCode(), b.getKey() + " -> " + r.body());
            assertTrue(r.body().startsWith("{\"error\":\"" + b.getValue().replace("\"", "\\\"")),
                    b.getKey() + " -> " + r.body());
        }
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.loadLayerwise(new long[] {1}, new long[] {5}));
            assertTrue(e.getMessage().contains("400"), e.getMessage());
        }
    }
}
