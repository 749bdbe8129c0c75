package dev.kvpool.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;

/**
 * What the build's {@code native-sources} execution (Quarkus' native build steps, {@code sources-only}) left in
 * {@code target/native-sources/}: the input a native-image builder gets. Checks that the agent's flags reach its
 * argument list and its reachability metadata and JCuda natives reach its class path, and that the JVM packaging
 * beside it is intact.
 * Off with {@code -Dkvpool.native-sources.skip=true}, which skips that execution.
 */
@DisabledIfSystemProperty(named = "kvpool.native-sources.skip", matches = "true")
class NativeSourcesIT {
    static final Path TARGET = Path.of(System.getProperty("kvpool.build.directory", "target"));
    static final Path SOURCES = TARGET.resolve("native-sources");

    static List<String> args() throws IOException {
        Path f = SOURCES.resolve("native-image.args");
        assertTrue(Files.isRegularFile(f), f + " missing: did the native-sources execution run?");
        return Arrays.asList(Files.readString(f).strip().split(" "));
    }

    @Test
    void argumentsCarryTheAgentsFlags() throws IOException {
        List<String> args = args();
        assertTrue(args.contains("--enable-native-access=ALL-UNNAMED"), "FFM needs native access: " + args);
        int foreign = args.indexOf("-H:+ForeignAPISupport");
        assertTrue(foreign > 0 && args.get(foreign - 1).equals("-H:+UnlockExperimentalVMOptions"),
                "foreign support, as an unlocked experimental option: " + args);
        for (String c : NativeImageMetadataTest.runTimeInitialized()) {
            assertTrue(args.contains("--initialize-at-run-time=" + c), "run-time initialization of " + c + ": " + args);
        }
        assertTrue(args.stream().anyMatch(a -> a.startsWith("--features=io.quarkus.runner.Feature")),
                "Quarkus' generated feature (its build steps ran): " + args);
        String runner = args.get(args.size() - 1);
        assertEquals("-jar", args.get(args.size() - 2));
        assertTrue(runner.matches("kvpool-data-agent-.*-runner\\.jar") && Files.isRegularFile(SOURCES.resolve(runner)),
                "the runner jar the builder is given: " + runner);
    }

    @Test
    void theRunnerJarCarriesTheMetadataAndTheClassPathTheJCudaNatives() throws IOException {
        String runner = args().get(args().size() - 1);
        byte[] built = Files.readAllBytes(TARGET.resolve("classes").resolve(NativeImageMetadataTest.METADATA));
        try (JarFile jar = new JarFile(SOURCES.resolve(runner).toFile())) {
            ZipEntry e = jar.getEntry(NativeImageMetadataTest.METADATA);
            assertNotNull(e, NativeImageMetadataTest.METADATA + " is not in " + runner);
            try (InputStream in = jar.getInputStream(e)) {
                assertArrayEquals(built, in.readAllBytes(), "the runner jar's metadata differs from target/classes");
            }
            // the runner's manifest class path is what native-image puts on its class path
            String cp = jar.getManifest().getMainAttributes().getValue("Class-Path");
            assertNotNull(cp, "no Class-Path in " + runner);
            String natives = Arrays.stream(cp.split(" ")).filter(p -> p.contains("jcuda-natives")).findFirst()
                    .orElseThrow(() -> new AssertionError("jcuda-natives is not on the runner's class path: " + cp));
            try (JarFile nj = new JarFile(SOURCES.resolve(natives).toFile())) {
                assertNotNull(nj.getEntry(NativeImageMetadataTest.jcudaRuntimeResource()),
                        NativeImageMetadataTest.jcudaRuntimeResource() + " is not in " + natives);
            }
        }
    }

    @Test
    void theJvmPackagingIsUntouched() throws IOException {
        assertTrue(Files.isRegularFile(TARGET.resolve("quarkus-app/quarkus-run.jar")),
                "the JVM build's quarkus-app/quarkus-run.jar (the kvpool script and the console's tests run it)");
        assertTrue(Files.readString(TARGET.resolve("quarkus-artifact.properties")).contains("type=jar"),
                "quarkus-artifact.properties describes the JVM build, not the native sources");
    }
}
