package dev.kvpool.engine.event;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds the repository's shared/ folder (spec, data) from wherever the tests run (as api's SharedData). */
public final class SharedData {

    private SharedData() {
    }

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
