package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.agent.AgentClient;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
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

/** The engine API over HTTP + shared memory, through the Java client in api/. */
@QuarkusTest
class AgentResourceTest {
    static final URI BASE = URI.create("http://127.0.0.1:16390");

    @Inject
    AgentService agent;

    @Test
    void saveLoadQueryThroughSharedMemory() throws Exception {
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            int bb = c.blockBytes();
            assertEquals(65536, bb);
            Random r = new Random(3);
            long[] keys = {11, 12, 13};
            long[] offs = {0, bb, 2L * bb};
            byte[][] data = new byte[3][bb];
            for (int i = 0; i < 3; i++) {
                r.nextBytes(data[i]);
                MemorySegment.copy(data[i], 0, c.block(offs[i]), ValueLayout.JAVA_BYTE, 0, bb);
            }
            assertArrayEquals(new boolean[] {true, true, true}, c.save(keys, offs, 10L));
            assertEquals(List.of("host"), c.query(new long[] {12}).get(0).subList(0, 1));
            // load into the engine's area at other offsets
            AgentClient.Loaded l = c.load(new long[] {13, 99, 11}, new long[] {8L * bb, 9L * bb, 10L * bb});
            assertArrayEquals(new boolean[] {true, false, true}, l.found());
            assertEquals("host", l.tiers()[0]);
            assertArrayEquals(data[2], c.block(8L * bb).toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(data[0], c.block(10L * bb).toArray(ValueLayout.JAVA_BYTE));
            // load into the agent's half
            AgentClient.Loaded l2 = c.load(new long[] {12}, null);
            assertTrue(l2.offsets()[0] >= c.sharedMemory().byteSize() / 2);
            assertArrayEquals(data[1], c.block(l2.offsets()[0]).toArray(ValueLayout.JAVA_BYTE));
            // the write-behind reaches the NVMe tier
            agent.store().awaitWriteBehind();
            assertTrue(c.query(new long[] {11}).get(0).contains("nvme"));
            assertTrue(c.status().path("tiers").size() >= 2);
            boolean nvmeKeeps = false;
            for (var t : c.status().path("tiers")) {
                if (t.path("name").asText().equals("nvme")) {
                    nvmeKeeps = t.path("devices").get(0).has("kept_at_start"); // nvme.keep is on by default
                }
            }
            assertTrue(nvmeKeeps, "the NVMe device reports what it kept at start-up");
            // the GPU tier is off here: no NVMe → GPU path, and status says why
            assertEquals("none", c.status().path("gds").path("mode").asText());
            assertTrue(c.status().path("gds").path("reason").asText().contains("GPU tier is off"),
                    c.status().path("gds").toString());
            assertTrue(c.remove(new long[] {11}, false)[0]);
            assertEquals(List.of(), c.query(new long[] {11}).get(0));
            assertFalse(c.load(new long[] {11}, new long[] {0}).found()[0]);
        }
    }

    @Test
    void badInputIs400WithAMessage() throws Exception {
        HttpClient h = HttpClient.newHttpClient();
        HttpResponse<String> r = h.send(HttpRequest.newBuilder(BASE.resolve("/v1/save"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":[1],\"offsets\":[123]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("offsets[0]"), r.body());
        r = h.send(HttpRequest.newBuilder(BASE.resolve("/v1/load")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("keys"), r.body());
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            assertThrows(IllegalArgumentException.class, () -> c.save(new long[] {1, 2}, new long[] {0}));
        }
        // more blocks than the agent's half of the segment holds, with no offsets given
        StringBuilder many = new StringBuilder("{\"keys\":[0");
        for (int i = 1; i < 4096; i++) {
            many.append(',').append(i);
        }
        r = h.send(HttpRequest.newBuilder(BASE.resolve("/v1/load")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(many + "]}")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().startsWith("{\"error\":\"load: 4096 blocks do not fit"), r.body());
        // bodies Jackson cannot take: Quarkus alone answered an empty 400, a 500 for a string where the key array
        // belongs, and read key 1.5 as block 1
        Map<String, String> bodies = new java.util.LinkedHashMap<>();
        bodies.put("{\"keys\":\"x\"}", "keys: expected an array of integers, got the string \"x\"");
        bodies.put("{\"keys\":[1.5],\"offsets\":[0]}", "keys[0]: expected an integer, got 1.5");
        bodies.put("{\"keys\":[1,null],\"offsets\":[0,0]}", "keys[1]: must not be null");
        bodies.put("{\"keys\":[1],\"ofsets\":[0]}", "ofsets: unknown field; known fields: global, keys, layerwise, offsets, parent");
        bodies.put("{\"keys\":[1], ", "malformed JSON at line 1, column 14");
        for (var b : bodies.entrySet()) {
            r = h.send(HttpRequest.newBuilder(BASE.resolve("/v1/save")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(b.getKey())).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(400, r.statusCode(), b.getKey() + " -> " + r.body());
            assertTrue(r.body().startsWith("{\"error\":\"" + b.getValue().replace("\"", "\\\"")), b.getKey() + " -> " + r.body());
        }
    }

    @Test
    void portsWithoutCredentialsListenOnlyOnThisHost() throws Exception {
        java.net.InetAddress external = null; // an address of this machine that is not loopback
        for (var nif : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
            for (var addr : java.util.Collections.list(nif.getInetAddresses())) {
                if (addr instanceof java.net.Inet4Address && !addr.isLoopbackAddress()) {
                    external = addr;
                }
            }
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(external != null, "no non-loopback IPv4 address here");
        java.net.InetAddress ext = external;
        // neither the engine API nor the metrics take credentials: both on loopback unless configured otherwise
        for (int port : new int[] {16390, 16389}) {
            try (java.net.Socket s = new java.net.Socket()) {
                assertThrows(java.net.ConnectException.class, () -> s.connect(new java.net.InetSocketAddress(ext, port), 2000),
                        "port " + port + " is not reachable from the network");
            }
            try (java.net.Socket s = new java.net.Socket()) {
                s.connect(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), 2000);
            }
        }
    }

    @Test
    void aLayerwiseLoadOfOneLayerIsOneLineThenTheResult() throws Exception {
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            assertEquals(1, c.status().path("layers").asInt());
            assertEquals("contiguous", c.status().path("layout").asText());
            MemorySegment.copy(new byte[] {1, 2, 3}, 0, c.block(0), ValueLayout.JAVA_BYTE, 0, 3);
            assertTrue(c.save(new long[] {31}, new long[] {0})[0]);
        }
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(BASE.resolve("/v1/load"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                        "{\"keys\":[31,32],\"offsets\":[65536,131072],\"layerwise\":true}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(List.of("{\"layer\":0,\"missing\":[1]}", "{\"done\":true,\"found\":[true,false],"
                + "\"offsets\":[65536,131072],\"tiers\":[\"host\",null],\"hits\":1}"), r.body().lines().toList());
    }

    @Test
    void metricsAreExported() throws Exception {
        HttpClient c = HttpClient.newHttpClient();
        HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:16389/q/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), "metrics on the management port");
        assertEquals(404, c.send(HttpRequest.newBuilder(BASE.resolve("/q/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode(), "not on the engine API's port");
        assertTrue(r.body().contains("kvpool_agent_saved_blocks_total"));
        assertTrue(r.body().contains("kvpool_agent_device_read_bytes_total"));
    }
}
