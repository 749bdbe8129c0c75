package dev.kvpool.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.support.MetaProcess;
import dev.kvpool.testing.KafkaBroker;
import java.io.IOException;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged control plane (H2, a child JVM), a real Kafka broker and the packaged metadata plane configured
 * only by the control plane: the snapshot at start, a change made while Kafka is down arriving after it is back, the
 * new water level evicting without a restart, tenant and anonymous token rules, usage samples, and a restart of the
 * metadata plane while the control plane is down.
 */
class ControlPlaneSyncIT {
    private static final ObjectMapper M = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final String ADMIN_PW = "Boot-Strap-Passw0rd1", OP_PW = "Operat0r-Passw0rd", TENANT_PW = "Team-Search-Pw0rd9";
    private static final int BLOCK_BYTES = 4096, BLOCKS = 20;
    private static final long QUOTA = 1_000_000;

    @TempDir
    Path dir;
    private KafkaBroker kafka;
    private Process controlPlane;
    private final List<MetaProcess> metas = new ArrayList<>();
    private String cp;

    record Res(int status, JsonNode body, HttpResponse<String> raw) {
        String code() {
            return body.path("header").path("status").path("code").asText();
        }
    }

    static Res call(String method, String url, String body, String token, String ifMatch) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
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
                n = r.body().isBlank() ? MissingNode.getInstance() : M.readTree(r.body());
            } catch (IOException e) {
                n = M.getNodeFactory().textNode(r.body());
            }
            return new Res(r.statusCode(), n, r);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private Res cpCall(String method, String path, Object body, String token) throws IOException {
        return call(method, cp + path, body == null ? null : body.toString(), token, null);
    }

    private static Res rpc(MetaProcess m, String route, ObjectNode body, String token) throws IOException {
        return call("POST", "http://127.0.0.1:" + m.httpPort + "/api/" + route, body.toString(), token, null);
    }

    private static void ok(Res r, String what) {
        if (r.status() != 200 || !r.code().equals("OK")) {
            fail(what + ": HTTP " + r.status() + " " + r.body());
        }
    }

    private static void created(Res r, String what) {
        if (r.status() / 100 != 2) {
            fail(what + ": HTTP " + r.status() + " " + r.body());
        }
    }

    interface Check {
        boolean ok() throws Exception;
    }

    private static void await(String what, long ms, Check c) throws Exception {
        long end = System.currentTimeMillis() + ms;
        while (!c.ok()) {
            if (System.currentTimeMillis() > end) {
                fail("not within " + ms + " ms: " + what);
            }
            Thread.sleep(100);
        }
    }

    @AfterEach
    void stopAll() throws Exception {
        for (MetaProcess m : metas) {
            m.close();
        }
        stopControlPlane();
        if (kafka != null) {
            kafka.close();
        }
    }

    private void stopControlPlane() throws InterruptedException {
        if (controlPlane != null && controlPlane.isAlive()) {
            controlPlane.destroy();
            if (!controlPlane.waitFor(20, TimeUnit.SECONDS)) {
                controlPlane.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private void startControlPlane() throws Exception {
        String jar = System.getProperty("kvpool.control.jar", "../control-plane/target/quarkus-app/quarkus-run.jar");
        assertTrue(Files.isRegularFile(Path.of(jar)), "packaged control plane missing: " + jar
                + " (build it: ./mvnw -pl control-plane install -DskipTests)");
        int http = MetaProcess.freePort(), grpc = MetaProcess.freePort();
        cp = "http://127.0.0.1:" + http;
        Path log = dir.resolve("control-plane.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        controlPlane = dev.kvpool.testing.ChildProcesses.killOnExit(new ProcessBuilder(java, "-Xmx384m",
                "-XX:+UseSerialGC",
                "-Dkvpool.data-dir=" + dir.resolve("cp-data"), "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW,
                "-Dkafka.bootstrap.servers=" + kafka.bootstrapServers(), "-Dkvpool.control.http-port=" + http,
                "-Dkvpool.control.grpc-port=" + grpc, "-Dkvpool.control.outbox.interval=100ms",
                "-Dkvpool.control.outbox.send-timeout=PT3S", "-jar", jar)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start());
        long t0 = System.nanoTime();
        await("control plane ready (log " + log + ")", 90_000, () -> {
            if (!controlPlane.isAlive()) {
                fail("control plane exited: " + Files.readString(log));
            }
            try {
                return call("GET", cp + "/q/health/ready", null, null, null).status() == 200;
            } catch (IOException e) {
                return false;
            }
        });
        System.out.printf("[control-plane] ready in %d ms on %s%n", (System.nanoTime() - t0) / 1_000_000, cp);
    }

    private String token(String user, String password) throws IOException {
        Res r = cpCall("POST", "/api/v1/tokens", M.createObjectNode().put("user", user).put("password", password), null);
        created(r, "token for " + user);
        return r.body().path("token").asText();
    }

    private ObjectNode group(String name, boolean anonymous) {
        ObjectNode g = M.createObjectNode().put("name", name).put("quotaBytes", QUOTA).put("allowAnonymousMeta", anonymous)
                .put("maxInstanceCount", 10);
        g.putObject("waterLevels").put("softPercent", 90).put("hardPercent", 100);
        g.putObject("eviction").put("policy", "LRU").put("triggerPeriodSeconds", 1).put("readerLeaseMs", 100);
        g.putArray("storageCandidates").add("nfs_it");
        return g;
    }

    private MetaProcess startMeta(String name) throws Exception {
        return startMeta(name, "10m");
    }

    private MetaProcess startMeta(String name, String resync) throws Exception {
        MetaProcess m = MetaProcess.start(name, dir, List.of("kvpool.data-dir=" + dir.resolve("meta-data"),
                "kvpool.meta.control-plane.url=" + cp, "kvpool.meta.control-plane.user=meta-op",
                "kvpool.meta.control-plane.password=" + OP_PW,
                "kvpool.meta.control-plane.kafka-bootstrap=" + kafka.bootstrapServers(),
                "kvpool.meta.control-plane.resync=" + resync, "kvpool.meta.control-plane.usage-period=500ms"));
        metas.add(m);
        return m;
    }

    private static long slabFiles(Path root) throws IOException {
        if (!Files.isDirectory(root)) {
            return 0;
        }
        try (var s = Files.walk(root)) {
            return s.filter(p -> p.getFileName().toString().startsWith("slab_")).count();
        }
    }

    /**
     * Deleting an instance, a storage or a group in the control plane removes it on the metadata plane within the
     * propagation time, its blocks released through the normal deletion path (usage, slots, files), with Kafka
     * down (the resync carries it) and up (the topic does); the same id registered again works like the first time.
     */
    @Test
    void deletionsReachTheMetadataPlaneWithAndWithoutKafka() throws Exception {
        kafka = KafkaBroker.started();
        startControlPlane();
        String admin = token("admin", ADMIN_PW);
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                .put("role", "operator"), admin), "operator account");
        Path nfs = Files.createDirectories(dir.resolve("nfs")), nfs2 = Files.createDirectories(dir.resolve("nfs2"));
        ObjectNode st = M.createObjectNode().put("name", "nfs_it").put("type", "nfs");
        st.putObject("spec").put("root_path", nfs + "/").put("key_count_per_file", 8);
        created(cpCall("POST", "/api/v1/storages", st, admin), "storage nfs_it");
        ObjectNode st2 = M.createObjectNode().put("name", "nfs_two").put("type", "nfs");
        st2.putObject("spec").put("root_path", nfs2 + "/").put("key_count_per_file", 8);
        created(cpCall("POST", "/api/v1/storages", st2, admin), "storage nfs_two");
        created(cpCall("POST", "/api/v1/instance-groups", group("gd", true), admin), "group gd");
        String operator = token("meta-op", OP_PW);
        // without Kafka a change arrives with the next resync: that is the propagation time here
        long propagationMs = 3_000;
        MetaProcess meta = startMeta("meta-del", "3s");
        String metaUrl = "http://127.0.0.1:" + meta.httpPort;
        java.util.function.Supplier<Long> usage = () -> {
            try {
                return call("GET", metaUrl + "/api/v1/groups/gd", null, operator, null).body().path("used_bytes").asLong();
            } catch (IOException e) {
                return -1L;
            }
        };
        Check gone = () -> rpc(meta, "getInstanceInfo", M.createObjectNode().put("trace_id", "t")
                .put("instance_id", "d1"), operator).code().equals("INSTANCE_NOT_EXIST");

        // Kafka down: registered and deleted before any resync listed the instance (it used to stay served)
        kafka.stop();
        ok(rpc(meta, "registerInstance", register("d1", "gd"), null), "register d1");
        write(meta, "d1", 8, null, true);
        assertEquals(8, served(meta, "d1", 8, null));
        assertEquals(1, slabFiles(nfs), "one slab of 8 blocks");
        assertEquals(204, cpCall("DELETE", "/api/v1/instances/d1", null, admin).status());
        await("d1 removed with Kafka down", 3 * propagationMs + 5_000, () -> gone.ok() && usage.get() == 0
                && slabFiles(nfs) == 0);

        // the same id again: a first registration (control plane and metadata plane), blocks written and served
        ok(rpc(meta, "registerInstance", register("d1", "gd"), null), "register d1 again");
        created(cpCall("GET", "/api/v1/instances/d1", null, admin), "d1 in the control plane again");
        assertEquals(0, served(meta, "d1", 8, null), "nothing of the old d1 is served");
        write(meta, "d1", 8, null, true);
        assertEquals(8, served(meta, "d1", 8, null));
        Thread.sleep(2 * propagationMs); // resyncs that list d1 again must not remove it
        assertEquals(8, served(meta, "d1", 8, null));

        // a storage deleted (after leaving the group's candidates): its blocks leave service and are released
        Res g = cpCall("GET", "/api/v1/instance-groups/gd", null, admin);
        ObjectNode moved = group("gd", true);
        moved.putArray("storageCandidates").add("nfs_two");
        created(call("PUT", cp + "/api/v1/instance-groups/gd", moved.toString(), admin,
                g.raw().headers().firstValue("ETag").orElseThrow()), "gd now on nfs_two");
        Res s1 = cpCall("GET", "/api/v1/storages/nfs_it", null, admin);
        assertEquals(204, call("DELETE", cp + "/api/v1/storages/nfs_it", null, admin,
                s1.raw().headers().firstValue("ETag").orElseThrow()).status());
        await("nfs_it's blocks released with Kafka down", 3 * propagationMs + 5_000, () ->
                served(meta, "d1", 8, null) == 0 && usage.get() == 0 && slabFiles(nfs) == 0);
        write(meta, "d1", 8, null, true);
        assertEquals(8, served(meta, "d1", 8, null), "written again, on nfs_two");
        assertEquals(1, slabFiles(nfs2));

        // Kafka up: the topic carries the deletion
        kafka.start();
        Thread.sleep(propagationMs); // the consumer is back
        assertEquals(204, cpCall("DELETE", "/api/v1/instances/d1", null, admin).status());
        await("d1 removed with Kafka up", 3 * propagationMs + 5_000, () -> gone.ok() && usage.get() == 0
                && slabFiles(nfs2) == 0);
        Res gd = cpCall("GET", "/api/v1/instance-groups/gd", null, admin);
        assertEquals(204, call("DELETE", cp + "/api/v1/instance-groups/gd", null, admin,
                gd.raw().headers().firstValue("ETag").orElseThrow()).status());
        await("group gd gone from the metadata plane", 3 * propagationMs + 5_000, () ->
                call("GET", metaUrl + "/api/v1/groups/gd", null, operator, null).status() == 404);
        Res late = rpc(meta, "registerInstance", register("d2", "gd"), null);
        assertTrue(!late.code().equals("OK"), "no registration into a deleted group: " + late.body());
        Files.readAllLines(meta.log).stream().filter(l -> l.contains("ControlPlaneSync") || l.contains(" WARN ")
                || l.contains(" ERROR ")).forEach(l -> System.out.println("[meta-del] " + l));
    }

    /** StartWriteCache of blocks 1..n; the storage name of the first location, or null when refused. */
    private static String placedOn(MetaProcess m, String instance, int n) throws IOException {
        Res s = rpc(m, "startWriteCache", keys("startWriteCache", instance, n), null);
        if (!s.code().equals("OK")) {
            assertEquals("INTERNAL_ERROR", s.code(), "no candidate → 3 (§3.9.2): " + s.body());
            return null;
        }
        String uri = s.body().path("locations").path(0).path("location_specs").path(0).path("uri").asText();
        ObjectNode f = M.createObjectNode().put("trace_id", "t").put("instance_id", instance)
                .put("write_session_id", s.body().path("write_session_id").asText());
        ArrayNode v = f.putObject("success_blocks").putObject("bool_masks").putArray("values");
        s.body().path("locations").forEach(l -> v.add(false)); // nothing kept: the next call places anew
        ok(rpc(m, "finishWriteCache", f, null), "finishWriteCache " + instance);
        return uri.substring("file://".length(), uri.indexOf('/', "file://".length()));
    }

    /**
     * A KVCM admin script creates its group before its storages (KVCM §3.11: stored as given). The metadata plane
     * places nothing on the missing candidates (StartWriteCache → INTERNAL_ERROR naming them) and uses each storage
     * from the moment the control plane has it, without a restart: through the topic with Kafka up, through the
     * resync with Kafka down.
     */
    @Test
    void pendingCandidatesBecomeUsableWithoutRestart() throws Exception {
        kafka = KafkaBroker.started();
        startControlPlane();
        String admin = token("admin", ADMIN_PW);
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                .put("role", "operator"), admin), "operator account");
        String kvcmGroup = """
                {"trace_id":"t","instance_group":{"name":"gp","storage_candidates":["nfs_later"],
                 "global_quota_group_name":"gp","quota":{"capacity":"1000000"},
                 "cache_config":{"reclaim_strategy":{"storage_unique_name":"nfs_later","reclaim_policy":1,
                   "trigger_strategy":{"used_percentage":0.9}},"data_storage_strategy":"CPS_PREFER_3FS",
                   "meta_indexer_config":{"max_key_count":"1000","mutex_shard_num":"16",
                     "meta_storage_backend_config":{"storage_type":"local"},"meta_cache_policy_config":{"type":"LRU"}}},
                 "version":"1"}}""";
        ok(call("POST", cp + "/api/createInstanceGroup", kvcmGroup, admin, null), "KVCM createInstanceGroup gp");
        assertEquals("[\"nfs_later\"]", cpCall("GET", "/api/v1/instance-groups/gp", null, admin).body()
                .path("missingStorages").toString());
        MetaProcess meta = startMeta("meta-pending", "3s");
        ok(rpc(meta, "registerInstance", register("ip", "gp"), null), "register ip into a group with no storage yet");
        assertEquals(null, placedOn(meta, "ip", 4), "nothing placed on a storage that does not exist");
        Res refused = rpc(meta, "startWriteCache", keys("startWriteCache", "ip", 4), null);
        assertTrue(refused.body().path("header").path("status").path("message").asText().contains("nfs_later"),
                refused.body().toString());

        // Kafka up: the storage's event makes it usable
        Path later = Files.createDirectories(dir.resolve("later")), later2 = Files.createDirectories(dir.resolve("later2"));
        ok(call("POST", cp + "/api/addStorage", "{\"trace_id\":\"t\",\"storage\":{\"global_unique_name\":"
                + "\"nfs_later\",\"nfs\":{\"root_path\":\"" + later + "/\"}}}", admin, null), "KVCM addStorage");
        await("nfs_later used once it exists (Kafka up)", 15_000, () -> "nfs_later".equals(placedOn(meta, "ip", 4)));
        assertEquals("[]", cpCall("GET", "/api/v1/instance-groups/gp", null, admin).body().path("missingStorages")
                .toString());

        // Kafka down: a new first candidate that does not exist is skipped; once added, the resync brings it
        kafka.stop();
        Res gp = cpCall("GET", "/api/v1/instance-groups/gp", null, admin);
        ObjectNode upd = M.createObjectNode();
        upd.putArray("storageCandidates").add("nfs_later2").add("nfs_later");
        created(call("PUT", cp + "/api/v1/instance-groups/gp", upd.toString(), admin,
                gp.raw().headers().firstValue("ETag").orElseThrow()), "gp now names nfs_later2 first");
        Thread.sleep(2 * 3_000); // two resyncs: the group update has arrived
        for (int i = 0; i < 3; i++) {
            assertEquals("nfs_later", placedOn(meta, "ip", 4), "the missing first candidate is skipped");
        }
        ObjectNode st2 = M.createObjectNode().put("name", "nfs_later2").put("type", "nfs");
        st2.putObject("spec").put("root_path", later2 + "/");
        created(cpCall("POST", "/api/v1/storages", st2, admin), "storage nfs_later2");
        await("nfs_later2 used once it exists (Kafka down, resync)", 15_000,
                () -> "nfs_later2".equals(placedOn(meta, "ip", 4)));
    }

    static ObjectNode register(String instance, String group) {
        ObjectNode b = M.createObjectNode().put("trace_id", "t").put("instance_group", group).put("instance_id", instance)
                .put("block_size", 4);
        b.putObject("model_deployment").put("model_name", "m").put("dtype", "bf16");
        b.putArray("location_spec_infos").addObject().put("name", "tp0").put("size", BLOCK_BYTES);
        return b;
    }

    private static ObjectNode keys(String route, String instance, int n) {
        ObjectNode b = M.createObjectNode().put("trace_id", "t").put("instance_id", instance);
        ArrayNode k = b.putArray("block_keys");
        for (int i = 1; i <= n; i++) {
            k.add(1000L + i);
        }
        if (route.equals("getCacheLocation")) {
            b.put("query_type", "QT_BATCH_GET");
        } else {
            b.put("write_timeout_seconds", 30);
        }
        return b;
    }

    /** Writes blocks 1..n (both phases) and returns how many became SERVING. */
    private static void write(MetaProcess m, String instance, int n, String token) throws IOException {
        write(m, instance, n, token, false);
    }

    /** With {@code bytes}, the blocks' bytes go into the slab files the locations name, as an engine's would. */
    private static void write(MetaProcess m, String instance, int n, String token, boolean bytes) throws IOException {
        Res s = rpc(m, "startWriteCache", keys("startWriteCache", instance, n), token);
        ok(s, "startWriteCache " + instance);
        for (JsonNode l : bytes ? s.body().path("locations") : M.createArrayNode()) {
            for (JsonNode spec : l.path("location_specs")) {
                String uri = spec.path("uri").asText(); // file://<storage><root>/<instance>/<spec>/slab_x?blkid=..&size=..
                String rest = uri.substring(uri.indexOf('/', "file://".length()));
                Path file = Path.of(rest.substring(0, rest.indexOf('?')));
                long blkid = Long.parseLong(uri.replaceAll(".*blkid=(\\d+).*", "$1"));
                Files.createDirectories(file.getParent());
                try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.CREATE,
                        java.nio.file.StandardOpenOption.WRITE)) {
                    ch.write(java.nio.ByteBuffer.wrap(new byte[BLOCK_BYTES]), blkid * BLOCK_BYTES);
                }
            }
        }
        ObjectNode f = M.createObjectNode().put("trace_id", "t").put("instance_id", instance)
                .put("write_session_id", s.body().path("write_session_id").asText());
        ArrayNode v = f.putObject("success_blocks").putObject("bool_masks").putArray("values");
        for (int i = 0; i < s.body().path("locations").size(); i++) {
            v.add(true);
        }
        ok(rpc(m, "finishWriteCache", f, token), "finishWriteCache " + instance);
    }

    private static int served(MetaProcess m, String instance, int n, String token) throws IOException {
        Res r = rpc(m, "getCacheLocation", keys("getCacheLocation", instance, n), token);
        ok(r, "getCacheLocation " + instance);
        int hits = 0;
        for (JsonNode l : r.body().path("locations")) {
            JsonNode specs = l.path("location_specs");
            if (specs.size() > 0 && !specs.get(0).path("uri").asText().isEmpty()) {
                hits++;
            }
        }
        return hits;
    }

    private static void refused(Res r, String what) {
        assertEquals(200, r.status(), what + ": KVCM envelope keeps HTTP 200");
        assertEquals("INVALID_ARGUMENT", r.code(), what + ": " + r.body());
    }

    @Test
    void metadataPlaneFollowsTheControlPlane() throws Exception {
        long t0 = System.nanoTime();
        kafka = KafkaBroker.started();
        startControlPlane();
        String admin = token("admin", ADMIN_PW);
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                .put("role", "operator"), admin), "operator account");
        Path nfs = Files.createDirectories(dir.resolve("nfs"));
        ObjectNode st = M.createObjectNode().put("name", "nfs_it").put("type", "nfs");
        st.putObject("spec").put("root_path", nfs + "/").put("key_count_per_file", 8);
        created(cpCall("POST", "/api/v1/storages", st, admin), "storage");
        created(cpCall("POST", "/api/v1/instance-groups", group("ga", false), admin), "group ga");
        created(cpCall("POST", "/api/v1/instance-groups", group("gb", true), admin), "group gb");
        ObjectNode ten = M.createObjectNode().put("name", "tenant-a").put("password", TENANT_PW).put("role", "tenant");
        ten.putArray("groups").add("ga");
        created(cpCall("POST", "/api/v1/accounts", ten, admin), "tenant account");
        String tenantA = token("tenant-a", TENANT_PW), operator = token("meta-op", OP_PW);

        // (a) the snapshot at start: group and storage made before the metadata plane exists are usable
        MetaProcess meta = startMeta("meta");
        ok(rpc(meta, "registerInstance", register("ia", "ga"), tenantA), "register ia with the tenant's token");
        created(cpCall("GET", "/api/v1/instances/ia", null, admin), "ia registered in the control plane too");
        write(meta, "ia", BLOCKS, tenantA);
        assertEquals(BLOCKS, served(meta, "ia", BLOCKS, tenantA));

        // (d) tokens: a tenant of ga cannot touch gb's instance; anonymous only where the group allows it
        refused(rpc(meta, "registerInstance", register("ia2", "ga"), null), "anonymous registration in ga");
        assertEquals(404, cpCall("GET", "/api/v1/instances/ia2", null, admin).status(), "a refused call registers nothing");
        ok(rpc(meta, "registerInstance", register("ib", "gb"), null), "anonymous registration in gb");
        write(meta, "ib", 2, null);
        refused(rpc(meta, "getCacheLocation", keys("getCacheLocation", "ib", 2), tenantA), "tenant A reads gb");
        refused(rpc(meta, "startWriteCache", keys("startWriteCache", "ib", 2), tenantA), "tenant A writes gb");
        refused(rpc(meta, "getCacheLocation", keys("getCacheLocation", "ia", 2), null), "anonymous read of ga");
        refused(rpc(meta, "getCacheLocation", keys("getCacheLocation", "ia", 2), "x.y"), "a forged token");
        assertEquals(2, served(meta, "ib", 2, null), "anonymous read of gb");
        assertEquals(2, served(meta, "ib", 2, operator), "operator reads any group");
        String metaUrl = "http://127.0.0.1:" + meta.httpPort;
        assertEquals(401, call("GET", metaUrl + "/api/v1/groups/ga", null, null, null).status());
        assertEquals(403, call("GET", metaUrl + "/api/v1/groups/ga", null, tenantA, null).status());
        assertEquals(200, call("GET", metaUrl + "/q/health/ready", null, null, null).status());
        Res put = call("PUT", metaUrl + "/api/v1/groups/ga/reclaim", "{\"trigger_strategy\":{\"used_percentage\":0.1}}",
                operator, null);
        assertEquals(409, put.status(), "the control plane owns water levels: " + put.body());
        assertTrue(put.body().path("detail").asText().contains(cp), put.body().toString());

        // a group created a moment ago is usable at once (an unknown group triggers a resync); the control plane's
        // refusals become KVCM's codes and register nothing locally
        ObjectNode gc = group("gc", false).put("maxInstanceCount", 1);
        created(cpCall("POST", "/api/v1/instance-groups", gc, admin), "group gc");
        ok(rpc(meta, "registerInstance", register("ic", "gc"), operator), "register into a group just created");
        Res full = rpc(meta, "registerInstance", register("ic2", "gc"), operator);
        assertEquals("REACH_MAX_ENTITY_CAPACITY", full.code(), full.body().toString());
        ObjectNode other = M.createObjectNode().put("instanceId", "dup").put("group", "gb").put("blockSize", 8);
        other.putObject("modelDeployment").put("model_name", "m").put("dtype", "bf16");
        other.putArray("locationSpecInfos").addObject().put("name", "tp0").put("size", BLOCK_BYTES);
        created(cpCall("POST", "/api/v1/instances", other, admin), "instance dup in the control plane");
        Res dup = rpc(meta, "registerInstance", register("dup", "gb"), operator);
        assertEquals("DUPLICATE_ENTITY", dup.code(), dup.body().toString());
        await("dup adopted from the control plane with its own config", 20_000, () -> rpc(meta, "getInstanceInfo",
                M.createObjectNode().put("trace_id", "t").put("instance_id", "dup"), operator).body()
                .path("instance_info").path("block_size").asInt() == 8);

        // (e) usage samples reach the control plane
        await("usage of ga in the control plane", 20_000, () -> {
            for (JsonNode s : cpCall("GET", "/api/v1/usage?group=ga", null, admin).body().path("items")) {
                if (s.path("usedBytes").asLong() == (long) BLOCKS * BLOCK_BYTES) {
                    return true;
                }
            }
            return false;
        });

        // (f) every replica's stats reach the control plane: one prefix query of ia finding all its blocks, the
        // blocks written, and the replica itself in the services view
        Res prefix = rpc(meta, "getCacheLocation", keys("getCacheLocation", "ia", BLOCKS)
                .put("query_type", "QT_PREFIX_MATCH"), tenantA);
        ok(prefix, "prefix query of ia");
        await("stats of ga in the control plane", 20_000, () -> {
            long queries = 0, queried = 0, hits = 0, written = 0;
            for (JsonNode p : cpCall("GET", "/api/v1/stats/series?group=ga", null, tenantA).body().path("points")) {
                queries += p.path("queries").asLong();
                queried += p.path("queriedBlocks").asLong();
                hits += p.path("hitBlocks").asLong();
                written += p.path("writtenBlocks").asLong();
            }
            return queries == 1 && queried == BLOCKS && hits == BLOCKS && written == BLOCKS;
        });
        assertEquals(403, cpCall("GET", "/api/v1/stats/series?group=gb", null, tenantA).status());
        JsonNode services = cpCall("GET", "/api/v1/services", null, admin).body();
        assertEquals(1, services.path("metadataPlanes").size(), services.toString());
        JsonNode replica = services.path("metadataPlanes").get(0);
        assertEquals("UP", replica.path("status").asText(), services.toString());
        assertTrue(replica.path("leader").asBoolean(), services.toString());
        assertEquals("embedded", replica.path("store").asText(), services.toString());
        assertTrue(replica.path("url").asText().endsWith(":" + meta.httpPort), services.toString());
        assertTrue(replica.path("instances").asLong() >= 2, services.toString());
        assertEquals("UP", services.path("controlPlane").path("status").asText());

        // a disabled storage is neither written to nor served; enabled again, its blocks are back
        Res cs = cpCall("GET", "/api/v1/storages/nfs_it", null, admin);
        created(call("PUT", cp + "/api/v1/storages/nfs_it", st.deepCopy().put("enabled", false).toString(), admin,
                cs.raw().headers().firstValue("ETag").orElseThrow()), "disable nfs_it");
        await("nfs_it disabled on the metadata plane", 20_000, () -> served(meta, "ia", BLOCKS, tenantA) == 0);
        Res w = rpc(meta, "startWriteCache", keys("startWriteCache", "ia", 2), tenantA);
        assertTrue(!w.code().equals("OK") || w.body().path("locations").isEmpty(), "no write to a disabled storage: " + w.body());
        cs = cpCall("GET", "/api/v1/storages/nfs_it", null, admin);
        created(call("PUT", cp + "/api/v1/storages/nfs_it", st.deepCopy().put("enabled", true).toString(), admin,
                cs.raw().headers().firstValue("ETag").orElseThrow()), "enable nfs_it");
        await("nfs_it enabled again", 20_000, () -> served(meta, "ia", BLOCKS, tenantA) == BLOCKS);

        // an instance deleted in the control plane is gone here, its blocks freed
        assertEquals(2L * BLOCK_BYTES, call("GET", metaUrl + "/api/v1/groups/gb", null, operator, null).body()
                .path("used_bytes").asLong());
        assertEquals(204, cpCall("DELETE", "/api/v1/instances/ib", null, admin).status());
        await("ib removed and its usage released", 20_000, () -> rpc(meta, "getInstanceInfo", M.createObjectNode()
                .put("trace_id", "t").put("instance_id", "ib"), operator).code().equals("INSTANCE_NOT_EXIST")
                && call("GET", metaUrl + "/api/v1/groups/gb", null, operator, null).body().path("used_bytes").asLong() == 0);

        // (b) a change made while Kafka is down arrives once it is back
        Res g = call("GET", metaUrl + "/api/v1/groups/ga", null, operator, null);
        assertEquals(0.9, g.body().path("water_level").asDouble(), 1e-9, g.body().toString());
        kafka.stop();
        Res cur = cpCall("GET", "/api/v1/instance-groups/ga", null, admin);
        ObjectNode change = M.createObjectNode();
        change.putObject("waterLevels").put("softPercent", 5).put("hardPercent", 100);
        Res upd = call("PUT", cp + "/api/v1/instance-groups/ga", change.toString(), admin,
                cur.raw().headers().firstValue("ETag").orElse("\"" + cur.body().path("version").asText() + "\""));
        created(upd, "lower ga's water level");
        Thread.sleep(1500);
        assertEquals(0.9, call("GET", metaUrl + "/api/v1/groups/ga", null, operator, null).body().path("water_level")
                .asDouble(), 1e-9, "no Kafka, no resync yet: the old level");
        kafka.start();
        await("the new water level on the metadata plane", 60_000, () -> Math.abs(call("GET", metaUrl
                + "/api/v1/groups/ga", null, operator, null).body().path("water_level").asDouble() - 0.05) < 1e-9);

        // (c) ... and it evicts, without a restart
        await("eviction below 5 % of the quota", 30_000, () -> call("GET", metaUrl + "/api/v1/groups/ga", null,
                operator, null).body().path("used_bytes").asLong() <= QUOTA * 5 / 100);
        int left = served(meta, "ia", BLOCKS, tenantA);
        assertTrue(left < BLOCKS && left <= QUOTA * 5 / 100 / BLOCK_BYTES, "blocks left after eviction: " + left);

        // a restart while the control plane is down serves with the persisted configuration
        meta.close();
        Files.readAllLines(meta.log).stream().filter(l -> l.contains("ControlPlaneSync") || l.contains("Registry")
                || l.contains(" WARN ") || l.contains(" ERROR ")).forEach(l -> System.out.println("[meta] " + l));
        metas.remove(meta);
        stopControlPlane();
        MetaProcess again = startMeta("meta-again");
        assertEquals(left, served(again, "ia", BLOCKS, tenantA), "same blocks after a restart without the control plane");
        assertEquals(0.05, call("GET", "http://127.0.0.1:" + again.httpPort + "/api/v1/groups/ga", null, operator, null)
                .body().path("water_level").asDouble(), 1e-9);
        refused(rpc(again, "getCacheLocation", keys("getCacheLocation", "ia", 2), null), "still no anonymous reads of ga");
        Files.readAllLines(again.log).stream().filter(l -> l.contains("ControlPlaneSync") || l.contains(" WARN ")
                || l.contains(" ERROR ")).forEach(l -> System.out.println("[meta-again] " + l));
        System.out.printf("ControlPlaneSyncIT done in %d ms%n", (System.nanoTime() - t0) / 1_000_000);
    }
}
