package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.store.AgentSetup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Names the agent takes from its configuration (agent id, instance id and group, spec) become file names, Kafka
 * keys, the NVMe blocks' key space and the instance directory the pool's paths must lie in: each is checked
 * against the one identifier rule at start-up, before anything is created, and a bad one stops the start with a
 * message naming the setting.
 */
class AgentIdentifiersTest {
    @TempDir
    Path dir;

    static final String[] BAD = {"../x", "a/b", "..", ".hidden", "-rf", "", "x\u0000y", "a b", "x\ny", "é",
            "a".repeat(129)};

    @Test
    void badNamesInTheSettingsStopTheStartNamingTheSetting() {
        NameSettings cases = new NameSettings();
        for (String bad : BAD) {
            for (var c : cases.all) {
                Path home = dir.resolve("h" + Integer.toHexString(bad.hashCode()) + c.key.length());
                AgentSetup.Settings s = c.with.apply(AgentSetup.Settings.defaults(home)
                        .withNvme(List.of(home.resolve("nvme0")), 8L << 20), bad);
                var e = assertThrows(IllegalArgumentException.class, () -> AgentSetup.build(s, EventSink.NONE),
                        c.key + " = " + bad);
                assertTrue(e.getMessage().startsWith(c.key), e.getMessage());
                assertFalse(e.getMessage().chars().anyMatch(ch -> ch < 0x20), "no control character in: " + e.getMessage());
                assertFalse(Files.exists(home), "nothing created before the check: " + c.key + " = " + bad);
            }
        }
    }

    @Test
    void theAgentIdIsCheckedWhetherConfiguredOrTakenFromTheHostName() {
        assertEquals("gpu-node-7", AgentService.agentId(null, "gpu-node-7"));
        assertEquals("a.b_c-1", AgentService.agentId("a.b_c-1", "host"));
        var e = assertThrows(IllegalArgumentException.class, () -> AgentService.agentId("../spool", "host"));
        assertTrue(e.getMessage().startsWith("kvpool.agent.id '../spool': must not start with '.'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> AgentService.agentId(null, "bad host\n"));
        assertTrue(e.getMessage().startsWith("kvpool.agent.id is not set and the host name 'bad host\\u000a'"),
                e.getMessage());
        assertTrue(e.getMessage().contains("set kvpool.agent.id"), e.getMessage());
    }

    @Test
    void aPoolWithoutStorageRootsDoesNotStart() {
        AgentSetup.Settings s = AgentSetup.Settings.defaults(dir).withNvme(List.of(), 0)
                .withPool("http://127.0.0.1:1", "agent").withPoolRoots(List.of());
        var e = assertThrows(IllegalArgumentException.class, () -> AgentSetup.build(s, EventSink.NONE));
        assertTrue(e.getMessage().startsWith("kvpool.agent.pool.storage-roots"), e.getMessage());
        for (String root : new String[] {"/data/../etc", "./nfs", "/data/nfs/.."}) {
            var dotted = AgentSetup.Settings.defaults(dir).withNvme(List.of(), 0)
                    .withPool("http://127.0.0.1:1", "agent").withPoolRoots(List.of(Path.of(root)));
            e = assertThrows(IllegalArgumentException.class, () -> AgentSetup.build(dotted, EventSink.NONE), root);
            assertTrue(e.getMessage().startsWith("kvpool.agent.pool.storage-roots: '" + root + "'"), e.getMessage());
        }
    }

    /** Each setting that is a name, and how to set it. */
    static final class NameSettings {
        record Case(String key, BiFunction<AgentSetup.Settings, String, AgentSetup.Settings> with) {
        }

        final List<Case> all = List.of(
                new Case("kvpool.agent.id", (s, v) -> new AgentSetup.Settings(v, s.blockBytes(), s.blockTokens(),
                        s.hostRegions(), s.hostRegionBytes(), s.nvmeDirs(), s.nvmeDeviceBytes(), s.ioEngine(),
                        s.queueDepth(), s.nvmeBandwidthMBps(), s.nvmeThrottleMBps(), s.probeBytes(), s.gpuEnabled(),
                        s.gpuBytes(), s.poolEnabled(), s.metaUri(), s.instanceId(), s.instanceGroup(), s.spec(),
                        s.writeTimeoutSeconds(), s.model(), s.requireChecksum(), s.chunkOps(), s.highWaterOps(),
                        s.guardMicros(), s.nvmeKeep(), s.poolRoots())),
                new Case("kvpool.agent.pool.instance-id", AgentSetup.Settings::withInstance),
                new Case("kvpool.agent.pool.instance-group", (s, v) -> new AgentSetup.Settings(s.agentId(),
                        s.blockBytes(), s.blockTokens(), s.hostRegions(), s.hostRegionBytes(), s.nvmeDirs(),
                        s.nvmeDeviceBytes(), s.ioEngine(), s.queueDepth(), s.nvmeBandwidthMBps(), s.nvmeThrottleMBps(),
                        s.probeBytes(), s.gpuEnabled(), s.gpuBytes(), s.poolEnabled(), s.metaUri(), s.instanceId(), v,
                        s.spec(), s.writeTimeoutSeconds(), s.model(), s.requireChecksum(), s.chunkOps(),
                        s.highWaterOps(), s.guardMicros(), s.nvmeKeep(), s.poolRoots())),
                new Case("kvpool.agent.pool.spec", (s, v) -> new AgentSetup.Settings(s.agentId(), s.blockBytes(),
                        s.blockTokens(), s.hostRegions(), s.hostRegionBytes(), s.nvmeDirs(), s.nvmeDeviceBytes(),
                        s.ioEngine(), s.queueDepth(), s.nvmeBandwidthMBps(), s.nvmeThrottleMBps(), s.probeBytes(),
                        s.gpuEnabled(), s.gpuBytes(), s.poolEnabled(), s.metaUri(), s.instanceId(), s.instanceGroup(),
                        v, s.writeTimeoutSeconds(), s.model(), s.requireChecksum(), s.chunkOps(), s.highWaterOps(),
                        s.guardMicros(), s.nvmeKeep(), s.poolRoots())));
    }
}
