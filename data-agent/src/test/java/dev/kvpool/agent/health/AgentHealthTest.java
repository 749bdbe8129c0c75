package dev.kvpool.agent.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/** A healthy agent (the %test configuration): every check UP on the management port, with what it looked at. */
@QuarkusTest
class AgentHealthTest {
    @Test
    void upWithTiersDevicesAndTheSegment() throws Exception {
        Health.Answer live = Health.get("/live");
        assertEquals(200, live.status(), live.toString());
        assertEquals("UP", live.body().path("status").asText());
        assertEquals("kvpool-agent-live", live.body().path("checks").path(0).path("name").asText());
        assertEquals("host,nvme", live.data().path("tiers").asText());
        assertEquals("host0,host1,nvme0", live.data().path("devices").asText());
        assertEquals("none", live.data().path("failed_devices").asText());
        assertEquals("off", live.data().path("events").asText());
        assertFalse(live.data().has("reason"));

        Health.Answer ready = Health.get("/ready");
        assertEquals(200, ready.status(), ready.toString());
        assertEquals("http://127.0.0.1:16390", ready.data().path("engine_api").asText());
        assertTrue(ready.data().path("shm").asText().endsWith("target/test-agent/shm"), ready.toString());
        assertEquals(16L << 20, ready.data().path("shm_bytes").asLong());
        assertTrue(ready.data().has("nvme_kept_at_start"), ready.toString());

        Health.Answer started = Health.get("/started");
        assertEquals(200, started.status(), started.toString());
        assertEquals("started", started.data().path("phase").asText());
        assertTrue(started.data().path("started_in_ms").asLong() >= 0);

        Health.Answer all = Health.get("");
        assertEquals(200, all.status(), all.toString());
        assertEquals(3, all.body().path("checks").size(), all.toString());
    }
}
