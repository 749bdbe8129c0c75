package dev.kvpool.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.MetaServiceGrpc;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.meta.ControlPlaneSyncIT.Res;
import dev.kvpool.meta.support.MetaProcess;
import dev.kvpool.testing.KafkaBroker;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 34 part 3 with child JVMs (the packaged control plane over H2, a real Kafka broker, the packaged metadata
 * plane): a group or instance created through the control plane is usable on the metadata plane in the very next
 * call, over HTTP and gRPC, with the plane following Kafka and without (a resync period far longer than the test,
 * so only the on-demand fetch can explain success); bogus names hammered cost a bounded number of fetches and are
 * answered as missing, never "unauthenticated"; a control plane that is down or silent gives a bounded wait and a
 * clear SERVICE_NOT_READY.
 */
class FreshConfigIT {
    private static final ObjectMapper M = new ObjectMapper();
    private static final String ADMIN_PW = "Boot-Strap-Passw0rd1", OP_PW = "Operat0r-Passw0rd";
    private static final long FRESH_WAIT_MS = 1500, MIN_INTERVAL_MS = 200;

    @TempDir
    Path dir;
    private KafkaBroker kafka;
    private Process controlPlane;
    private final List<MetaProcess> metas = new ArrayList<>();
    private String cp, admin;

    @AfterEach
    void stopAll() throws Exception {
        for (MetaProcess m : metas) {
            m.close();
        }
        if (controlPlane != null && controlPlane.isAlive()) {
            new ProcessBuilder("kill", "-CONT", String.valueOf(controlPlane.pid())).start().waitFor();
            controlPlane.destroy();
            if (!controlPlane.waitFor(20, TimeUnit.SECONDS)) {
                controlPlane.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    private Res cpCall(String method, String path, Object body) throws IOException {
        return ControlPlaneSyncIT.call(method, cp + path, body == null ? null : body.toString(), admin, null);
    }

    private static void created(Res r, String what) {
        if (r.status() / 100 != 2) {
            fail(what + ": HTTP " + r.status() + " " + r.body());
        }
    }

    private static void ok(Res r, String what) {
        if (r.status() != 200 || !r.code().equals("OK")) {
            fail(what + ": HTTP " + r.status() + " " + r.body());
        }
    }

    private static Res rpc(MetaProcess m, String route, ObjectNode body) throws IOException {
        return ControlPlaneSyncIT.call("POST", "http://127.0.0.1:" + m.httpPort + "/api/" + route, body.toString(),
                null, null);
    }

    private static String message(Res r) {
        return r.body().path("header").path("status").path("message").asText();
    }

    /** The control plane with Kafka (its outbox relay), an admin token, an operator account and one storage. */
    private void controlPlane() throws Exception {
        kafka = KafkaBroker.started();
        String jar = System.getProperty("kvpool.control.jar", "../control-plane/target/quarkus-app/quarkus-run.jar");
        assertTrue(Files.isRegularFile(Path.of(jar)), "packaged control plane missing: " + jar);
        int http = MetaProcess.freePort(), grpc = MetaProcess.freePort();
        cp = "http://127.0.0.1:" + http;
        Path log = dir.resolve("control-plane.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        controlPlane = dev.kvpool.testing.ChildProcesses.killOnExit(new ProcessBuilder(java, "-Xmx384m",
                "-XX:+UseSerialGC", "-Dkvpool.data-dir=" + dir.resolve("cp-data"),
                "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW,
                "-Dkafka.bootstrap.servers=" + kafka.bootstrapServers(), "-Dkvpool.control.http-port=" + http,
                "-Dkvpool.control.grpc-port=" + grpc, "-Dkvpool.control.outbox.send-timeout=PT3S", "-jar", jar)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start());
        long end = System.currentTimeMillis() + 90_000;
        while (true) {
            if (!controlPlane.isAlive()) {
                fail("control plane exited: " + Files.readString(log));
            }
            try {
                if (ControlPlaneSyncIT.call("GET", cp + "/q/health/ready", null, null, null).status() == 200) {
                    break;
                }
            } catch (IOException e) {
                // not up yet
            }
            if (System.currentTimeMillis() > end) {
                fail("control plane not ready: " + Files.readString(log));
            }
            Thread.sleep(200);
        }
        Res t = ControlPlaneSyncIT.call("POST", cp + "/api/v1/tokens", M.createObjectNode().put("user", "admin")
                .put("password", ADMIN_PW).toString(), null, null);
        created(t, "admin token");
        admin = t.body().path("token").asText();
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                .put("role", "operator")), "operator account");
        Path nfs = Files.createDirectories(dir.resolve("nfs"));
        ObjectNode st = M.createObjectNode().put("name", "nfs_it").put("type", "nfs");
        st.putObject("spec").put("root_path", nfs + "/").put("key_count_per_file", 8);
        created(cpCall("POST", "/api/v1/storages", st), "storage nfs_it");
    }

