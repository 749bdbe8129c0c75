package dev.kvpool.operator.crd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.JSONSchemaProps;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What the API server checks on spec.dataAgent, spec.network and spec.monitoring, read from the checked-in CRD: the
 * host-path patterns refuse relative paths and "." / ".." segments, lists are bounded, the defaults are the safe
 * ones (not privileged, RuntimeDefault seccomp, no prometheus-operator objects).
 */
class DataAgentCrdTest {
    static JSONSchemaProps spec() throws IOException {
        CustomResourceDefinition crd = Serialization.unmarshal(
                Files.readString(Path.of("..", "crds", "kvpools.kvpool.dev-v1.yml")), CustomResourceDefinition.class);
        return crd.getSpec().getVersions().getFirst().getSchema().getOpenAPIV3Schema().getProperties().get("spec");
    }

    static final List<String> BAD = List.of("relative/dir", "/", "/mnt/../etc", "/mnt/./x", "/..", "/mnt//x",
            "/mnt/x y", "/mnt/$(id)", "");
    static final List<String> GOOD = List.of("/mnt/nvme0", "/mnt/nvme0/kvpool/", "/dev/shm/kvpool", "/x/..y", "/a/.b");

    @Test
    void hostPathsAreAbsoluteWithoutDotSegments() throws IOException {
        JSONSchemaProps agent = spec().getProperties().get("dataAgent");
        List<JSONSchemaProps> paths = List.of(
                agent.getProperties().get("shmHostPath"),
                agent.getProperties().get("nvmeDirs").getItems().getSchema().getProperties().get("hostPath"),
                agent.getProperties().get("poolStorageRoots").getItems().getSchema().getProperties().get("path"));
        for (JSONSchemaProps p : paths) {
            assertEquals(255L, p.getMaxLength());
            Pattern re = Pattern.compile(p.getPattern());
            BAD.forEach(s -> assertFalse(re.matcher(s).find(), "accepted: " + s));
            GOOD.forEach(s -> assertTrue(re.matcher(s).find(), "refused: " + s));
        }
        assertEquals(16L, agent.getProperties().get("nvmeDirs").getMaxItems());
        assertEquals(8L, agent.getProperties().get("poolStorageRoots").getMaxItems());
        assertEquals(2, agent.getProperties().get("nvmeDirs").getItems().getSchema().getXKubernetesValidations().size());
        Pattern rel = Pattern.compile(agent.getProperties().get("seccompLocalhostProfile").getPattern());
        assertTrue(rel.matcher("profiles/kvpool-io-uring.json").find());
        for (String s : List.of("/etc/x.json", "../x", "a/../b", "a//b")) {
            assertFalse(rel.matcher(s).find(), s);
        }
    }

    @Test
    void defaultsAreTheSafeOnes() throws IOException {
        JSONSchemaProps agent = spec().getProperties().get("dataAgent");
        assertEquals("false", agent.getProperties().get("privileged").getDefault().asText());
        assertEquals("false", agent.getProperties().get("lockMemory").getDefault().asText());
        assertEquals("RuntimeDefault", agent.getProperties().get("seccompProfile").getDefault().asText());
        assertEquals(java.util.Set.of("RuntimeDefault", "Unconfined", "Localhost"), agent.getProperties().get("seccompProfile")
                .getEnum().stream().map(n -> n.asText()).collect(java.util.stream.Collectors.toSet()));
        assertEquals(16.0, agent.getProperties().get("gpus").getMaximum());
        assertTrue(agent.getXKubernetesValidations().getFirst().getRule().contains("Localhost"));
        JSONSchemaProps monitoring = spec().getProperties().get("monitoring");
        assertEquals("false", monitoring.getProperties().get("serviceMonitor").getDefault().asText());
        assertEquals("false", monitoring.getProperties().get("prometheusRule").getDefault().asText());
        JSONSchemaProps network = spec().getProperties().get("network");
        assertEquals("true", network.getProperties().get("policies").getDefault().asText());
        for (String peers : List.of("engines", "adminFrom", "operatorFrom", "monitoringFrom")) {
            assertEquals(16L, network.getProperties().get(peers).getMaxItems(), peers);
        }
    }
}
