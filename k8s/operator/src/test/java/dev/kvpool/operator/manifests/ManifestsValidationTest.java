package dev.kvpool.operator.manifests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Renders every overlay under k8s/overlays with {@code kubectl kustomize} (no cluster, no network) and validates
 * every object against the Kubernetes schemas and, for custom kinds, the CRD schemas (KubeSchemas says exactly what
 * is checked). Also validates what ManifestRenderer writes for the operator (k8s/rendered) and the reference KVPools.
 * kubectl is required: without it this test fails (.ci/run installs it with apt-get).
 */
class ManifestsValidationTest {
    static final Path K8S = Path.of("..").toAbsolutePath().normalize(); // surefire runs in k8s/operator
    static final Path OVERLAYS = K8S.resolve("overlays");
    static final Path CRDS = K8S.resolve("crds");
    /**
     * Kinds of other operators whose schemas no offline source gives us (CloudNativePG's and Strimzi's CRDs are not
     * on Maven Central or npm as files): they are parsed and counted, not validated. Anything else without a schema
     * fails the test.
     */
    static final Set<String> UNVALIDATED_THIRD_PARTY = Set.of(
            "postgresql.cnpg.io/v1/Cluster",
            "kafka.strimzi.io/v1beta2/Kafka", "kafka.strimzi.io/v1beta2/KafkaNodePool",
            "kafka.strimzi.io/v1beta2/KafkaTopic", "kafka.strimzi.io/v1beta2/KafkaUser",
            "kafka.strimzi.io/v1/Kafka", "kafka.strimzi.io/v1/KafkaNodePool",
            "kafka.strimzi.io/v1/KafkaTopic", "kafka.strimzi.io/v1/KafkaUser");
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    static KubeSchemas schemas;

    @BeforeAll
    static void loadSchemas() throws IOException {
        schemas = KubeSchemas.load();
        for (Path crd : crdFiles()) {
            List<String> errors = schemas.addCrd(YAML.readTree(crd.toFile()));
            assertTrue(errors.isEmpty(), crd + ": " + errors);
        }
    }

    @Test
    void everyOverlayRendersAndEveryObjectIsValid() throws Exception {
        List<Path> overlays = overlays();
        assertTrue(overlays.size() >= 2, "k8s/overlays should hold dev and production: " + overlays);
        for (Path overlay : overlays) {
            List<JsonNode> objects = parse(kustomize(overlay));
            assertFalse(objects.isEmpty(), overlay + " renders no object");
            assertValid(K8S.relativize(overlay).toString(), objects);
        }
    }

    @Test
    void theOperatorsRenderedObjectsAndTheReferenceKVPoolsAreValid() throws IOException {
        for (ManifestRenderer.Target t : ManifestRenderer.TARGETS) {
            assertValid(t.input(), parse(Files.readString(K8S.resolve(t.input()))));
            assertValid(t.output(), parse(Files.readString(K8S.resolve(t.output()))));
        }
    }

    @Test
    void theCrdKustomizationListsEveryCrd() throws IOException {
        JsonNode k = YAML.readTree(CRDS.resolve("kustomization.yaml").toFile());
        Set<String> listed = new TreeSet<>();
        k.path("resources").forEach(r -> listed.add(r.asText()));
        Set<String> files = crdFiles().stream().map(p -> p.getFileName().toString())
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(files, listed, "k8s/crds/kustomization.yaml must list exactly the CRD files of k8s/crds");
    }

    @Test
    void devRunsTheMetadataPlaneEmbeddedAndEverySecretItNamesExists() throws Exception {
        List<JsonNode> objects = parse(kustomize(OVERLAYS.resolve("dev")));
        JsonNode mp = find(objects, "Deployment", "kvpool-metadata-plane");
        assertEquals(1, mp.path("spec").path("replicas").asInt());
        Map<String, JsonNode> env = new TreeMap<>();
        mp.at("/spec/template/spec/containers/0/env").forEach(e -> env.put(e.path("name").asText(), e));
        assertEquals("embedded", env.get("KVPOOL_META_STORE").path("value").asText());
        assertFalse(env.containsKey("KVPOOL_REDIS_URL"), "dev has no Redis");
        assertFalse(env.containsKey("KVPOOL_KAFKA_BOOTSTRAP"), "dev has no Kafka");
        assertTrue(objects.stream().noneMatch(o -> o.path("kind").asText().startsWith("Kafka")), "dev has no Kafka");
        Set<String> secrets = objects.stream().filter(o -> "Secret".equals(o.path("kind").asText()))
                .map(o -> o.path("metadata").path("name").asText()).collect(Collectors.toSet());
        List<String> dangling = new ArrayList<>();
        for (JsonNode o : objects) {
            o.findValues("secretKeyRef").forEach(r -> {
                if (!secrets.contains(r.path("name").asText())) {
                    dangling.add(o.path("metadata").path("name").asText() + " -> " + r.path("name").asText());
                }
            });
        }
        assertEquals(List.of(), dangling, "dev must run as applied: every Secret it reads is in the overlay");
        Set<String> namespaces = objects.stream().map(o -> o.path("metadata").path("namespace").asText())
                .filter(n -> !n.isEmpty()).collect(Collectors.toSet());
        assertEquals(Set.of("kvpool-dev"), namespaces, "dev runs in one namespace");
        List<String> operatorManaged = objects.stream()
                .filter(o -> "kvpool-operator".equals(o.at("/metadata/labels/app.kubernetes.io~1managed-by").asText())
                        || "kvpool-operator".equals(o.at("/spec/template/metadata/labels/app.kubernetes.io~1managed-by").asText()))
                .map(o -> o.path("kind").asText() + "/" + o.path("metadata").path("name").asText()).toList();
        assertEquals(List.of(), operatorManaged, "the operator's Applier prunes by that label: dev's objects are kubectl's");
    }

