package dev.kvpool.images;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Opens every OCI archive the package phase wrote (index.json, manifest, config, every blob against its digest, every
 * layer against its diff_id), then starts the services from the unpacked layers as a container runtime would: in a
 * chroot, as uid 185, with the image's entrypoint, environment and working directory, a private /proc, /tmp and
 * /dev/shm. Needs root (chroot, unshare), as the image build itself does.
 */
class ImageArchivesIT {

    static final ObjectMapper JSON = new ObjectMapper();
    static final Path IMAGES = Path.of(System.getProperty("kvpool.images.dir", "target/images"));
    static final Path WORK = IMAGES.resolveSibling("images-it");
    static final String VERSION = System.getProperty("kvpool.images.version");
    static final String REPOSITORY = System.getProperty("kvpool.images.repository");
    static final String TAG = System.getProperty("kvpool.images.tag");
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /** name → exposed ports. */
    static final Map<String, Set<String>> PORTS = Map.of(
            "control-plane", Set.of("6492/tcp", "6491/tcp"),
            "metadata-plane", Set.of("6382/tcp", "6381/tcp"),
            "data-agent", Set.of("6390/tcp", "6389/tcp"),
            "operator", Set.of("8080/tcp"));

    record Image(String name, JsonNode manifest, JsonNode config, List<String> layers, Path oci) {}

    static final Map<String, Image> OPENED = new LinkedHashMap<>();

    @BeforeAll
    static void open() throws Exception {
        deleteTree(WORK);
        for (String name : List.of("control-plane", "metadata-plane", "data-agent", "operator")) {
            Path archive = IMAGES.resolve("kvpool-" + name + ".tar");
            assertTrue(Files.isRegularFile(archive), "no archive " + archive);
            Path oci = WORK.resolve(name + "/oci");
            Files.createDirectories(oci);
            run(List.of("tar", "-xf", archive.toString(), "-C", oci.toString()), 60);
            OPENED.put(name, read(name, oci));
        }
    }

    /** The unpacked copies take ~2.5 GB: keep only the services' logs. */
    @AfterAll
    static void dropUnpacked() throws Exception {
        for (String name : OPENED.keySet()) {
            deleteTree(WORK.resolve(name));
        }
    }

    static Image read(String name, Path oci) throws Exception {
        assertEquals("1.0.0", JSON.readTree(oci.resolve("oci-layout").toFile()).get("imageLayoutVersion").asText());
        JsonNode index = JSON.readTree(oci.resolve("index.json").toFile());
        assertEquals(1, index.get("manifests").size(), name + ": one manifest");
        JsonNode desc = index.get("manifests").get(0);
        assertEquals(REPOSITORY + "/kvpool-" + name + ":" + TAG,
                desc.path("annotations").path("org.opencontainers.image.ref.name").asText());
        JsonNode manifest = JSON.readTree(blob(oci, desc));
        assertEquals("application/vnd.oci.image.manifest.v1+json", manifest.get("mediaType").asText());
        JsonNode config = JSON.readTree(blob(oci, manifest.get("config")));
        List<String> layers = new ArrayList<>();
        JsonNode diffIds = config.get("rootfs").get("diff_ids");
        assertEquals(manifest.get("layers").size(), diffIds.size(), name + ": a diff_id per layer");
        for (int i = 0; i < diffIds.size(); i++) {
            JsonNode layer = manifest.get("layers").get(i);
            blob(oci, layer); // digest and size
            String type = layer.get("mediaType").asText();
            assertTrue(type.startsWith("application/vnd.oci.image.layer.v1.tar"), type);
            Path file = blobPath(oci, layer.get("digest").asText());
            try (InputStream in = type.endsWith("+gzip")
                    ? new GZIPInputStream(Files.newInputStream(file), 1 << 16) : Files.newInputStream(file)) {
                assertEquals(diffIds.get(i).asText(), "sha256:" + sha256(in), name + ": layer " + i + " diff_id");
            }
            layers.add(layer.get("digest").asText());
        }
        return new Image(name, manifest, config, layers, oci);
    }

