package dev.kvpool.meta.store.embedded;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** The embedded index store ({@code kvpool.meta.store=embedded}, the default). */
@ConfigMapping(prefix = "kvpool.meta.index")
public interface EmbeddedSettings {
    /** When the embedded index's journal is forced to disk ({@code interval} or {@code always}). */
    enum Fsync {
        /**
         * Each append reaches the OS before the call returns (a killed process loses nothing); fsync every
         * sync-interval.
         */
        INTERVAL,
        /** fsync before the call returns (also survives power loss). */
        ALWAYS
    }

    /** Keep the index in a snapshot + journal under the data directory (false: memory only). */
    @WithDefault("true")
    boolean persist();

    /** Lock shards per instance index (a power of two). */
    @WithDefault("16")
    int shards();

    /** When the journal is forced to disk. */
    @WithDefault("interval")
    Fsync fsync();

    /** How often the journal is forced to disk with fsync {@code interval}. */
    @WithDefault("1s")
    Duration syncInterval();

    /**
     * The largest the journal grows before a new snapshot is written (sooner once it passes a quarter of the last
     * snapshot, 16 MiB at least; also on a clean close).
     */
    @WithDefault("268435456")
    long snapshotBytes();

    /**
     * Per-instance LRU search cache entries in front of the index (0 = off); KVCM's meta_cache_policy_config.
     * The embedded index is itself in memory, so it is overhead unless lookups repeat a few hot keys; hit ratio in
     * {@code kvpool_meta_search_cache_hit_ratio}.
     */
    @WithDefault("0")
    int searchCache();
}
