package dev.kvpool.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.testing.ChildProcesses;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ./kvpool up} as an operator runs it: the launcher script of the repository over the packaged control plane,
 * metadata plane and agent, on a data directory and ports of its own. A second {@code ./kvpool up} on the same
 * directory refuses at once and leaves the first one's logs and files as they were; the agent killed (kill -9) under
 * the first takes the platform down with a report naming it; its shared segment survives the kill, is taken over by
 * the next start and is removed by a clean stop.
 */
class LauncherIT {
    static final Path TARGET = Path.of(System.getProperty("kvpool.build.directory", "target")).toAbsolutePath();
    static final Path ROOT = TARGET.getParent().getParent();
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    final Path dir = TARGET.resolve("launcher-it");
    final Path data = dir.resolve("data");
    final List<Process> launchers = new ArrayList<>();
    final Map<String, String> env = new LinkedHashMap<>();
    int agentPort, agentMetrics;

    @Test
    void aSecondUpRefusesAKilledAgentStopsThePlatformAndACleanStopRemovesTheSegment() throws Exception {
        for (String m : List.of("control-plane", "metadata-plane", "data-agent")) {
            Path jar = ROOT.resolve(m).resolve("target/quarkus-app/quarkus-run.jar");
            assertTrue(Files.isRegularFile(jar), jar + " missing: the reactor packages " + m + " before this IT");
        }
        deleteTree(dir);
        Files.createDirectories(dir);
        agentPort = freePort();
        agentMetrics = freePort();
        env.put("KVPOOL_DATA_DIR", data.toString());
        env.put("KVPOOL_CONTROL_HTTP_PORT", String.valueOf(freePort()));
        env.put("KVPOOL_CONTROL_GRPC_PORT", String.valueOf(freePort()));
        env.put("KVPOOL_META_HTTP_PORT", String.valueOf(freePort()));
        env.put("KVPOOL_META_GRPC_PORT", String.valueOf(freePort()));
        env.put("KVPOOL_AGENT_HTTP_PORT", String.valueOf(agentPort));
        env.put("KVPOOL_AGENT_METRICS_PORT", String.valueOf(agentMetrics));
        env.put("KVPOOL_BUILD", "off"); // never a Maven build from inside a test
        env.put("KVPOOL_CONTROL_JAVA_OPTS", "-Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1");
        env.put("KVPOOL_JAVA_OPTS", "-Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1");
        env.put("KVPOOL_AGENT_JAVA_OPTS", "-Xmx256m -XX:+UseSerialGC -Dkvpool.agent.shm.mib=16"
                + " -Dkvpool.agent.host.region-mib=16 -Dkvpool.agent.nvme.device-mib=64 -Dkvpool.agent.nvme.probe-mib=4");
        Path shm = Path.of("/dev/shm/kvpool-agent-" + agentPort); // the launcher's default path, unique by port
        Files.deleteIfExists(shm);

        // the first platform
        Process a = launch("a");
        awaitOutput(a, "a", "kvpool: data agent ready", 150);
        assertEquals(200, health("/ready"));
        Map<String, Long> pids = services();
        assertEquals(List.of("launcher", "control-plane", "metadata-plane", "data-agent"), List.copyOf(pids.keySet()));
        assertEquals(a.pid(), pids.get("launcher"));
        assertTrue(Files.exists(shm));
        // the seeded default group lists the event-report storage engines report to out of the box
        assertTrue(output("a").contains("event-report storage engine_events"), output("a"));
        String cp = "http://127.0.0.1:" + env.get("KVPOOL_CONTROL_HTTP_PORT");
        String pw = Files.readString(data.resolve("control-plane/admin-password")).trim();
        String tok = HTTP.send(HttpRequest.newBuilder(URI.create(cp + "/api/v1/tokens"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"user\":\"admin\",\"password\":\"" + pw + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString()).body().replaceAll("(?s).*\"token\":\"([^\"]+)\".*", "$1");
        String group = HTTP.send(HttpRequest.newBuilder(URI.create(cp + "/api/v1/instance-groups/default"))
                .header("Authorization", "Bearer " + tok).build(), HttpResponse.BodyHandlers.ofString()).body();
        assertTrue(group.contains("\"eventReportStorageCandidates\":[\"engine_events\"]")
                && group.contains("\"missingStorages\":[]"), group);
        // and an engine publisher's call sequence (kvcm-engine-events.md §7.1) works against it unchanged
        String reg = meta("/api/registerInstance", """
                {"trace_id":"rtp-reg","instance_group":"default","instance_id":"rtp-model","block_size":64,
                 "location_spec_infos":[{"name":"rtp_llm_hbm_64","size":2097152}],
                 "model_deployment":{"model_name":"m","dtype":"fp16","tp_size":1,"dp_size":1,"pp_size":1},
                 "location_spec_groups":[{"name":"default","spec_names":["rtp_llm_hbm_64"]}]}""");
        assertTrue(reg.contains("\"code\":\"OK\""), reg);
        String ev = """
                {"trace_id":"rtp-kv-event-0-%s","instance_id":"rtp-model","host_ip_port":"10.0.0.8:8080",
                 "storage_type":"ST_EVENT_REPORT_L1P5","events":[%s]}""";
        String r1 = meta("/api/reportEvent", ev.formatted("register-1",
                "{\"event_type\":\"EVENT_NODE_REGISTER\",\"node_register\":{\"mediums\":[\"hbm\"]}}"));
        assertTrue(r1.contains("\"code\":\"OK\""), r1);
        String r2 = meta("/api/reportEvent", ev.formatted("add-2", "{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":"
                + "{\"block_key\":\"-7046029254386353131\",\"medium\":\"hbm\",\"specs\":[{\"name\":\"rtp_llm_hbm_64\","
                + "\"uri\":\"event_report://10.0.0.8:8080/hbm?size=2097152\"}]}}"));
        assertTrue(r2.contains("\"code\":\"OK\"") && r2.contains("\"snapshot_required\":true"), r2);
        String hosts = meta("/api/getHostCacheState", """
                {"trace_id":"q1","instance_id":"rtp-model","query_type":"QT_PREFIX_MATCH",
                 "block_cache_keys":["-7046029254386353131","42"]}""");
        assertTrue(hosts.contains("\"host_ip_port\":\"10.0.0.8:8080\"") && hosts.contains("\"local\":\"1\""), hosts);

        // a second one on the same data directory: refused at once, the first one untouched
        Map<Path, byte[]> before = new LinkedHashMap<>();
        for (Path f : List.of(data.resolve("control-plane/control-plane.log"), data.resolve("metadata-plane.log"),
                data.resolve("agent/agent.log"), data.resolve("control-plane/admin-password"),
                data.resolve("kvpool.lock"), data.resolve("agent/agent.lock"))) {
            before.put(f, Files.readAllBytes(f));
        }
        long t0 = System.nanoTime();
        Process b = launch("b");
        assertTrue(b.waitFor(20, TimeUnit.SECONDS), "the second ./kvpool up did not exit");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        String bOut = output("b");
        assertEquals(1, b.exitValue(), bOut);
        assertTrue(ms < 10_000, "refused after " + ms + " ms");
        assertTrue(bOut.startsWith("kvpool: " + data + " is in use by another ./kvpool up (pid " + a.pid()
                + "; its services: control-plane " + pids.get("control-plane") + ", metadata-plane "
                + pids.get("metadata-plane") + ", data-agent " + pids.get("data-agent") + "). Nothing was started"
                + " or changed."), bOut);
        for (var e : before.entrySet()) {
            byte[] now = Files.readAllBytes(e.getKey());
            String name = e.getKey().getFileName().toString();
            if (name.endsWith(".log")) { // the first platform goes on logging: what was there is still there
                assertTrue(now.length >= e.getValue().length, e.getKey() + " was truncated");
                assertArrayEquals(e.getValue(), java.util.Arrays.copyOf(now, e.getValue().length), e.getKey() + "");
            } else {
                assertArrayEquals(e.getValue(), now, e.getKey() + " was rewritten");
            }
        }
        assertTrue(a.isAlive());
        assertEquals(200, health("/ready"), "the first platform's agent still serves");

        // the agent dies under the first platform: it says so and stops the rest
        ProcessHandle.of(pids.get("data-agent")).orElseThrow().destroyForcibly();
        assertTrue(a.waitFor(90, TimeUnit.SECONDS), "the launcher did not notice the agent's death:\n" + output("a"));
        String aOut = output("a");
        assertEquals(1, a.exitValue(), aOut);
        assertTrue(aOut.contains("kvpool: the data agent (pid " + pids.get("data-agent") + ") exited with status 137"
                + " (SIGKILL); last lines of " + data.resolve("agent/agent.log") + ":\n  | "), aOut);
        assertTrue(aOut.contains("kvpool: stopping the other services and exiting (status 1)"), aOut);
        for (String s : List.of("control-plane", "metadata-plane")) {
            assertFalse(ProcessHandle.of(pids.get(s)).map(ProcessHandle::isAlive).orElse(false), s + " still runs");
        }
        assertTrue(Files.exists(shm), "kill -9 leaves the segment behind");

        // the next start takes the segment over; a clean stop removes it
        Process c = launch("c");
        awaitOutput(c, "c", "kvpool: data agent ready", 150);
        assertEquals(200, health("/ready"));
        assertTrue(Files.readString(data.resolve("agent/agent.log")).contains("shared segment " + shm
                + ": taken over from an agent that did not stop cleanly"));
        // the engine's reports survived the restart: its first event after it is answered as after a KVCM restart
        // (snapshot_required, no generation) and what it reported before is visible again (soft, §4.7)
        String hb = meta("/api/reportEvent", ev.formatted("heartbeat-3",
                "{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{\"system_status\":{\"engine\":\"rtp-llm\"}}}"));
        assertTrue(hb.contains("\"code\":\"OK\"") && hb.contains("\"snapshot_required\":true")
                && hb.contains("\"committed_snapshot_version\":\"\""), hb);
        String again = meta("/api/getHostCacheState", """
                {"trace_id":"q2","instance_id":"rtp-model","block_cache_keys":["-7046029254386353131"]}""");
        assertTrue(again.contains("\"host_ip_port\":\"10.0.0.8:8080\"") && again.contains("\"local\":\"1\""), again);
        Map<String, Long> cPids = services();
        c.destroy(); // SIGTERM, as a service manager stops it
        assertTrue(c.waitFor(90, TimeUnit.SECONDS), "the launcher did not stop:\n" + output("c"));
        assertEquals(143, c.exitValue(), output("c"));
        for (var e : cPids.entrySet()) {
            assertFalse(ProcessHandle.of(e.getValue()).map(ProcessHandle::isAlive).orElse(false),
                    e.getKey() + " still runs");
        }
        assertFalse(Files.exists(shm), "a clean stop removes the segment");
    }

    /** A KVCM JSON call on the metadata plane's HTTP port, as an engine connector makes it (no token). */
    private String meta(String route, String body) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + env.get("KVPOOL_META_HTTP_PORT") + route))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), route + " → " + r.body());
        return r.body();
    }

    /** Whatever a failed run left: launchers stopped (they stop their services), stragglers killed. */
    @AfterEach
    void cleanUp() throws Exception {
        for (Process p : launchers) {
            if (p.isAlive()) {
                p.destroy();
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
        }
        if (Files.exists(data.resolve("kvpool.lock"))) {
            for (long pid : services().values()) {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
        Files.deleteIfExists(Path.of("/dev/shm/kvpool-agent-" + agentPort));
    }

    private Process launch(String name) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(ROOT.resolve("kvpool").toString(), "up").directory(ROOT.toFile())
                .redirectErrorStream(true).redirectOutput(dir.resolve(name + ".out").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("KVPOOL_")); // nothing from the caller's shell
        pb.environment().putAll(env);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = ChildProcesses.killOnExit(pb.start());
        launchers.add(p);
        return p;
    }

    private String output(String name) throws IOException {
        return Files.readString(dir.resolve(name + ".out"), StandardCharsets.UTF_8);
    }

    private void awaitOutput(Process p, String name, String line, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!output(name).contains(line)) {
            if (!p.isAlive()) {
                throw new AssertionError("./kvpool up (" + name + ") exited with " + p.exitValue() + ":\n" + output(name));
            }
            if (System.nanoTime() > end) {
                throw new AssertionError("no '" + line + "' in " + seconds + " s:\n" + output(name));
            }
            Thread.sleep(200);
        }
    }

    /** The launcher's lock file: itself and each service it started, with their pids, in start order. */
    private Map<String, Long> services() throws IOException {
        Map<String, Long> m = new LinkedHashMap<>();
        Matcher x = Pattern.compile("(?m)^([a-z-]+) ([0-9]+)$").matcher(Files.readString(data.resolve("kvpool.lock")));
        while (x.find()) {
            m.put(x.group(1), Long.parseLong(x.group(2)));
        }
        return m;
    }

    private int health(String route) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agentMetrics + "/q/health" + route))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static void deleteTree(Path p) throws IOException {
        if (Files.exists(p)) {
            try (var s = Files.walk(p)) {
                for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(x);
                }
            }
        }
    }
}