    /** A metadata plane whose periodic resync never comes during the test; Kafka only when asked. */
    private MetaProcess meta(String name, boolean withKafka) throws Exception {
        List<String> props = new ArrayList<>(List.of("kvpool.data-dir=" + dir.resolve(name + "-data"),
                "kvpool.meta.control-plane.url=" + cp, "kvpool.meta.control-plane.user=meta-op",
                "kvpool.meta.control-plane.password=" + OP_PW, "kvpool.meta.control-plane.resync=1h",
                "kvpool.meta.control-plane.usage-period=1h", "kvpool.meta.control-plane.timeout=10s",
                "kvpool.meta.control-plane.fresh-wait=" + FRESH_WAIT_MS + "ms",
                "kvpool.meta.control-plane.fresh-min-interval=" + MIN_INTERVAL_MS + "ms"));
        if (withKafka) {
            props.add("kvpool.meta.control-plane.kafka-bootstrap=" + kafka.bootstrapServers());
        }
        MetaProcess m = MetaProcess.start(name, dir, props);
        metas.add(m);
        return m;
    }

    private static ObjectNode group(String name) {
        ObjectNode g = M.createObjectNode().put("name", name).put("quotaBytes", 1_000_000).put("allowAnonymousMeta", true)
                .put("maxInstanceCount", 10);
        g.putArray("storageCandidates").add("nfs_it");
        return g;
    }

    private static ObjectNode cpInstance(String id, String group) {
        ObjectNode i = M.createObjectNode().put("instanceId", id).put("group", group).put("blockSize", 4);
        i.putObject("modelDeployment").put("model_name", "m").put("dtype", "bf16");
        i.putArray("locationSpecInfos").addObject().put("name", "tp0").put("size", 4096);
        return i;
    }

    private static ObjectNode startWrite(String instance) {
        ObjectNode b = M.createObjectNode().put("trace_id", "t").put("instance_id", instance)
                .put("write_timeout_seconds", 30);
        b.putArray("block_keys").add(11L).add(12L);
        return b;
    }

    private static ObjectNode getLocation(String instance) {
        ObjectNode b = M.createObjectNode().put("trace_id", "t").put("instance_id", instance)
                .put("query_type", "QT_BATCH_GET");
        b.putArray("block_keys").add(11L);
        return b;
    }

