package dev.kvpool.agent.store;

import dev.kvpool.agent.io.gds.CuFile;
import dev.kvpool.agent.io.gds.Gds;

/**
 * How the GPU tier reaches the NVMe slot files ({@code kvpool.agent.gds.*}, see data-agent/README.md "GPUDirect
 * Storage").
 *
 * @param mode         auto (cuFile where it works, else the bounce path), on (cuFile or the start fails), off
 * @param library      libcufile to load: a path, or a soname for the loader's search
 * @param maxBatch     ops per cuFileBatchIOSubmit (1 to 1024)
 * @param stagingBytes pinned host staging of the bounce path (both halves)
 */
public record GdsSettings(Gds.Mode mode, String library, int maxBatch, long stagingBytes) {
    public GdsSettings {
        if (maxBatch < 1 || maxBatch > 1024) {
            throw new IllegalArgumentException(Gds.BATCH_PROPERTY + " " + maxBatch + ": 1 to 1024 ops per batch");
        }
        if (library == null || library.isBlank()) {
            library = CuFile.DEFAULT_LIBRARY;
        }
    }

    /** From the system properties (the bench and tests; the agent maps its Quarkus configuration the same way). */
    public static GdsSettings fromSystemProperties() {
        return new GdsSettings(Gds.Mode.parse(System.getProperty(Gds.MODE_PROPERTY)), CuFile.configuredLibrary(),
                Integer.getInteger(Gds.BATCH_PROPERTY, Gds.DEFAULT_MAX_BATCH), 64L << 20);
    }
}
