package dev.kvpool.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import dev.kvpool.api.events.Topics;
import dev.kvpool.testing.ChildProcesses;
import dev.kvpool.testing.KafkaBroker;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Three child JVMs of the packaged control plane, re-augmented for PostgreSQL, over one fresh database (each through
 * a TCP forwarder of its own that the test can black-hole) and a real Kafka broker, with a 2000 ms lease as KVCM's
 * two-node test: one leader at a time under concurrent admin writes (REST spread over all replicas, KVCM admin calls
 * that follow the leader on SERVER_NOT_LEADER); kill -9 of the leader under that load (a new leader within seconds,
 * every acknowledged write present, every acknowledged change's event on {@code kvpool.config}, duplicates only with
 * the same ce_id); a demote; and a leader cut off from PostgreSQL stepping down before its reported lease expiry.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ControlPlaneReplicasIT {
    static final String DB = "kvpool_replicas_it";
    static final String ADMIN_PW = "Boot-Strap-Passw0rd1";
    static final long LEASE_MS = 2000;
    static final ObjectMapper M = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();

    static Path dir, app;
    static KafkaBroker kafka;
    static final Replica[] REPLICAS = new Replica[3];
    static String token;
    /** Every name whose creation a replica acknowledged (2xx / KVCM OK). */
    static final Set<String> ACKED = ConcurrentHashMap.newKeySet();

    /** A TCP forwarder to PostgreSQL that can black-hole: bytes are swallowed, new connections never answered. */
    static final class Forwarder implements AutoCloseable {
        final ServerSocket server;
        final int target;
        volatile boolean blackHoled;
        final Set<Socket> open = ConcurrentHashMap.newKeySet();

        Forwarder(int target) throws IOException {
            this.target = target;
            server = new ServerSocket();
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            Thread.ofPlatform().daemon().name("pg-forwarder").start(this::accept);
        }

        int port() {
            return server.getLocalPort();
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket in = server.accept();
                    open.add(in);
                    if (blackHoled) {
                        continue; // accepted and never answered, like a SYN into a black hole that got through
                    }
                    Socket out = new Socket();
                    out.connect(new InetSocketAddress("127.0.0.1", target), 2000);
                    open.add(out);
                    pump(in, out);
                    pump(out, in);
                } catch (IOException e) {
                    // closed
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread.ofPlatform().daemon().name("pg-forwarder-pump").start(() -> {
                byte[] buf = new byte[16384];
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        if (!blackHoled) { // black-holed: what is sent disappears, nothing comes back
                            out.write(buf, 0, n);
                            out.flush();
                        }
                    }
                } catch (IOException e) {
                    // one side closed
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            });
        }

        @Override
        public void close() {
            closeQuietly(server);
            open.forEach(Forwarder::closeQuietly);
        }

        static void closeQuietly(AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                // closing
            }
        }
    }

    static final class Replica {
        final int index;
        final String id;
        final Forwarder pg;
        int http, grpc;
        Process process;
        Path log;

        Replica(int index) throws IOException {
            this.index = index;
            this.id = "replica-" + index;
            this.pg = new Forwarder(5432);
        }

        String url() {
            return "http://127.0.0.1:" + http;
        }

        boolean alive() {
            return process != null && process.isAlive();
        }
    }

    record Res(int status, JsonNode body) {
        String code() {
            return body.path("header").path("status").path("code").asText();
        }
    }

    static Res call(String method, String url, String body, String bearer, long timeoutMs) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMillis(timeoutMs))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (bearer != null) {
            b.header("Authorization", "Bearer " + bearer);
        }
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode n;
            try {
                n = r.body().isBlank() ? MissingNode.getInstance() : M.readTree(r.body());
            } catch (IOException e) {
                n = M.getNodeFactory().textNode(r.body());
            }
            return new Res(r.statusCode(), n);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    static Res kvcm(Replica r, String rpc, String body) throws IOException {
        return call("POST", r.url() + "/api/" + rpc, body, token, 5000);
    }

    /** is_leader from CheckHealth, or null when the replica does not answer within 1 s. */
    static Boolean isLeader(Replica r) {
        if (!r.alive()) {
            return null;
        }
        try {
            Res res = call("POST", r.url() + "/api/checkHealth", "{}", null, 1000);
            return res.status() == 200 ? res.body().path("is_leader").asBoolean() : null;
        } catch (IOException e) {
            return null;
        }
    }

    static JsonNode clusterInfo(Replica r) throws IOException {
        return call("POST", r.url() + "/api/getManagerClusterInfo", "{}", null, 1000).body();
    }

    static Replica leader() {
        Replica found = null;
        for (Replica r : REPLICAS) {
            if (Boolean.TRUE.equals(isLeader(r))) {
                if (found != null) {
                    fail("two leaders: " + found.id + " and " + r.id);
                }
                found = r;
            }
        }
        return found;
    }

    static Replica byId(String id) {
        for (Replica r : REPLICAS) {
            if (r.id.equals(id)) {
                return r;
            }
        }
        return null;
    }

    interface Check {
        boolean ok() throws Exception;
    }

    static long await(String what, long ms, Check c) throws Exception {
        long t0 = System.currentTimeMillis(), end = t0 + ms;
        while (!c.ok()) {
            if (System.currentTimeMillis() > end) {
                fail("not within " + ms + " ms: " + what);
            }
            Thread.sleep(20);
        }
        return System.currentTimeMillis() - t0;
    }

    @BeforeAll
    static void startCluster() throws Exception {
        dir = Files.createTempDirectory("kvpool-cp-replicas-");
        app = packagedForPostgres(dir);
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/postgres", "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.executeUpdate("drop database if exists " + DB + " with (force)");
            s.executeUpdate("create database " + DB);
        }
        kafka = new KafkaBroker(dir.resolve("kafka"));
        kafka.start();
        kafka.createTopics(Topics.CONFIG);
        for (int i = 0; i < 3; i++) {
            REPLICAS[i] = new Replica(i);
            start(REPLICAS[i]); // one after another: the first migrates the schema and creates the admin
        }
        Res t = call("POST", REPLICAS[0].url() + "/api/v1/tokens",
                "{\"user\":\"admin\",\"password\":\"" + ADMIN_PW + "\"}", null, 20000);
        assertEquals(200, t.status(), t.body().toString());
        token = t.body().path("token").asText();
    }

    /** target/quarkus-app copied and switched to PostgreSQL once, as k8s/images/build-images.sh does. */
    static Path packagedForPostgres(Path dir) throws Exception {
        Path src = Path.of(System.getProperty("kvpool.runner.jar", "target/quarkus-app/quarkus-run.jar")).getParent();
        assertTrue(Files.isRegularFile(src.resolve("quarkus-run.jar")), "packaged control plane missing in " + src
                + " (./mvnw -pl control-plane package -DskipTests)");
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
        assertTrue(p.waitFor(180, TimeUnit.SECONDS) && p.exitValue() == 0,
                "re-augmentation failed: " + Files.readString(dir.resolve("rebuild.log")));
        return dst;
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static void start(Replica r) throws Exception {
        r.http = freePort();
        r.grpc = freePort();
        r.log = dir.resolve(r.id + "-" + System.nanoTime() + ".log");
        r.process = ChildProcesses.killOnExit(new ProcessBuilder(java(), "-Xmx320m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dquarkus.datasource.jdbc.url=jdbc:postgresql://127.0.0.1:" + r.pg.port() + "/" + DB,
                "-Dquarkus.datasource.username=postgres", "-Dquarkus.datasource.password=postgres",
                "-Dquarkus.datasource.jdbc.acquisition-timeout=3S",
                "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW,
                "-Dkafka.bootstrap.servers=" + kafka.bootstrapServers(),
                "-Dkvpool.control.http-port=" + r.http, "-Dkvpool.control.grpc-port=" + r.grpc,
                "-Dkvcm.leader_elector.lease_ms=" + LEASE_MS, "-Dkvcm.leader_elector.loop_interval_ms=200",
                "-Dkvcm.leader_elector.node_id=" + r.id,
                "-Dkvpool.control.outbox.interval=100ms", "-Dkvpool.control.outbox.send-timeout=PT3S",
                "-Dkvpool.data-dir=" + dir.resolve(r.id + "-data"),
                "-jar", app.resolve("quarkus-run.jar").toString())
                .redirectErrorStream(true).redirectOutput(r.log.toFile()).start());
        long ms = await(r.id + " ready (log " + r.log + ")", 180_000, () -> {
            if (!r.process.isAlive()) {
                fail(r.id + " exited: " + Files.readString(r.log));
            }
            try {
                return call("GET", r.url() + "/q/health/ready", null, null, 2000).status() == 200;
            } catch (IOException e) {
                return false;
            }
        });
        System.out.printf("[%s] ready in %d ms on %s%n", r.id, ms, r.url());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        for (Replica r : REPLICAS) {
            if (r != null) {
                if (r.alive()) {
                    r.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
                r.pg.close();
            }
        }
        if (kafka != null) {
            kafka.close();
        }
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/postgres", "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.executeUpdate("drop database if exists " + DB + " with (force)");
        }
    }

    /**
     * Admin writes: REST storage creations spread round-robin over the live replicas, and KVCM addStorage calls that
     * go to the replica they believe leads and, on SERVER_NOT_LEADER or no answer, ask GetManagerClusterInfo who
     * leads and retry there (what KVCM's clients do). Meanwhile every replica's CheckHealth is sampled.
     */
    static final class Load implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final List<Thread> threads = new ArrayList<>();
        final AtomicInteger notLeader = new AtomicInteger(), failed = new AtomicInteger(), twoLeaders = new AtomicInteger();
        final AtomicLong samples = new AtomicLong();
        final String tag;

        Load(String tag) {
            this.tag = tag;
            for (int t = 0; t < 2; t++) {
                int w = t;
                threads.add(Thread.ofPlatform().name("rest-writer-" + t).start(() -> rest(w)));
                threads.add(Thread.ofPlatform().name("kvcm-writer-" + t).start(() -> kvcmWrites(w)));
            }
            threads.add(Thread.ofPlatform().name("leader-sampler").start(this::sample));
        }

        private void rest(int w) {
            for (int n = 0; !stop.get(); n++) {
                Replica r = REPLICAS[n % 3];
                if (!r.alive()) {
                    continue;
                }
                String name = tag + "_r" + w + "_" + n;
                try {
                    Res res = call("POST", r.url() + "/api/v1/storages", "{\"name\":\"" + name + "\",\"type\":\"nfs\","
                            + "\"spec\":{\"root_path\":\"/mnt/" + name + "/\"}}", token, 5000);
                    if (res.status() / 100 == 2) {
                        ACKED.add(name);
                    } else {
                        failed.incrementAndGet();
                    }
                } catch (IOException e) {
                    failed.incrementAndGet(); // a killed replica: not acknowledged, nothing to check
                }
            }
        }

        private void kvcmWrites(int w) {
            Replica target = REPLICAS[w + 1]; // replicas 1 and 2: at least one of them is a follower
            for (int n = 0; !stop.get(); n++) {
                String name = tag + "_k" + w + "_" + n;
                String body = "{\"trace_id\":\"it\",\"storage\":{\"global_unique_name\":\"" + name
                        + "\",\"nfs\":{\"root_path\":\"/mnt/" + name + "/\"}}}";
                for (int attempt = 0; attempt < 50 && !stop.get(); attempt++) {
                    try {
                        Res res = kvcm(target, "addStorage", body);
                        if (res.code().equals("OK")) {
                            ACKED.add(name);
                            break;
                        }
                        if (!res.code().equals("SERVER_NOT_LEADER")) {
                            failed.incrementAndGet();
                            break;
                        }
                        notLeader.incrementAndGet();
                    } catch (IOException e) {
                        // no answer: rediscover
                    }
                    target = rediscover(target);
                }
            }
        }

        private static Replica rediscover(Replica current) {
            for (Replica r : REPLICAS) {
                if (!r.alive()) {
                    continue;
                }
                try {
                    Replica l = byId(clusterInfo(r).path("leader_node_id").asText());
                    if (l != null && l.alive()) {
                        return l;
                    }
                } catch (IOException e) {
                    // ask the next one
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return current;
        }

        private void sample() {
            while (!stop.get()) {
                int leaders = 0;
                for (Replica r : REPLICAS) {
                    if (Boolean.TRUE.equals(isLeader(r))) {
                        leaders++;
                    }
                }
                samples.incrementAndGet();
                if (leaders > 1) {
                    twoLeaders.incrementAndGet();
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
            }
            System.out.printf("[load %s] acked %d, not-leader answers %d, failed %d, leader samples %d, two leaders %d%n",
                    tag, ACKED.stream().filter(n -> n.startsWith(tag + "_")).count(), notLeader.get(), failed.get(),
                    samples.get(), twoLeaders.get());
        }
    }

    @Test
    @Order(1)
    void oneLeaderAtATimeUnderConcurrentAdminWrites() throws Exception {
        await("a leader", 10_000, () -> leader() != null);
        Load load = new Load("a");
        Thread.sleep(6000);
        load.close();
        assertEquals(0, load.twoLeaders.get(), "never two replicas reporting is_leader at once");
        assertTrue(load.notLeader.get() > 0, "a KVCM writer started on a follower, was told 9 and followed the leader");
        assertEquals(0, load.failed.get(), "no write refused while every replica is up");
        assertTrue(load.samples.get() > 20, "sampled " + load.samples.get());
        assertTrue(ACKED.size() > 20, "writes acknowledged: " + ACKED.size());
        Replica l = leader();
        for (Replica r : REPLICAS) {
            JsonNode info = clusterInfo(r);
            assertEquals(l.id, info.path("leader_node_id").asText(), r.id + " reports the leader");
            assertEquals(r.id, info.path("self_node_id").asText());
            if (r != l) {
                // KVCM's follower answer for a leader-only route; REST writes are served by every replica
                Res res = kvcm(r, "listStorage", "{\"trace_id\":\"f\"}");
                assertEquals("SERVER_NOT_LEADER", res.code(), res.body().toString());
                assertEquals("Server is not leader", res.body().path("header").path("status").path("message").asText());
                assertTrue(res.body().path("header").path("request_id").asText().startsWith("f_"));
                assertEquals(0, info.path("self_leader_expiration_time").asLong());
                String name = "follower_rest_" + r.index;
                Res w = call("POST", r.url() + "/api/v1/storages", "{\"name\":\"" + name
                        + "\",\"type\":\"nfs\",\"spec\":{\"root_path\":\"/mnt/x/\"}}", token, 5000);
                assertEquals(201, w.status(), w.body().toString());
                ACKED.add(name);
            } else {
                long exp = info.path("self_leader_expiration_time").asLong();
                long now = System.currentTimeMillis() * 1000;
                assertTrue(exp > now && exp <= now + (LEASE_MS + 1000) * 1000, "lease expiry in µs: " + exp);
            }
        }
    }

    @Test
    @Order(2)
    void killDashNineTheLeaderUnderLoad() throws Exception {
        Replica old = leader();
        Load load = new Load("b");
        Thread.sleep(2000);
        long t0 = System.nanoTime();
        old.process.destroyForcibly(); // SIGKILL: no release, the lease has to expire
        old.process.waitFor(10, TimeUnit.SECONDS);
        Replica[] next = new Replica[1];
        await("a new leader after kill -9", 10_000, () -> (next[0] = leader()) != null);
        long takeOverMs = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("[kill -9] %s → %s in %d ms (lease %d ms)%n", old.id, next[0].id, takeOverMs, LEASE_MS);
        assertTrue(takeOverMs <= LEASE_MS + 5000, "take-over in " + takeOverMs + " ms");
        Thread.sleep(3000); // writes continue against the new leader
        load.close();
        assertEquals(0, load.twoLeaders.get(), "never two leaders");

        // every acknowledged write is there, read through the new leader and a follower
        Set<String> names = storageNames(next[0]);
        Set<String> missing = new HashSet<>(ACKED);
        missing.removeAll(names);
        assertTrue(missing.isEmpty(), "acknowledged writes missing: " + missing);
        assertEventsOnKafka(Set.copyOf(ACKED));

        // the killed replica comes back as a follower and reports the new leader
        start(old);
        await(old.id + " reports " + next[0].id, 10_000, () -> next[0].id.equals(clusterInfo(old).path("leader_node_id").asText()));
        assertFalse(Boolean.TRUE.equals(isLeader(old)));
        assertEquals(next[0], leader());
    }

    static Set<String> storageNames(Replica r) throws IOException {
        Set<String> names = new HashSet<>();
        for (int page = 0; ; page++) {
            Res res = call("GET", r.url() + "/api/v1/storages?size=500&page=" + page, null, token, 10_000);
            assertEquals(200, res.status(), res.body().toString());
            res.body().path("items").forEach(i -> names.add(i.path("name").asText()));
            if (res.body().path("items").size() < 500) {
                return names;
            }
        }
    }

    /** Every acknowledged creation has its event; an event seen twice (at-least-once) has one ce_id. */
    static void assertEventsOnKafka(Set<String> acked) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "replicas-it-" + System.nanoTime());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Set<String> created = new HashSet<>();
        Map<String, Set<String>> idsByPosition = new HashMap<>();
        int records = 0;
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(Topics.CONFIG));
            long end = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < end && !created.containsAll(acked)) {
                for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                    records++;
                    String type = header(r, "ce_type");
                    if (type.endsWith(".storage.created")) {
                        created.add(r.key());
                    }
                    idsByPosition.computeIfAbsent(header(r, "ce_position"), k -> new HashSet<>()).add(header(r, "ce_id"));
                }
            }
        }
        Set<String> missing = new HashSet<>(acked);
        missing.removeAll(created);
        assertTrue(missing.isEmpty(), "acknowledged changes without an event on " + Topics.CONFIG + ": " + missing);
        idsByPosition.forEach((pos, ids) -> assertEquals(1, ids.size(), "position " + pos + " published with ids " + ids));
        System.out.printf("[kafka] %d records, %d positions, all %d acknowledged creations present%n", records,
                idsByPosition.size(), acked.size());
    }

    static String header(ConsumerRecord<String, byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Test
    @Order(3)
    void demoteHandsOverWithinTenSeconds() throws Exception {
        Replica old = leader();
        assertEquals("OK", kvcm(old, "updateLeaderElectorConfig",
                "{\"trace_id\":\"d\",\"campaign_delay_time_ms\":\"30000\"}").code());
        for (Replica r : REPLICAS) {
            if (r != old) {
                assertEquals("SERVER_NOT_LEADER", kvcm(r, "leaderDemote", "{\"trace_id\":\"d\"}").code(),
                        "a follower's demote");
            }
        }
        long t0 = System.nanoTime();
        assertEquals("OK", kvcm(old, "leaderDemote", "{\"trace_id\":\"d\"}").code());
        await(old.id + " not leader", 5000, () -> Boolean.FALSE.equals(isLeader(old)));
        Replica[] next = new Replica[1];
        await("another leader", 10_000, () -> (next[0] = leader()) != null && next[0] != old);
        System.out.printf("[demote] %s → %s in %d ms%n", old.id, next[0].id, (System.nanoTime() - t0) / 1_000_000);
        await(old.id + " reports the new leader", 5000,
                () -> next[0].id.equals(clusterInfo(old).path("leader_node_id").asText()));
    }

    @Test
    @Order(4)
    void leaderCutOffFromPostgresStepsDownBeforeItsLeaseExpires() throws Exception {
        Replica l = leader();
        AtomicLong lastExpiryUs = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Thread poll = Thread.ofPlatform().start(() -> {
            while (!stop.get()) {
                try {
                    long e = clusterInfo(l).path("self_leader_expiration_time").asLong();
                    if (e > 0) {
                        lastExpiryUs.set(e);
                    }
                } catch (IOException e) {
                    // keep polling
                }
            }
        });
        Thread.sleep(500);
        l.pg.blackHoled = true; // its JDBC connections now go nowhere; HTTP still answers
        long cut = System.currentTimeMillis();
        long[] down = new long[1];
        await(l.id + " reports is_leader=false", LEASE_MS + 3000, () -> {
            if (Boolean.FALSE.equals(isLeader(l))) {
                down[0] = System.currentTimeMillis();
                return true;
            }
            return false;
        });
        stop.set(true);
        poll.join(5000);
        long expiryMs = lastExpiryUs.get() / 1000;
        System.out.printf("[isolate] %s cut at %d, stepped down %d ms later, %d ms before its reported expiry%n",
                l.id, cut, down[0] - cut, expiryMs - down[0]);
        assertTrue(down[0] < expiryMs, "stepped down at " + down[0] + ", reported lease expiry " + expiryMs);
        Replica[] next = new Replica[1];
        await("another replica takes over", LEASE_MS + 8000, () -> (next[0] = leader()) != null && next[0] != l);
        long gained = System.currentTimeMillis();
        assertTrue(gained >= expiryMs, "the take-over came after the expiry (" + (gained - expiryMs) + " ms)");
        await(l.id + " reports itself unhealthy", 10_000, () -> {
            Res r = call("POST", l.url() + "/api/checkHealth", "{}", null, 2000);
            return !r.body().path("is_health").asBoolean(true);
        });
        l.pg.blackHoled = false;
    }
}