    @Test
    void configsCarryEntrypointUserPortsLabels() {
        OPENED.forEach((name, image) -> {
            JsonNode c = image.config().get("config");
            List<String> entry = strings(c.get("Entrypoint"));
            assertEquals("/opt/java/bin/java", entry.getFirst(), name);
            assertEquals(List.of("-jar", "/opt/kvpool/" + name + "/quarkus-run.jar"), entry.subList(entry.size() - 2,
                    entry.size()), name);
            assertTrue(entry.contains("-Djava.util.logging.manager=org.jboss.logmanager.LogManager"), name);
            assertEquals(name.equals("data-agent"), entry.contains("--enable-native-access=ALL-UNNAMED"), name);
            assertTrue(c.path("Cmd").isMissingNode() || c.get("Cmd").isNull() || c.get("Cmd").isEmpty(), name);
            assertEquals("185:185", c.get("User").asText(), name);
            assertEquals("/var/lib/kvpool", c.get("WorkingDir").asText(), name);
            Set<String> ports = new TreeSet<>();
            c.get("ExposedPorts").fieldNames().forEachRemaining(ports::add);
            assertEquals(new TreeSet<>(PORTS.get(name)), ports, name);
            List<String> env = strings(c.get("Env"));
            assertTrue(env.contains("KVPOOL_DATA_DIR=/var/lib/kvpool"), name + " " + env);
            assertTrue(env.stream().anyMatch(e -> e.startsWith("JDK_JAVA_OPTIONS=-Xmx")), name + " " + env);
            JsonNode labels = c.get("Labels");
            assertEquals("kvpool-" + name, labels.get("org.opencontainers.image.title").asText());
            assertEquals(VERSION, labels.get("org.opencontainers.image.version").asText());
            for (String l : List.of("revision", "source", "licenses", "created", "description")) {
                assertFalse(labels.path("org.opencontainers.image." + l).asText().isBlank(), name + " label " + l);
            }
            try {
                JsonNode health = JSON.readTree(labels.get("dev.kvpool.health").asText());
                assertTrue(PORTS.get(name).contains(health.get("port").asInt() + "/tcp"), name + " health port");
            } catch (IOException e) {
                fail(name + ": dev.kvpool.health is no JSON", e);
            }
            assertEquals("linux", image.config().get("os").asText());
            assertEquals("amd64", image.config().get("architecture").asText());
        });
    }

    @Test
    void fourLayersWithBaseAndRuntimeShared() {
        Image first = OPENED.get("control-plane");
        OPENED.forEach((name, image) -> {
            assertEquals(4, image.layers().size(), name + ": base OS, Java runtime, dependencies, application");
            assertEquals(first.layers().subList(0, 2), image.layers().subList(0, 2),
                    name + ": the base OS and runtime layers are the same blobs in every image");
            assertEquals(4, Set.copyOf(image.layers()).size(), name + ": distinct layers");
        });
    }

    /** KVPool's own jars change with every commit: they sit in the application layer, not with the libraries. */
    @Test
    void ownJarsInTheApplicationLayerOnly() throws Exception {
        Image image = OPENED.get("metadata-plane");
        String deps = run(List.of("tar", "-tzf", blobPath(image.oci(), image.layers().get(2)).toString()), 60);
        String app = run(List.of("tar", "-tzf", blobPath(image.oci(), image.layers().get(3)).toString()), 60);
        assertTrue(deps.contains("opt/kvpool/metadata-plane/lib/main/io.vertx.vertx-core-"), deps);
        assertFalse(deps.contains("dev.kvpool."), deps);
        assertTrue(app.contains("opt/kvpool/metadata-plane/lib/main/dev.kvpool.kvpool-metadata-index-"), app);
        assertTrue(app.contains("opt/kvpool/metadata-plane/quarkus-run.jar"), app);
        assertFalse(app.contains("io.vertx."), app);
    }

    @Test
    void runtimeStartsInsideTheImageAsTheKvpoolUser() throws Exception {
        Path root = rootfs("operator");
        assertEquals(185, Files.getAttribute(root.resolve("var/lib/kvpool"), "unix:uid"));
        assertTrue(Files.readString(root.resolve("etc/passwd")).contains("kvpool:x:185:185:"));
        String out = inImage("operator", root, List.of(), List.of("/opt/java/bin/java", "-version"), 60);
        assertTrue(out.contains("version \"25"), out);
        String mods = inImage("operator", root, List.of(), List.of("/opt/java/bin/java", "--list-modules"), 60);
        assertTrue(mods.contains("jdk.unsupported") && mods.contains("jdk.zipfs") && !mods.contains("jdk.compiler"), mods);
    }

    @Test
    void metadataPlaneServesHealthFromItsImage() throws Exception {
        Path root = rootfs("metadata-plane");
        int http = 26382;
        Process p = startInImage("metadata-plane", root, List.of("KVPOOL_META_HTTP_PORT=" + http,
                "KVPOOL_META_GRPC_PORT=" + (http - 1)));
        try {
            awaitOk(p, "http://127.0.0.1:" + http + "/q/health/ready", "\"status\": \"UP\"");
        } finally {
            stop(p);
        }
    }