    private static RegisterInstanceRequest grpcRegister(String id, String group) {
        return RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup(group).setInstanceId(id)
                .setBlockSize(4).setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096)).build();
    }

    /**
     * Created through the control plane, used in the next call: a group (RegisterInstance, then StartWriteCache),
     * an instance (StartWriteCache at once), over HTTP and gRPC.
     */
    private void nextCallSeesTheChange(MetaProcess meta, String p) throws Exception {
        double fetches0 = meta.metric("kvpool_meta_fresh_config_fetches_total");
        created(cpCall("POST", "/api/v1/instance-groups", group(p + "-g")), "group " + p + "-g");
        ok(rpc(meta, "registerInstance", ControlPlaneSyncIT.register(p + "-i1", p + "-g")), "register into the new group");
        ok(rpc(meta, "startWriteCache", startWrite(p + "-i1")), "write to the instance just registered");

        created(cpCall("POST", "/api/v1/instances", cpInstance(p + "-i2", p + "-g")), "instance through the control plane");
        Res w = rpc(meta, "startWriteCache", startWrite(p + "-i2"));
        ok(w, "write to an instance the control plane registered a moment ago");
        assertEquals(2, w.body().path("locations").size(), w.body().toString());

        // gRPC: the same through the interceptor (the call waits off its thread, then goes on)
        ManagedChannel ch = ManagedChannelBuilder.forAddress("127.0.0.1", meta.grpcPort()).usePlaintext().build();
        try {
            var stub = MetaServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS);
            created(cpCall("POST", "/api/v1/instance-groups", group(p + "-gg")), "group " + p + "-gg");
            var reg = stub.registerInstance(grpcRegister(p + "-g1", p + "-gg"));
            assertEquals(ErrorCode.OK, reg.getHeader().getStatus().getCode(), reg.toString());
            created(cpCall("POST", "/api/v1/instances", cpInstance(p + "-g2", p + "-gg")), "instance " + p + "-g2");
            var sw = MetaServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS).startWriteCache(
                    StartWriteCacheRequest.newBuilder().setTraceId("t").setInstanceId(p + "-g2").addBlockKeys(7)
                            .setWriteTimeoutSeconds(30).build());
            assertEquals(ErrorCode.OK, sw.getHeader().getStatus().getCode(), sw.toString());
            var bogus = MetaServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS).getCacheLocation(
                    GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId(p + "-nope")
                            .setQueryType(QueryType.QT_BATCH_GET).addBlockKeys(1).build());
            assertEquals(ErrorCode.INSTANCE_NOT_EXIST, bogus.getHeader().getStatus().getCode(), bogus.toString());
            var nogroup = MetaServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS)
                    .registerInstance(grpcRegister(p + "-x", p + "-nogroup"));
            assertEquals(ErrorCode.INTERNAL_ERROR, nogroup.getHeader().getStatus().getCode(), nogroup.toString());
            assertTrue(nogroup.getHeader().getStatus().getMessage().contains("does not exist"), nogroup.toString());
        } finally {
            ch.shutdownNow();
        }
        System.out.printf("[%s] fresh-config fetches for the next-call checks: %.0f%n", p,
                meta.metric("kvpool_meta_fresh_config_fetches_total") - fetches0);
    }

    @Test
    void withoutKafkaOnlyTheOnDemandFetchExplainsIt() throws Exception {
        controlPlane();
        MetaProcess meta = meta("meta-nokafka", false);
        nextCallSeesTheChange(meta, "nk");
        assertTrue(meta.metric("kvpool_meta_fresh_config_fetches_total") >= 4,
                "no Kafka, no resync: the fetches brought the changes");

        // a burst: 16 callers register into a group created a moment ago, all at once; they share the fetches
        created(cpCall("POST", "/api/v1/instance-groups", group("nk-burst").put("maxInstanceCount", 32)), "group nk-burst");
        double b0 = meta.metric("kvpool_meta_fresh_config_fetches_total");
        var burst = java.util.concurrent.Executors.newFixedThreadPool(16);
        try {
            java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<Res>> regs = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                String id = "burst-" + i;
                regs.add(burst.submit(() -> {
                    go.await();
                    return rpc(meta, "registerInstance", ControlPlaneSyncIT.register(id, "nk-burst"));
                }));
            }
            go.countDown();
            for (var r : regs) {
                ok(r.get(30, TimeUnit.SECONDS), "a burst registration");
            }
        } finally {
            burst.shutdownNow();
        }
        double burstFetches = meta.metric("kvpool_meta_fresh_config_fetches_total") - b0;
        System.out.printf("16 concurrent registrations into a new group: %.0f fetches, %.0f coalesced so far%n",
                burstFetches, meta.metric("kvpool_meta_fresh_config_coalesced_total"));
        assertTrue(burstFetches >= 1 && burstFetches <= 2, "the burst shares the first fetch and one follow-up: "
                + burstFetches);

        // bogus names hammered: answered as missing with the right code, and a bounded number of fetches
        double f0 = meta.metric("kvpool_meta_fresh_config_fetches_total");
        long t0 = System.nanoTime();
        for (int i = 0; i < 100; i++) {
            Res r = rpc(meta, "getCacheLocation", getLocation("bogus-instance"));
            assertEquals("INSTANCE_NOT_EXIST", r.code(), r.body().toString());
            assertTrue(message(r).contains("'bogus-instance' is not registered"), r.body().toString());
            Res g = rpc(meta, "registerInstance", ControlPlaneSyncIT.register("x" + i, "bogus-group"));
            assertEquals("INTERNAL_ERROR", g.code(), g.body().toString());
            assertEquals("instance group 'bogus-group' does not exist", message(g));
            assertFalse(message(g).contains("unauthenticated"));
            Res d = rpc(meta, "startWriteCache", startWrite("bogus-" + i)); // a new name every call
            assertEquals("INSTANCE_NOT_EXIST", d.code(), d.body().toString());
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        double fetched = meta.metric("kvpool_meta_fresh_config_fetches_total") - f0;
        double bound = ms / (double) MIN_INTERVAL_MS + 2;
        System.out.printf("300 calls naming bogus things in %d ms: %.0f fetches (bound %.0f), %.0f negative-cache "
                + "hits, %.0f coalesced%n", ms, fetched, bound, meta.metric("kvpool_meta_fresh_config_negative_hits_total"),
                meta.metric("kvpool_meta_fresh_config_coalesced_total"));
        assertTrue(fetched >= 1 && fetched <= bound, "fetches " + fetched + " within " + ms + " ms");
        assertTrue(meta.metric("kvpool_meta_fresh_config_negative_hits_total") > 0);

        // the control plane silent (SIGSTOP): the caller waits at most fresh-wait, then a clear answer
        new ProcessBuilder("kill", "-STOP", String.valueOf(controlPlane.pid())).start().waitFor();
        try {
            long s0 = System.nanoTime();
            Res r = rpc(meta, "startWriteCache", startWrite("while-silent"));
            long waited = (System.nanoTime() - s0) / 1_000_000;
            assertEquals("SERVICE_NOT_READY", r.code(), r.body().toString());
            assertTrue(message(r).contains("did not answer within " + FRESH_WAIT_MS + " ms"), r.body().toString());
            assertTrue(waited >= FRESH_WAIT_MS - 50 && waited < FRESH_WAIT_MS + 1500, "waited " + waited + " ms");
            Res known = rpc(meta, "startWriteCache", startWrite("nk-i1")); // a known instance does not wait
            ok(known, "a known instance while the control plane is silent");
        } finally {
            new ProcessBuilder("kill", "-CONT", String.valueOf(controlPlane.pid())).start().waitFor();
        }

        // the control plane down: answered at once (connection refused), clear message, no hang
        Thread.sleep(MIN_INTERVAL_MS);
        controlPlane.destroy();
        assertTrue(controlPlane.waitFor(30, TimeUnit.SECONDS));
        long s0 = System.nanoTime();
        Res r = rpc(meta, "registerInstance", ControlPlaneSyncIT.register("y1", "group-while-down"));
        long waited = (System.nanoTime() - s0) / 1_000_000;
        assertEquals("SERVICE_NOT_READY", r.code(), r.body().toString());
        assertTrue(message(r).contains("instance group 'group-while-down'") && message(r).contains("control plane"),
                r.body().toString());
        assertTrue(waited < FRESH_WAIT_MS + 1500, "waited " + waited + " ms");
        ok(rpc(meta, "startWriteCache", startWrite("nk-i2")), "known instances are served with the control plane down");
    }

    @Test
    void withKafkaTheNextCallSeesTheChangeToo() throws Exception {
        controlPlane();
        MetaProcess meta = meta("meta-kafka", true);
        nextCallSeesTheChange(meta, "wk");
    }
}
