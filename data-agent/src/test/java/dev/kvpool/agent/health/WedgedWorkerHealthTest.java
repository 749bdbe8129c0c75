package dev.kvpool.agent.health;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.api.AgentService;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A device worker that makes no progress: the NVMe device throttled to 10 KB/s, so the write-behind of one 64-KiB
 * block holds its worker for ~6.5 s with the liveness limit at 1 s. Liveness and readiness go DOWN (503) naming the
 * device and what waits on it, and come back UP once the write completes.
 */
@QuarkusTest
@TestProfile(WedgedWorkerHealthTest.Slow.class)
class WedgedWorkerHealthTest {
    public static class Slow implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.agent.nvme.throttle-mbps", "0.01", "kvpool.agent.nvme.bandwidth-mbps", "100",
                    "kvpool.agent.nvme.keep", "false", "kvpool.agent.health.stall-after", "1s",
                    "kvpool.agent.data-dir", "target/test-agent-wedged");
        }
    }

    @Inject
    AgentService agent;

    @Test
    void aWorkerWithoutProgressIsDownWithTheReason() throws Exception {
        assertEquals(200, Health.get("/live").status());
        MemorySegment src = agent.shm().slice(0, agent.store().blockBytes());
        src.fill((byte) 7);
        assertArrayEquals(new boolean[] {true}, agent.store().save(new long[] {5001}, new MemorySegment[] {src}, null));
        // the save is in host memory; its NVMe write-behind now holds the worker
        Health.Answer live = Health.await("/live", 5_000, a -> a.status() == 503);
        assertEquals("DOWN", live.body().path("status").asText());
        String reason = live.data().path("reason").asText();
        assertTrue(reason.startsWith("nvme device nvme0: no progress on due work for "), reason);
        assertTrue(reason.contains("1 request(s) on the device") && reason.contains("limit 1.0 s, kvpool.agent.health.stall-after"), reason);
        assertEquals("none", live.data().path("failed_devices").asText()); // slow, not failed
        Health.Answer ready = Health.get("/ready");
        assertEquals(503, ready.status(), ready.toString());
        assertTrue(ready.data().path("reason").asText().contains("nvme device nvme0: no progress"), ready.toString());
        assertEquals(200, Health.get("/started").status()); // start-up is long done
        // the write lands: progress, UP again
        Health.await("/live", 15_000, a -> a.status() == 200);
        assertEquals(200, Health.get("/ready").status());
    }
}
