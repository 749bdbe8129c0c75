package dev.kvpool.meta.support;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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

/**
 * The packaged metadata plane (target/quarkus-app) as a child process: started with system properties, talked to
 * over its KVCM HTTP routes and REST, killed with SIGKILL to test crash behaviour.
 */
public final class MetaProcess implements AutoCloseable {
    private static final ObjectMapper M = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    public final String name;
    public final Path log;
    public final int httpPort;
    private int grpcPort;
    private final Process process;

    private MetaProcess(String name, Path log, int httpPort, Process process) {
        this.name = name;
        this.log = log;
        this.httpPort = httpPort;
        this.process = process;
    }

    /** The KVCM gRPC port (meta service). */
    public int grpcPort() {
        return grpcPort;
    }

    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Starts the jar with {@code -Dkey=value} properties and waits until it has recovered (/q/health/started UP). */
    public static MetaProcess start(String name, Path logDir, List<String> props) throws Exception {
        return start(name, logDir, props, true);
    }

    /**
     * Starts the jar and waits until it has recovered, or with {@code recovered} false only until its ports answer
     * (a start that recovers for longer than kvpool.meta.start.ports-wait opens them before).
     */
    public static MetaProcess start(String name, Path logDir, List<String> props, boolean recovered) throws Exception {
        String jar = System.getProperty("kvpool.runner.jar", "target/quarkus-app/quarkus-run.jar");
        assertTrue(Files.isRegularFile(Path.of(jar)), "packaged application missing: " + jar);
        int http = freePort();
        int grpc = freePort();
        Path out = logDir.resolve(name + ".log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx384m", "-XX:+UseSerialGC",
                "-Dkvpool.meta.http-port=" + http, "-Dkvpool.meta.grpc-port=" + grpc, "-Dquarkus.log.console.level=INFO"));
        props.forEach(p -> cmd.add("-D" + p));
        cmd.addAll(List.of("-jar", jar));
        long t0 = System.nanoTime();
        Process p = dev.kvpool.testing.ChildProcesses.killOnExit(
                new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start());
        MetaProcess mp = new MetaProcess(name, out, http, p);
        mp.grpcPort = grpc;
        long end = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (true) {
            if (!p.isAlive()) {
                fail(name + " exited with " + p.exitValue() + ":\n" + mp.tail());
            }
            try {
                JsonNode r = mp.get("/q/health/started");
                if (!recovered || r.path("status").asText().equals("UP")) {
                    break;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > end) {
                fail(name + " not ready within 90 s:\n" + mp.tail());
            }
            Thread.sleep(100);
        }
        System.out.printf("[%s] pid %d %s in %d ms on :%d, log %s%n", name, p.pid(), recovered ? "ready" : "listening",
                (System.nanoTime() - t0) / 1_000_000, http, out);
        return mp;
    }

    public long pid() {
        return process.pid();
    }

    public boolean alive() {
        return process.isAlive();
    }

    public String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** SIGKILL: no shutdown hook, no lease release, nothing flushed beyond what reached the OS or Redis. */
    public void kill() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), name + ": killed process did not exit");
        }
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** SIGTERM (a clean stop), then the exit code; fails if the process takes longer than {@code seconds}. */
    public int stop(int seconds) throws InterruptedException {
        process.destroy();
        assertTrue(process.waitFor(seconds, TimeUnit.SECONDS), name + " did not stop within " + seconds + " s");
        return process.exitValue();
    }

    /** The HTTP status of a GET (the body is not read as JSON). */
    public int status(String path) throws IOException {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path)).GET()
                    .timeout(Duration.ofSeconds(15)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    /** A KVCM route: POST /api/{route} with a JSON body. */
    public JsonNode rpc(String route, String body) throws IOException {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/api/" + route))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)), route);
    }

    /** GET of a REST path such as /api/v1/instances/x or /q/health/ready (any status; body as JSON). */
    public JsonNode get(String path) throws IOException {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path)).GET(), path);
    }

    /** A metric's value from /q/metrics (Prometheus text), summed over its series; 0 when absent. */
    public double metric(String name) throws IOException {
        try {
            String body = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/q/metrics"))
                    .timeout(Duration.ofSeconds(15)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
            double sum = 0;
            for (String line : body.split("\n")) {
                if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                    sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return sum;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private JsonNode send(HttpRequest.Builder b, String what) throws IOException {
        try {
            HttpResponse<String> res = HTTP.send(b.timeout(Duration.ofSeconds(15)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (res.statusCode() >= 500 && !what.startsWith("/q/health")) {
                throw new IOException(what + " answered HTTP " + res.statusCode() + ": " + res.body());
            }
            return M.readTree(res.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