    @Test
    void dataAgentAnswersStatusFromItsImage() throws Exception {
        Path root = rootfs("data-agent");
        int http = 26390;
        Process p = startInImage("data-agent", root, List.of("KVPOOL_AGENT_HTTP_PORT=" + http,
                "KVPOOL_AGENT_METRICS_PORT=" + (http - 1)));
        try {
            awaitOk(p, "http://127.0.0.1:" + http + "/v1/status", "");
        } finally {
            stop(p);
        }
    }

    /** The operator from its image against the fabric8 mock server (CRUD): it starts and reconciles a KVPool. */
    @Test
    void operatorReconcilesFromItsImage() throws Exception {
        KubernetesMockServer server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(), false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        Process p = null;
        try (KubernetesClient client = server.createClient()) {
            try (var crds = Files.list(Path.of(System.getProperty("kvpool.images.root"), "k8s/crds"))) {
                for (Path crd : crds.filter(f -> f.toString().endsWith(".yml")).toList()) {
                    try (InputStream in = Files.newInputStream(crd)) {
                        client.resource(client.apiextensions().v1().customResourceDefinitions().load(in).item()).create();
                    }
                }
            }
            Path root = rootfs("operator");
            p = startInImage("operator", root, List.of("QUARKUS_HTTP_PORT=26080",
                    "QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL=http://127.0.0.1:" + server.getPort(),
                    // the mock server rejects server-side apply (shared notes, section 4.3): JOSDK's and the
                    // KVPool reconciler's own
                    "QUARKUS_OPERATOR_SDK_ENABLE_SSA=false", "KVPOOL_OPERATOR_SERVER_SIDE_APPLY=false",
                    // the operator watches its own namespace; in a pod the Deployment sets this from metadata.namespace
                    "KUBERNETES_NAMESPACE=kvpool-images-it",
                    // leader election (prod profile only) checks its Lease rights with a SelfSubjectRulesReview,
                    // which the mock server cannot answer: a profile of its own runs the prod settings without it
                    "QUARKUS_PROFILE=image-it"));
            GenericKubernetesResource pool = Serialization.unmarshal("""
                    apiVersion: kvpool.dev/v1alpha1
                    kind: KVPool
                    metadata: {name: demo, namespace: kvpool-images-it}
                    spec: {version: 0.4.2, engines: {postgres: {secretRef: {name: demo-db}}}}
                    """, GenericKubernetesResource.class);
            client.resource(pool).create();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            Deployment d = null;
            while (d == null && System.nanoTime() < deadline) {
                if (!p.isAlive()) {
                    fail("the operator exited " + p.exitValue() + "; log in " + WORK);
                }
                d = client.apps().deployments().inNamespace("kvpool-images-it").withName("demo-control-plane").get();
                Thread.sleep(500);
            }
            assertTrue(d != null, "no Deployment demo-control-plane in 90 s; log in " + WORK);
            assertEquals("ghcr.io/kvpool/kvpool-control-plane:0.4.2",
                    d.getSpec().getTemplate().getSpec().getContainers().getFirst().getImage());
        } finally {
            if (p != null) {
                stop(p);
            }
            server.destroy();
        }
    }

