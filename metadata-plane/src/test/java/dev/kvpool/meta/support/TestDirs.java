package dev.kvpool.meta.support;

import java.nio.file.Files;
import java.nio.file.Path;

/** Paths the test profiles hand to the metadata plane; the working directory is the module directory. */
public final class TestDirs {
    private TestDirs() {
    }

    /** A file of the repository (the parent of the module directory), which must exist. */
    public static String repoFile(String relative) {
        Path p = Path.of("..").resolve(relative).toAbsolutePath().normalize();
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException("missing " + p + " (tests run from the metadata-plane module directory)");
        }
        return p.toString();
    }

    /** A file of this module's src/test/resources. */
    public static String testResource(String name) {
        Path p = Path.of("src/test/resources").resolve(name).toAbsolutePath().normalize();
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException("missing test resource " + p);
        }
        return p.toString();
    }

    /**
     * A data directory no earlier run used: the index persists, and group quotas and max_instance_count count
     * what earlier runs left, so every Quarkus boot of the suite starts from an empty index.
     */
    public static String freshDataDir(String profile) {
        Path p = Path.of("target", "test-data", profile + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime())
                .toAbsolutePath();
        return p.toString();
    }
}
