package dev.kvpool.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.testing.ChildProcesses;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * {@code control-plane-ha}: control-plane replicas (child JVMs of the packaged control plane, switched to PostgreSQL
 * once as k8s/images/build-images.sh does) over one fresh PostgreSQL database.
 * <ul>
 * <li>admin write throughput: REST storage creations from {@code --threads} clients for {@code --seconds}, against one
 * replica (the baseline, measured first in the same run) and then spread round-robin over three;</li>
 * <li>leader take-over after kill -9: with three replicas, {@code --kills} times: SIGKILL the leader, time until
 * another replica's CheckHealth says {@code is_leader}, restart the killed one; the median is reported with the
 * lease ({@code --lease}, ms).</li>
 * </ul>
 */
final class ControlPlaneHaBench {
    private static final String ADMIN_PW = "Bench-Boot-Passw0rd17";
    private static final ObjectMapper M = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();

    private final Path dir;
    private final Path app;
    private final String pg, db;
    private final long leaseMs, loopMs;
    private final List<Replica> replicas = new ArrayList<>();
    private String token;

    private static final class Replica {
        final String id;
        int http;
        Process process;
        Path log;

        Replica(String id) {
            this.id = id;
        }

        String url() {
            return "http://127.0.0.1:" + http;
        }
    }

    private ControlPlaneHaBench(Path dir, Path app, String pg, String db, long leaseMs, long loopMs) {
        this.dir = dir;
        this.app = app;
        this.pg = pg;
        this.db = db;
        this.leaseMs = leaseMs;
        this.loopMs = loopMs;
    }

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        Path jar = Path.of(o.str("jar", "control-plane/target/quarkus-app/quarkus-run.jar"));
        if (!Files.isRegularFile(jar)) {
            throw new IllegalArgumentException("--jar: no packaged control plane at " + jar
                    + " (./mvnw -pl control-plane package -DskipTests)");
        }
        String pg = o.str("pg", "127.0.0.1:5432");
        String db = o.str("db", "kvpool_bench_ha");
        if (!db.matches("[a-z][a-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("--db must be a lower-case SQL identifier, got " + db);
        }
        long lease = o.integer("lease", 2000);
        long loop = o.integer("loop", (int) Math.max(10, lease / 10));
        int kills = o.integer("kills", 5), threads = o.integer("threads", 8), seconds = o.integer("seconds", 10);
        Path dir = Files.createTempDirectory("kvpool-bench-ha-");
        System.out.printf("control-plane-ha: PostgreSQL %s database %s, lease %d ms, loop %d ms, %d writer threads × %d s, "
                + "%d kills; logs in %s%n", pg, db, lease, loop, threads, seconds, kills, dir);
        Path app = packagedForPostgres(jar.toAbsolutePath().getParent(), dir);
        ControlPlaneHaBench b = new ControlPlaneHaBench(dir, app, pg, db, lease, loop);
        b.sql("drop database if exists " + db + " with (force)");
        b.sql("create database " + db);
        try {
            b.replicas.add(b.start("bench-0"));
            b.token = b.token();
            double one = b.writes(threads, seconds, 1);
            b.replicas.add(b.start("bench-1"));
            b.replicas.add(b.start("bench-2"));
            double three = b.writes(threads, seconds, 3);
            System.out.printf("admin writes (REST POST /api/v1/storages, %d threads, %d s): 1 replica %.0f/s, "
                    + "3 replicas %.0f/s, ratio %.2f%n", threads, seconds, one, three, three / one);
            long[] ms = new long[kills];
            for (int k = 0; k < kills; k++) {
                ms[k] = b.killLeader();
            }
            long[] sorted = ms.clone();
            Arrays.sort(sorted);
            System.out.printf("leader take-over after kill -9 (lease %d ms, loop %d ms): median %d ms of %s%n", lease,
                    loop, sorted[kills / 2], Arrays.toString(ms));
        } finally {
            for (Replica r : b.replicas) {
                if (r.process != null && r.process.isAlive()) {
                    r.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
            b.sql("drop database if exists " + db + " with (force)");
        }
    }

    private void sql(String statement) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + pg + "/postgres", "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.executeUpdate(statement);
        }
    }

