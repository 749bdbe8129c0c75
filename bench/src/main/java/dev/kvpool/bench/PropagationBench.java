package dev.kvpool.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.testing.ChildProcesses;
import dev.kvpool.testing.KafkaBroker;
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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Config propagation (issue 34 part 2): the packaged control plane (H2), a real Kafka broker and two packaged
 * metadata planes as child processes. Per sample, a group's soft water level is changed through the control plane's
 * REST API; the time from its acknowledgement (the PUT's response) to the new level being visible in each plane's
 * REST group view ({@code GET /api/v1/groups/<g>} → {@code water_level}) is measured, polled every 5 ms. Twice:
 * the planes following Kafka (resync far away, so only the topic explains it), and not following Kafka with a
 * short resync period (only the periodic resync carries the change). The control plane's outbox relay keeps its
 * default interval (200 ms): what a deployment gets.
 */
final class PropagationBench {
    private static final ObjectMapper M = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final String ADMIN_PW = "Boot-Strap-Passw0rd1", OP_PW = "Operat0r-Passw0rd", GROUP = "prop";

    private PropagationBench() {
    }

    record Reply(int status, JsonNode body, HttpResponse<String> raw) {
    }

    static Reply http(String method, String url, Object body, String token, String ifMatch) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json").method(method, body == null
                        ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.toString()));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (ifMatch != null) {
            b.header("If-Match", ifMatch);
        }
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode n;
            try {
                n = r.body().isBlank() ? M.createObjectNode() : M.readTree(r.body());
            } catch (IOException e) {
                n = M.getNodeFactory().textNode(r.body());
            }
            return new Reply(r.statusCode(), n, r);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private static Reply ok(Reply r, String what) {
        if (r.status() / 100 != 2) {
            throw new IllegalStateException(what + ": HTTP " + r.status() + " " + r.body());
        }
        return r;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static Process java(Path log, List<String> props, String jar) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx384m", "-XX:+UseSerialGC"));
        props.forEach(p -> cmd.add("-D" + p));
        cmd.addAll(List.of("-jar", jar));
        return ChildProcesses.killOnExit(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                .start());
    }

    private static void awaitUp(Process p, String url, Path log) throws Exception {
        long end = System.currentTimeMillis() + 120_000;
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException("exited: see " + log);
            }
            try {
                if (http("GET", url, null, null, null).status() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            }
            if (System.currentTimeMillis() > end) {
                throw new IllegalStateException("not up within 120 s: see " + log);
            }
            Thread.sleep(200);
        }
    }

    static void stop(Process p) throws InterruptedException {
        if (p != null && p.isAlive()) {
            p.destroy();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    static void run(Map<String, String> opt) throws Exception {
        String cpJar = opt.getOrDefault("control-jar", "control-plane/target/quarkus-app/quarkus-run.jar");
        String metaJar = opt.getOrDefault("meta-jar", "metadata-plane/target/quarkus-app/quarkus-run.jar");
        int samples = Integer.parseInt(opt.getOrDefault("samples", "20"));
        Duration resync = Duration.parse("PT" + opt.getOrDefault("resync", "3s").toUpperCase());
        for (String j : List.of(cpJar, metaJar)) {
            if (!Files.isRegularFile(Path.of(j))) {
                throw new IllegalArgumentException("packaged application missing: " + j
                        + " (./mvnw -pl control-plane,metadata-plane package -DskipTests)");
            }
        }
        Path dir = Files.createTempDirectory("kvpool-propagation");
        System.out.println("config propagation: logs under " + dir);
        KafkaBroker kafka = new KafkaBroker(Files.createDirectories(dir.resolve("kafka")));
        Process cpProc = null;
        List<Process> metas = new ArrayList<>();
        try {
            kafka.start();
            int cpHttp = freePort();
            String cp = "http://127.0.0.1:" + cpHttp;
            cpProc = java(dir.resolve("control-plane.log"), List.of("kvpool.data-dir=" + dir.resolve("cp-data"),
                    "kvpool.control.bootstrap-admin.password=" + ADMIN_PW, "kafka.bootstrap.servers="
                            + kafka.bootstrapServers(), "kvpool.control.http-port=" + cpHttp,
                    "kvpool.control.grpc-port=" + freePort()), cpJar);
            awaitUp(cpProc, cp + "/q/health/ready", dir.resolve("control-plane.log"));
            String admin = ok(http("POST", cp + "/api/v1/tokens", M.createObjectNode().put("user", "admin")
                    .put("password", ADMIN_PW), null, null), "admin token").body().path("token").asText();
            ok(http("POST", cp + "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                    .put("role", "operator"), admin, null), "operator account");
            String operator = ok(http("POST", cp + "/api/v1/tokens", M.createObjectNode().put("user", "meta-op")
                    .put("password", OP_PW), null, null), "operator token").body().path("token").asText();
            ObjectNode st = M.createObjectNode().put("name", "nfs_prop").put("type", "nfs");
            st.putObject("spec").put("root_path", Files.createDirectories(dir.resolve("nfs")) + "/");
            ok(http("POST", cp + "/api/v1/storages", st, admin, null), "storage");
            ObjectNode g = M.createObjectNode().put("name", GROUP).put("quotaBytes", 1_000_000_000L);
            g.putObject("waterLevels").put("softPercent", 50).put("hardPercent", 100);
            g.putArray("storageCandidates").add("nfs_prop");
            ok(http("POST", cp + "/api/v1/instance-groups", g, admin, null), "group");

            String[][] modes = {{"kafka", "Kafka up (planes follow kvpool.config; resync 1h)"},
                    {"resync", "Kafka not followed by the planes; resync every " + resync.toMillis() + " ms"}};
            List<String> summary = new ArrayList<>();
            int level = 50;
            for (String[] mode : modes) {
                boolean withKafka = mode[0].equals("kafka");
                List<String> urls = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    int port = freePort();
                    String name = "meta-" + mode[0] + "-" + r;
                    List<String> props = new ArrayList<>(List.of("kvpool.data-dir=" + dir.resolve(name),
                            "kvpool.meta.http-port=" + port, "kvpool.meta.grpc-port=" + freePort(),
                            "kvpool.meta.control-plane.url=" + cp, "kvpool.meta.control-plane.user=meta-op",
                            "kvpool.meta.control-plane.password=" + OP_PW, "kvpool.meta.control-plane.usage-period=1h",
                            "kvpool.meta.control-plane.resync=" + (withKafka ? "1h" : resync.toMillis() + "ms")));
                    if (withKafka) {
                        props.add("kvpool.meta.control-plane.kafka-bootstrap=" + kafka.bootstrapServers());
                    }
                    Process p = java(dir.resolve(name + ".log"), props, metaJar);
                    metas.add(p);
                    String url = "http://127.0.0.1:" + port;
                    awaitUp(p, url + "/q/health/ready", dir.resolve(name + ".log"));
                    urls.add(url + "/api/v1/groups/" + GROUP);
                }
                Thread.sleep(withKafka ? 3000 : 500); // the consumers have found the topic
                long[][] lat = new long[urls.size()][samples];
                ExecutorService pollers = Executors.newFixedThreadPool(urls.size());
                try {
                    for (int s = 0; s < samples; s++) {
                        level = level == 50 ? 60 : 50;
                        double want = level / 100.0;
                        Reply cur = ok(http("GET", cp + "/api/v1/instance-groups/" + GROUP, null, admin, null), "group");
                        ObjectNode change = M.createObjectNode();
                        change.putObject("waterLevels").put("softPercent", level).put("hardPercent", 100);
                        String etag = cur.raw().headers().firstValue("ETag").orElse("\"" + cur.body().path("version")
                                .asText() + "\"");
                        ok(http("PUT", cp + "/api/v1/instance-groups/" + GROUP, change, admin, etag), "change");
                        long t0 = System.nanoTime(); // the control plane has acknowledged
                        long limit = Math.max(10_000, 5 * resync.toMillis());
                        List<Future<Long>> seen = new ArrayList<>();
                        for (String u : urls) {
                            seen.add(pollers.submit(() -> {
                                while (true) {
                                    JsonNode v = http("GET", u, null, operator, null).body();
                                    if (Math.abs(v.path("water_level").asDouble() - want) < 1e-9) {
                                        return System.nanoTime() - t0;
                                    }
                                    if ((System.nanoTime() - t0) / 1_000_000 > limit) {
                                        throw new IllegalStateException(u + " did not show " + want + " within "
                                                + limit + " ms: " + v);
                                    }
                                    Thread.sleep(5);
                                }
                            }));
                        }
                        for (int r = 0; r < urls.size(); r++) {
                            lat[r][s] = seen.get(r).get();
                        }
                        // de-phase the next change from the relay and resync timers
                        Thread.sleep(ThreadLocalRandom.current().nextLong(100, withKafka ? 600 : resync.toMillis()));
                    }
                } finally {
                    pollers.shutdownNow();
                }
                long[] all = Arrays.stream(lat).flatMapToLong(Arrays::stream).sorted().toArray();
                String line = String.format("%-62s n=%d (2 replicas x %d)  p50=%6.0f ms  p95=%6.0f ms  max=%6.0f ms",
                        mode[1], all.length, samples, pct(all, 50), pct(all, 95), all[all.length - 1] / 1e6);
                if (!withKafka) {
                    line += String.format("  (max / period = %.2f)", all[all.length - 1] / 1e6 / resync.toMillis());
                }
                System.out.println(line);
                for (int r = 0; r < urls.size(); r++) {
                    long[] one = lat[r].clone();
                    Arrays.sort(one);
                    System.out.printf("    replica %d: p50=%6.0f ms  p95=%6.0f ms  max=%6.0f ms%n", r, pct(one, 50),
                            pct(one, 95), one[one.length - 1] / 1e6);
                }
                summary.add(line);
                for (Process p : metas) {
                    stop(p);
                }
                metas.clear();
            }
            System.out.println();
            summary.forEach(System.out::println);
        } finally {
            for (Process p : metas) {
                stop(p);
            }
            stop(cpProc);
            kafka.close();
        }
    }

    private static double pct(long[] sorted, double p) {
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(p / 100.0 * sorted.length))] / 1e6;
    }
}
