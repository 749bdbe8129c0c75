package dev.kvpool.api;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds the repository's shared/ folder (spec, data) from wherever the tests run. */
public final class SharedData {

    private SharedData() {
    }

    /** {@code $KVPOOL_SHARED}, else the first {@code <dir>/../shared} with a data/ folder, walking up from user.dir. */
    public static Path sharedDir() {
        String env = System.getenv("KVPOOL_SHARED");
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path shared = dir.resolve("../shared").normalize();
            if (Files.isDirectory(shared.resolve("data"))) {
                return shared;
            }
        }
        throw new IllegalStateException("shared/data not found above " + System.getProperty("user.dir")
                + "; set KVPOOL_SHARED to the shared folder");
    }
}