    // ---- the validation can fail: broken objects are rejected ---------------------------------------------------

    @Test
    void anUnknownFieldIsRejected() throws IOException {
        assertRejected(DEPLOYMENT.replace("  replicas: 1", "  replicas: 1\n  replica: 1"), "replica");
        // deep inside the pod template, where a typo is easiest to miss
        assertRejected(DEPLOYMENT.replace("image: example/app:1", "image: example/app:1\n        imagePullPolicyy: Always"),
                "imagePullPolicyy");
    }

    @Test
    void aWrongTypeIsRejected() throws IOException {
        assertRejected(DEPLOYMENT.replace("replicas: 1", "replicas: two"), "replicas");
    }

    @Test
    void aMissingRequiredFieldIsRejected() throws IOException {
        assertRejected(DEPLOYMENT.replace("- name: app\n        image:", "- image:"), "name");
    }

    @Test
    void theValidDeploymentOfTheseNegativeTestsPasses() throws IOException {
        KubeSchemas.Result r = schemas.validate(YAML.readTree(DEPLOYMENT));
        assertTrue(r.checked() && r.errors().isEmpty(), r.toString());
    }

    @Test
    void anInvalidKVPoolIsRejected() throws IOException {
        String pool = """
                apiVersion: kvpool.dev/v1alpha1
                kind: KVPool
                metadata: {name: p}
                spec:
                  engines:
                    postgres: {secretRef: {name: pg}}
                    kafka: {bootstrap: "k:9092"}
                    redis: {urlSecretRef: {name: r, key: url}}
                """;
        KubeSchemas.Result ok = schemas.validate(YAML.readTree(pool.replace("spec:\n", "spec:\n  version: '1'\n")));
        assertTrue(ok.checked() && ok.errors().isEmpty(), ok.toString());
        assertRejected(pool, "version"); // spec.version is required
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n  metadataPlane: {replicas: 0}\n"), "replicas");
        // control-plane replicas elect a leader over PostgreSQL: several are valid, up to the bound
        KubeSchemas.Result three = schemas.validate(YAML.readTree(pool.replace("spec:\n",
                "spec:\n  version: '1'\n  controlPlane: {replicas: 3}\n")));
        assertTrue(three.checked() && three.errors().isEmpty(), three.toString());
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n  controlPlane: {replicas: 10}\n"), "replicas");
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n  controlPlane: {replicas: 0}\n"), "replicas");
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n  enginez: {}\n"), "enginez");
        // both an existing database and a managed one: only the CRD's CEL rule refuses it
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n")
                .replace("postgres: {secretRef: {name: pg}}", "postgres: {secretRef: {name: pg}, managed: {}}"),
                "set exactly one of secretRef and managed");
        assertRejected(pool.replace("spec:\n", "spec:\n  version: '1'\n")
                .replace("kafka: {bootstrap: \"k:9092\"}", "kafka: {secretRef: {name: k}, managed: {}}"),
                "secretRef goes with bootstrap");
    }

    @Test
    void anInstanceGroupOutOfRangeIsRejected() throws IOException {
        String group = """
                apiVersion: kvpool.dev/v1alpha1
                kind: KVPoolInstanceGroup
                metadata: {name: g}
                spec: {pool: kvpool, quotaBytes: 1024, storageCandidates: [nfs], waterLevels: {soft: 80, hard: 120}}
                """;
        assertRejected(group, "hard");
        // soft > hard passes the schema, but not the CRD's CEL rule
        assertRejected(group.replace("hard: 120", "hard: 60"), "soft must not exceed hard");
        KubeSchemas.Result ok = schemas.validate(YAML.readTree(group.replace("hard: 120", "hard: 95")));
        assertTrue(ok.checked() && ok.errors().isEmpty(), ok.toString());
        assertRejected(group.replace("quotaBytes: 1024", "quotaBytes: lots"), "quotaBytes");
        // a group must name its pool
        assertRejected(group.replace("pool: kvpool, ", "").replace("hard: 120", "hard: 95"), "pool");
    }

    @Test
    void aKindWithoutSchemaIsReportedNotPassed() throws IOException {
        KubeSchemas.Result r = schemas.validate(YAML.readTree("""
                apiVersion: example.com/v1
                kind: Widget
                metadata: {name: w}
                """));
        assertFalse(r.checked());
        assertFalse(r.errors().isEmpty());
    }

    static final String DEPLOYMENT = """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              replicas: 1
              selector: {matchLabels: {app: d}}
              template:
                metadata: {labels: {app: d}}
                spec:
                  containers:
                  - name: app
                    image: example/app:1
                    resources: {requests: {cpu: 1, memory: 64Mi}}
                    ports: [{containerPort: 80}]
                    readinessProbe: {httpGet: {path: /, port: http}}
            """;

    private static void assertRejected(String yaml, String expectedInMessage) throws IOException {
        KubeSchemas.Result r = schemas.validate(YAML.readTree(yaml));
        assertTrue(r.checked(), "validated against a schema: " + r);
        assertFalse(r.errors().isEmpty(), "should be rejected: " + yaml);
        assertTrue(r.errors().stream().anyMatch(e -> e.contains(expectedInMessage)),
                "a message should name " + expectedInMessage + ": " + r.errors());
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    private static void assertValid(String source, List<JsonNode> objects) {
        List<String> problems = new ArrayList<>();
        int unvalidated = 0;
        for (JsonNode o : objects) {
            KubeSchemas.Result r = schemas.validate(o);
            String kindKey = o.path("apiVersion").asText() + "/" + o.path("kind").asText();
            if (!r.checked() && UNVALIDATED_THIRD_PARTY.contains(kindKey)) {
                unvalidated++;
                continue; // documented in k8s/overlays/README.md
            }
            r.errors().forEach(e -> problems.add(r.object() + ": " + e));
        }
        System.out.printf("%s: %d objects, %d validated against a schema, %d third-party not validated%n",
                source, objects.size(), objects.size() - unvalidated, unvalidated);
        if (!problems.isEmpty()) {
            fail(source + ": " + problems.size() + " schema violation(s):\n  " + String.join("\n  ", problems));
        }
    }

    static List<JsonNode> parse(String yaml) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(yaml)) {
            while (it.hasNext()) {
                JsonNode n = it.next();
                if (n != null && !n.isNull() && !n.isMissingNode()) {
                    out.add(n);
                }
            }
        }
        return out;
    }

    private static JsonNode find(List<JsonNode> objects, String kind, String name) {
        JsonNode found = objects.stream().filter(o -> kind.equals(o.path("kind").asText())
                && name.equals(o.path("metadata").path("name").asText())).findFirst().orElse(null);
        assertNotNull(found, kind + "/" + name + " missing");
        return found;
    }

    static List<Path> overlays() throws IOException {
        try (Stream<Path> s = Files.list(OVERLAYS)) {
            return s.filter(p -> Files.isRegularFile(p.resolve("kustomization.yaml"))).sorted().toList();
        }
    }

    static List<Path> crdFiles() throws IOException {
        try (Stream<Path> s = Files.list(CRDS)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".kvpool.dev-v1.yml")).sorted().toList();
        }
    }

    /** kubectl from $KUBECTL, /usr/bin/kubectl or the PATH; the test fails without it. */
    static String kubectl() {
        String env = System.getenv("KUBECTL");
        if (env != null && Files.isExecutable(Path.of(env))) {
            return env;
        }
        List<String> dirs = new ArrayList<>(List.of("/usr/bin", "/usr/local/bin"));
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(File.pathSeparator)));
        }
        for (String d : dirs) {
            Path p = Path.of(d, "kubectl");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        fail("kubectl is not installed: the overlays cannot be rendered. Install it (apt-get install kubectl; "
                + ".ci/run does) or point $KUBECTL at it.");
        return null;
    }

    static String kustomize(Path dir) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(kubectl(), "kustomize", dir.toString()).start();
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
        CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("kubectl kustomize " + dir + " did not finish in 120 s");
        }
        String stderr = new String(err.join(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), "kubectl kustomize " + dir + " failed: " + stderr);
        return new String(out.join(), StandardCharsets.UTF_8);
    }

    private static byte[] readAll(InputStream in) {
        try (in; ByteArrayOutputStream b = new ByteArrayOutputStream()) {
            in.transferTo(b);
            return b.toByteArray();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