    /** The image's control plane was built for PostgreSQL: it migrates and serves a scratch database. */
    @Test
    void controlPlaneRunsOnPostgresql() throws Exception {
        String db = "kvpool_images_it";
        String admin = "jdbc:postgresql://127.0.0.1:5432/postgres";
        try (Connection c = DriverManager.getConnection(admin, "postgres", "postgres")) {
            c.createStatement().execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
            c.createStatement().execute("CREATE DATABASE " + db);
        }
        Path root = rootfs("control-plane");
        int http = 26492;
        Process p = startInImage("control-plane", root, List.of("KVPOOL_CONTROL_HTTP_PORT=" + http,
                "KVPOOL_CONTROL_GRPC_PORT=" + (http - 1),
                "QUARKUS_DATASOURCE_JDBC_URL=jdbc:postgresql://127.0.0.1:5432/" + db,
                "QUARKUS_DATASOURCE_USERNAME=postgres", "QUARKUS_DATASOURCE_PASSWORD=postgres",
                "KVPOOL_ADMIN_PASSWORD=Kv-9ImagesItSecret"));
        try {
            awaitOk(p, "http://127.0.0.1:" + http + "/q/health/ready", "\"status\": \"UP\"");
            try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/" + db, "postgres",
                    "postgres"); ResultSet rs = c.createStatement().executeQuery(
                    "SELECT count(*) FROM flyway_schema_history WHERE success")) {
                assertTrue(rs.next() && rs.getInt(1) > 0, "Flyway migrated the scratch database");
            }
            HttpResponse<String> console = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http
                    + "/")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, console.statusCode());
            assertTrue(console.body().contains("<div id=\"root\">") || console.body().contains("id=\"root\""),
                    "the web console is served: " + console.body());
        } finally {
            stop(p);
            try (Connection c = DriverManager.getConnection(admin, "postgres", "postgres")) {
                c.createStatement().execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    static Path rootfs(String name) throws Exception {
        Image image = OPENED.get(name);
        Path root = WORK.resolve(name + "/rootfs");
        if (Files.isDirectory(root.resolve("opt/kvpool"))) {
            return root;
        }
        Files.createDirectories(root);
        for (String digest : image.layers()) {
            run(List.of("tar", "-xpf", blobPath(image.oci(), digest).toString(), "-C", root.toString()), 120);
        }
        return root;
    }

    /** The command under the image's user, environment and working directory, in a chroot with private mounts. */
    static List<String> command(String name, Path root, List<String> extraEnv, List<String> cmd) {
        JsonNode c = OPENED.get(name).config().get("config");
        String r = root.toAbsolutePath().toString();
        List<String> argv = new ArrayList<>(List.of("unshare", "--mount", "--pid", "--fork", "--kill-child",
                "--mount-proc=" + r + "/proc", "sh", "-c",
                "mount -t tmpfs -o mode=1777 tmpfs \"$0/tmp\" && mount -t tmpfs -o mode=1777 tmpfs \"$0/dev/shm\" "
                        + "&& exec chroot --userspec=" + c.get("User").asText() + " \"$@\"", r, r, "/usr/bin/env",
                "-C", c.get("WorkingDir").asText(), "-i"));
        argv.addAll(strings(c.get("Env")));
        argv.addAll(extraEnv);
        argv.addAll(cmd);
        return argv;
    }

    static String inImage(String name, Path root, List<String> env, List<String> cmd, int seconds) throws Exception {
        return run(command(name, root, env, cmd), seconds);
    }

    static Process startInImage(String name, Path root, List<String> env) throws IOException {
        List<String> entry = strings(OPENED.get(name).config().get("config").get("Entrypoint"));
        Path log = WORK.resolve(name + ".log");
        return new ProcessBuilder(command(name, root, env, entry)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
    }

    static void awaitOk(Process p, String url, String expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        String last = "";
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                fail("exited " + p.exitValue() + " before " + url + " answered; log in " + WORK);
            }
            try {
                HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                last = r.statusCode() + " " + r.body();
                if (r.statusCode() == 200 && r.body().contains(expected)) {
                    return;
                }
            } catch (IOException e) {
                last = e.toString();
            }
            Thread.sleep(500);
        }
        fail(url + " not ready in 90 s: " + last);
    }

    /**
     * Stops the service itself: chroot --userspec changes credentials, which clears the parent-death signal that
     * unshare --kill-child relies on, so the service (pid 1 of its namespace) is signalled directly.
     */
    static void stop(Process p) throws InterruptedException {
        List<ProcessHandle> tree = p.descendants().toList();
        tree.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (tree.stream().anyMatch(ProcessHandle::isAlive) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        tree.forEach(ProcessHandle::destroyForcibly);
        p.destroy();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    static byte[] blob(Path oci, JsonNode descriptor) throws Exception {
        Path file = blobPath(oci, descriptor.get("digest").asText());
        assertEquals(descriptor.get("size").asLong(), Files.size(file), "size of " + file);
        try (InputStream in = Files.newInputStream(file)) {
            assertEquals(descriptor.get("digest").asText(), "sha256:" + sha256(in), "digest of " + file);
        }
        return Files.readAllBytes(file);
    }

    static Path blobPath(Path oci, String digest) {
        assertTrue(digest.matches("sha256:[0-9a-f]{64}"), digest);
        return oci.resolve("blobs/sha256/" + digest.substring(7));
    }

    static String sha256(InputStream in) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[1 << 16];
        for (int n; (n = in.read(buf)) > 0; ) {
            md.update(buf, 0, n);
        }
        return HexFormat.of().formatHex(md.digest());
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    static String run(List<String> cmd, int seconds) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(seconds, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            fail(String.join(" ", cmd) + " failed: " + new String(out, StandardCharsets.UTF_8));
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    static void deleteTree(Path dir) throws Exception {
        if (Files.exists(dir)) {
            run(List.of("rm", "-rf", dir.toString()), 120);
        }
    }
}