    static Path packagedForPostgres(Path src, Path dir) throws Exception {
        Path dst = dir.resolve("quarkus-app");
        try (Stream<Path> files = Files.walk(src)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path to = dst.resolve(src.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(to);
                } else {
                    Files.copy(p, to, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        // the console (Quinoa) is left out: these replicas serve the APIs only, and a rebuild outside the source tree
        // cannot find the console project
        Process p = new ProcessBuilder(java(), "-Dquarkus.launch.rebuild=true", "-Dquarkus.datasource.db-kind=postgresql",
                "-Dquarkus.quinoa=false",
                "-jar", dst.resolve("quarkus-run.jar").toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("rebuild.log").toFile()).start();
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("re-augmentation for PostgreSQL failed: " + dir.resolve("rebuild.log"));
        }
        return dst;
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private Replica start(String id) throws Exception {
        Replica r = new Replica(id);
        restart(r);
        return r;
    }

    private void restart(Replica r) throws Exception {
        r.http = freePort();
        r.log = dir.resolve(r.id + "-" + System.nanoTime() + ".log");
        r.process = ChildProcesses.killOnExit(new ProcessBuilder(java(), "-Xmx384m", "-XX:+UseSerialGC",
                "-Dquarkus.datasource.jdbc.url=jdbc:postgresql://" + pg + "/" + db,
                "-Dquarkus.datasource.username=postgres", "-Dquarkus.datasource.password=postgres",
                "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW,
                "-Dkvpool.control.http-port=" + r.http, "-Dkvpool.control.grpc-port=" + freePort(),
                "-Dkvcm.leader_elector.lease_ms=" + leaseMs, "-Dkvcm.leader_elector.loop_interval_ms=" + loopMs,
                "-Dkvcm.leader_elector.node_id=" + r.id, "-Dkvpool.data-dir=" + dir.resolve(r.id + "-data"),
                "-jar", app.resolve("quarkus-run.jar").toString())
                .redirectErrorStream(true).redirectOutput(r.log.toFile()).start());
        long end = System.currentTimeMillis() + 180_000;
        while (true) {
            if (!r.process.isAlive()) {
                throw new IllegalStateException(r.id + " exited; log " + r.log);
            }
            try {
                if (send("GET", r.url() + "/q/health/ready", null, 2000).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            }
            if (System.currentTimeMillis() > end) {
                throw new IllegalStateException(r.id + " not ready in 180 s; log " + r.log);
            }
            Thread.sleep(100);
        }
    }

    private HttpResponse<String> send(String method, String url, String body, long timeoutMs) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMillis(timeoutMs))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private String token() throws IOException {
        HttpResponse<String> r = send("POST", replicas.getFirst().url() + "/api/v1/tokens",
                "{\"user\":\"admin\",\"password\":\"" + ADMIN_PW + "\"}", 20_000);
        if (r.statusCode() != 200) {
            throw new IllegalStateException("token: HTTP " + r.statusCode() + " " + r.body());
        }
        return M.readTree(r.body()).path("token").asText();
    }

    /** Storage creations per second over the first {@code n} replicas, round-robin, after a 2 s warm-up. */
    private double writes(int threads, int seconds, int n) throws Exception {
        AtomicBoolean stop = new AtomicBoolean(), counting = new AtomicBoolean();
        AtomicLong ok = new AtomicLong(), failed = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        String tag = "w" + n;
        for (int t = 0; t < threads; t++) {
            int w = t;
            ts.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; !stop.get(); i++) {
                    Replica r = replicas.get((w + i) % n);
                    String name = tag + "_" + w + "_" + i;
                    try {
                        int s = send("POST", r.url() + "/api/v1/storages", "{\"name\":\"" + name + "\",\"type\":\"nfs\","
                                + "\"spec\":{\"root_path\":\"/mnt/" + name + "/\"}}", 10_000).statusCode();
                        if (counting.get()) {
                            (s == 201 ? ok : failed).incrementAndGet();
                        }
                    } catch (IOException e) {
                        failed.incrementAndGet();
                    }
                }
            }));
        }
        Thread.sleep(2000);
        counting.set(true);
        long t0 = System.nanoTime();
        Thread.sleep(seconds * 1000L);
        counting.set(false);
        double s = (System.nanoTime() - t0) / 1e9;
        stop.set(true);
        for (Thread t : ts) {
            t.join();
        }
        System.out.printf("  %d replica(s): %d writes in %.1f s (%.0f/s), %d failed%n", n, ok.get(), s, ok.get() / s,
                failed.get());
        return ok.get() / s;
    }

    private Boolean isLeader(Replica r) {
        if (r.process == null || !r.process.isAlive()) {
            return null;
        }
        try {
            HttpResponse<String> res = send("POST", r.url() + "/api/checkHealth", "{}", 1000);
            JsonNode n = M.readTree(res.body());
            return res.statusCode() == 200 ? n.path("is_leader").asBoolean() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** Kills the leader with SIGKILL, returns ms until another replica leads, restarts the killed one. */
    private long killLeader() throws Exception {
        Replica leader = null;
        long end = System.currentTimeMillis() + 30_000;
        while (leader == null) {
            for (Replica r : replicas) {
                if (Boolean.TRUE.equals(isLeader(r))) {
                    leader = r;
                }
            }
            if (leader == null) {
                if (System.currentTimeMillis() > end) {
                    throw new IllegalStateException("no leader within 30 s");
                }
                Thread.sleep(20);
            }
        }
        Thread.sleep(500 + (long) (Math.random() * leaseMs)); // kill at a random point of the renewal cycle
        long t0 = System.nanoTime();
        leader.process.destroyForcibly();
        leader.process.waitFor(10, TimeUnit.SECONDS);
        Replica next = null;
        while (next == null) {
            for (Replica r : replicas) {
                if (r != leader && Boolean.TRUE.equals(isLeader(r))) {
                    next = r;
                }
            }
            if ((System.nanoTime() - t0) > TimeUnit.SECONDS.toNanos(60)) {
                throw new IllegalStateException("no take-over within 60 s");
            }
            if (next == null) {
                Thread.sleep(10);
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("  kill -9 %s → %s leads after %d ms%n", leader.id, next.id, ms);
        restart(leader);
        return ms;
    }
}
