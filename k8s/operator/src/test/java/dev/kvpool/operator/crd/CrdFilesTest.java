package dev.kvpool.operator.crd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.crdv2.generator.CRDGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * k8s/crds/ is generated, never edited by hand (Strimzi's install/DO_NOT_EDIT.md contract). The build generates the
 * CRDs into target/kubernetes (quarkus:build, package phase, after the tests); this test runs the same fabric8
 * CRDGenerator on the same classes and fails while the checked-in files differ, or when target/kubernetes holds a
 * CRD (from an earlier package) that differs from k8s/crds.
 */
class CrdFilesTest {
    static final String REFRESH = "./mvnw -B package -pl k8s/operator -am -DskipTests -Pupdate-crds";
    static final List<Class<?>> RESOURCES =
            List.of(KVPool.class, KVPoolStorage.class, KVPoolInstanceGroup.class, KVPoolTenant.class);
    static final Path CHECKED_IN = Path.of("..", "crds"); // surefire runs in k8s/operator
    static final Path BUILD_OUTPUT = Path.of("target", "kubernetes");

    @Test
    void checkedInCrdsAreWhatTheGeneratorWrites(@TempDir Path out) throws IOException {
        new CRDGenerator()
                .customResourceClasses(RESOURCES.toArray(Class[]::new))
                .forCRDVersions("v1")
                .inOutputDir(out.toFile())
                .generate();
        Set<String> generated = crdFiles(out);
        assertEquals(RESOURCES.size(), generated.size(), "one CRD per custom resource: " + generated);
        assertEquals(generated, crdFiles(CHECKED_IN),
                "k8s/crds/ holds other CRD files than the generator writes; refresh them with: " + REFRESH);
        for (String f : generated) {
            assertEquals(Files.readString(out.resolve(f)), Files.readString(CHECKED_IN.resolve(f)),
                    "k8s/crds/" + f + " differs from the generated CRD (never edit it by hand); refresh with: " + REFRESH);
        }
    }

    @Test
    void buildOutputMatchesCheckedInWhenPresent() throws IOException {
        if (!Files.isDirectory(BUILD_OUTPUT)) {
            return; // first build: quarkus:build has not run yet
        }
        for (String f : crdFiles(BUILD_OUTPUT)) {
            assertTrue(Files.exists(CHECKED_IN.resolve(f)), "k8s/crds/" + f + " is missing; refresh with: " + REFRESH);
            assertEquals(Files.readString(BUILD_OUTPUT.resolve(f)), Files.readString(CHECKED_IN.resolve(f)),
                    "k8s/crds/" + f + " differs from target/kubernetes/" + f + "; refresh with: " + REFRESH);
        }
    }

    private static Set<String> crdFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".kvpool.dev-v1.yml"))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }
}
