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
        Path root = Path.of("target", "test-data").toAbsolutePath();
        removeLeftovers(root);
        return root.resolve(profile + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime()).toString();
    }

    /** Deletes the run directories of test JVMs that are gone (the name carries the pid). */
    private static void removeLeftovers(Path root) {
        if (!Files.isDirectory(root)) {
            return;
        }
        try (var dirs = Files.list(root)) {
            for (Path d : dirs.toList()) {
                String[] parts = d.getFileName().toString().split("-");
                if (parts.length != 3 || !parts[1].matches("\\d+")) {
                    continue;
                }
                long pid = Long.parseLong(parts[1]);
                if (pid != ProcessHandle.current().pid() && ProcessHandle.of(pid).isEmpty()) {
                    try (var tree = Files.walk(d)) {
                        for (Path f : tree.sorted(java.util.Comparator.reverseOrder()).toList()) {
                            Files.deleteIfExists(f);
                        }
                    }
                }
            }
        } catch (java.io.IOException e) {
            // leftovers only cost disk space
        }
    }
}
