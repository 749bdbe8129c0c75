package dev.kvpool.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.testing.ChildProcesses;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The real pool the console is tested against, as {@code ./kvpool up} runs it: the packaged control plane on its
 * embedded H2 database (which serves the console) and the packaged metadata plane configured by it, each a child JVM
 * on free ports. Also the REST and KVCM calls a test makes behind the browser's back (another admin, an engine).
 */
final class Stack implements AutoCloseable {
    static final ObjectMapper M = new ObjectMapper();
    static final String ADMIN_PW = "Console-E2e-Adm1n";
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    record Res(int status, JsonNode body, String etag, String raw) {
    }

    final Path dir;
    final String cp;
    final String meta;
    private final List<Process> processes = new ArrayList<>();

    private Stack(Path dir, String cp, String meta) {
        this.dir = dir;
        this.cp = cp;
        this.meta = meta;
    }

    static Stack start() throws Exception {
        Path dir = Path.of(System.getProperty("kvpool.e2e.dir", "target/e2e"));
        deleteTree(dir);
        Files.createDirectories(dir);
        int cpHttp = freePort(), cpGrpc = freePort(), metaHttp = freePort(), metaGrpc = freePort();
        Stack s = new Stack(dir, "http://127.0.0.1:" + cpHttp, "http://127.0.0.1:" + metaHttp);
        try {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            s.launch("control-plane", List.of(java, "-Xmx384m", "-XX:+UseSerialGC",
                    "-Dkvpool.data-dir=" + dir.resolve("cp-data"),
                    "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW,
                    "-Dkvpool.control.http-port=" + cpHttp, "-Dkvpool.control.grpc-port=" + cpGrpc,
                    "-Dkvpool.control.metadata-plane.url=" + s.meta,
                    "-jar", jar("kvpool.control.jar")));
            s.await("control plane ready", 90_000, () -> s.ok(s.cp + "/q/health/ready"));
            // the metadata plane needs an account to read its configuration with: the admin, as ./kvpool up does
            s.launch("metadata-plane", List.of(java, "-Xmx512m", "-XX:+UseSerialGC",
                    "-Dkvpool.data-dir=" + dir.resolve("meta-data"),
                    "-Dkvpool.meta.http-port=" + metaHttp, "-Dkvpool.meta.grpc-port=" + metaGrpc,
                    "-Dkvpool.meta.control-plane.url=" + s.cp, "-Dkvpool.meta.control-plane.user=admin",
                    "-Dkvpool.meta.control-plane.password=" + ADMIN_PW,
                    "-Dkvpool.meta.control-plane.resync=1s", "-Dkvpool.meta.control-plane.usage-period=1s",
                    "-jar", jar("kvpool.meta.jar")));
            s.await("metadata plane ready", 120_000, () -> s.ok(s.meta + "/q/health/ready"));
            // this node's data agent (local tiers only), reporting to the control plane as ./kvpool up starts it
            int agentHttp = freePort(), agentMetrics = freePort();
            s.launch("data-agent", List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "--enable-native-access=ALL-UNNAMED",
                    "-Dkvpool.agent.http-port=" + agentHttp, "-Dkvpool.agent.metrics-port=" + agentMetrics,
                    "-Dkvpool.agent.data-dir=" + dir.resolve("agent"),
                    "-Dkvpool.agent.shm.path=" + dir.resolve("agent").resolve("shm"), "-Dkvpool.agent.shm.mib=16",
                    "-Dkvpool.agent.control-plane.url=" + s.cp, "-Dkvpool.agent.control-plane.user=admin",
                    "-Dkvpool.agent.control-plane.password=" + ADMIN_PW, "-Dkvpool.agent.control-plane.period=1s",
                    "-jar", jar("kvpool.agent.jar")));
            s.await("data agent ready", 120_000, () -> s.ok("http://127.0.0.1:" + agentHttp + "/v1/status"));
            return s;
        } catch (Exception | Error e) {
            s.close();
            throw e;
        }
    }

    private static String jar(String prop) {
        String jar = System.getProperty(prop);
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("packaged jar missing (" + prop + "=" + jar + "): build it first, e.g. "
                    + "./mvnw -pl control-plane,metadata-plane -am package -DskipTests");
        }
        return jar;
    }

    /** Stops the metadata plane (the second process), as a crash or an upgrade would. */
    void stopMetadataPlane() throws InterruptedException {
        Process m = processes.get(1);
        m.destroy();
        if (!m.waitFor(20, TimeUnit.SECONDS)) {
            m.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private void launch(String name, List<String> cmd) throws IOException {
        Path log = dir.resolve(name + ".log");
        processes.add(ChildProcesses.killOnExit(new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start()));
    }

    private boolean ok(String url) {
        for (Process p : processes) {
            if (!p.isAlive() && p.exitValue() != 143) {
                throw new IllegalStateException("a child process exited; logs in " + dir);
            }
        }
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    void await(String what, long ms, BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!c.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting for " + what + " (logs in " + dir + ")");
            }
            Thread.sleep(200);
        }
    }

    // ---- REST on the control plane -------------------------------------------------------------------------

    String token(String user, String password) throws IOException {
        Res r = call("POST", cp + "/api/v1/tokens", M.createObjectNode().put("user", user).put("password", password),
                null, null);
        if (r.status != 200 && r.status != 201) {
            throw new IllegalStateException("no token for " + user + ": " + r.status + " " + r.raw);
        }
        return r.body.path("token").asText();
    }

    Res rest(String method, String path, JsonNode body, String token, String ifMatch) throws IOException {
        return call(method, cp + path, body, token, ifMatch);
    }

    // ---- what an engine does: KVCM meta calls on the metadata plane -----------------------------------------

    Res kvcm(String rpc, ObjectNode body) throws IOException {
        Res r = call("POST", meta + "/api/" + rpc, body.put("trace_id", "e2e"), null, null);
        String code = r.body.path("header").path("status").path("code").asText("");
        if (r.status != 200 || !code.equals("OK")) {
            throw new AssertionError(rpc + " failed: HTTP " + r.status + " " + r.raw);
        }
        return r;
    }

    /** Registers an instance as a KVCM connector does (no token: the group allows anonymous meta calls). */
    void register(String group, String instance, int blockSize) throws IOException {
        ObjectNode b = M.createObjectNode().put("instance_group", group).put("instance_id", instance)
                .put("block_size", blockSize);
        b.putObject("model_deployment").put("model_name", "e2e-model").put("dtype", "bf16");
        b.putArray("location_spec_infos").addObject().put("name", "tp0").put("size", 4096);
        kvcm("registerInstance", b);
    }

    /** Both phases of a write of every full block of {@code tokens}, all of them successful. */
    void write(String instance, long[] tokens) throws IOException {
        ObjectNode s = M.createObjectNode().put("instance_id", instance).put("write_timeout_seconds", 30);
        var t = s.putArray("token_ids");
        for (long x : tokens) {
            t.add(x);
        }
        Res started = kvcm("startWriteCache", s);
        ObjectNode f = M.createObjectNode().put("instance_id", instance)
                .put("write_session_id", started.body.path("write_session_id").asText());
        var v = f.putObject("success_blocks").putObject("bool_masks").putArray("values");
        for (int i = 0; i < started.body.path("locations").size(); i++) {
            v.add(true);
        }
        kvcm("finishWriteCache", f);
    }

    /** A prefix match, as an engine asks before a prefill; returns the blocks found. */
    int prefixHits(String instance, long[] tokens) throws IOException {
        ObjectNode q = M.createObjectNode().put("instance_id", instance).put("query_type", "QT_PREFIX_MATCH");
        var t = q.putArray("token_ids");
        for (long x : tokens) {
            t.add(x);
        }
        int hits = 0;
        for (JsonNode l : kvcm("getCacheLocation", q).body.path("locations")) {
            if (!l.path("location_specs").isEmpty()) {
                hits++;
            }
        }
        return hits;
    }

    static Res call(String method, String url, JsonNode body, String token, String ifMatch) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body.toString()));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (ifMatch != null) {
            b.header("If-Match", ifMatch);
        }
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode j = null;
            if (!r.body().isBlank()) {
                try {
                    j = M.readTree(r.body());
                } catch (IOException notJson) {
                    j = null;
                }
            }
            return new Res(r.statusCode(), j == null ? M.nullNode() : j, r.headers().firstValue("ETag").orElse(null),
                    r.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            for (Path x : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }

    @Override
    public void close() {
        for (Process p : processes.reversed()) {
            p.destroy();
            try {
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
