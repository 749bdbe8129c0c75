package dev.kvpool.agent.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.api.AgentService;
import dev.kvpool.agent.store.BlockStore;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A tier that loses its only device, for real: the NVMe slot file is cut to nothing under the running agent, so the
 * reads of blocks that only NVMe holds come back short, and after 16 in a row the device is taken out of use.
 * Readiness is DOWN naming the tier; liveness stays UP (a restart would not mend the disk) and reports the device.
 */
@QuarkusTest
@TestProfile(FailedTierHealthTest.SmallHost.class)
class FailedTierHealthTest {
    static final Path DIR = Path.of("target/test-agent-failed-tier");

    public static class SmallHost implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // 2 x 1 MiB of host memory: 32 blocks of 64 KiB; the first blocks saved live on NVMe only
            return Map.of("kvpool.agent.host.region-mib", "1", "kvpool.agent.nvme.keep", "false",
                    "kvpool.agent.data-dir", DIR.toString());
        }
    }

    @Inject
    AgentService agent;

    @Test
    void aTierWithEveryDeviceOutOfUseIsNotReady() throws Exception {
        BlockStore s = agent.store();
        int bb = s.blockBytes();
        for (int k = 0; k < 96; k++) {
            MemorySegment src = agent.shm().slice(0, bb);
            src.fill((byte) k);
            s.save(new long[] {7000 + k}, new MemorySegment[] {src}, null);
            s.awaitWriteBehind();
        }
        List<Long> nvmeOnly = new ArrayList<>();
        List<List<String>> where = s.query(java.util.stream.LongStream.range(7000, 7096).toArray());
        for (int k = 0; k < 96; k++) {
            if (where.get(k).equals(List.of("nvme"))) {
                nvmeOnly.add(7000L + k);
            }
        }
        assertTrue(nvmeOnly.size() >= 16, "blocks on NVMe only: " + where);
        assertEquals(200, Health.get("/ready").status());
        try (FileChannel ch = FileChannel.open(DIR.resolve("nvme0/kvpool-slots.dat"), StandardOpenOption.WRITE)) {
            ch.truncate(0); // every read from now on comes back short
        }
        long[] keys = nvmeOnly.stream().mapToLong(Long::longValue).toArray();
        MemorySegment[] dst = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            dst[i] = agent.shm().slice((long) (i % 64) * bb, bb);
        }
        BlockStore.LoadResult r = s.load(keys, dst);
        assertEquals(0, r.hits(), "a short read is a miss, never bytes");

        Health.Answer ready = Health.get("/ready");
        assertEquals(503, ready.status(), ready.toString());
        assertEquals("DOWN", ready.body().path("status").asText());
        assertTrue(ready.data().path("reason").asText().startsWith("tier nvme: every device out of use after failed"
                + " I/O (nvme0)"), ready.toString());
        assertEquals("nvme0", ready.data().path("failed_devices").asText());
        Health.Answer live = Health.get("/live");
        assertEquals(200, live.status(), live.toString());
        assertEquals("nvme0", live.data().path("failed_devices").asText());
        assertFalse(live.data().has("reason"));
    }
}
