package dev.kvpool.meta.runtime;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;
import java.util.Optional;

/** Metadata-plane settings; application.properties maps KVCM's kvcm.service.* keys onto these. */
@ConfigMapping(prefix = "kvpool")
public interface MetaSettings {
    @WithDefault("data")
    String dataDir();

    @WithName("meta.startup-config")
    Optional<String> startupConfig();

    @WithName("meta.node-id")
    Optional<String> nodeId();

    @WithName("meta.advertised-host")
    Optional<String> advertisedHost();

    @WithName("meta.http-port")
    @WithDefault("6382")
    int httpPort();

    @WithName("meta.grpc-port")
    @WithDefault("6381")
    int grpcPort();

    @WithName("meta.index")
    Index index();

    @WithName("meta.write")
    Write write();

    @WithName("meta.reclaim")
    Reclaim reclaim();

    /** "embedded" or "redis". */
    @WithName("meta.store")
    @WithDefault("embedded")
    String store();

    @WithName("meta.redis")
    RedisStore redis();

    interface RedisStore {
        /** Connection string (also quarkus.redis.hosts): redis://host:port/db, rediss:// for TLS. */
        @WithDefault("redis://127.0.0.1:6379")
        String url();

        /** Key prefix: several deployments can share one Redis. */
        @WithDefault("kvp")
        String prefix();

        @WithDefault("5s")
        Duration timeout();

        /** Leader lease: a dead leader is replaced after at most this long. */
        @WithDefault("3s")
        Duration leaseTtl();

        /** How long an abandoned session outlives its deadline in Redis (the leader's expiry normally closes it). */
        @WithDefault("10m")
        Duration sessionGrace();
    }

    @WithName("meta.events")
    Events events();

    interface Reclaim {
        /** Run the reclaimer (on the leader). */
        @WithDefault("true")
        boolean enabled();

        /** Up to this many keys an instance's victims are chosen exactly; above it by sampling. */
        @WithDefault("262144")
        int exactLimit();

        @WithDefault("4096")
        int sampleSize();
    }

    interface Events {
        /** Kafka bootstrap servers for kvpool.cache; unset: no events. */
        Optional<String> bootstrapServers();

        /** Events waiting for the producer; beyond this they are dropped and counted. */
        @WithDefault("65536")
        int queueCapacity();
    }

    interface Index {
        /** Keep the index in a snapshot + journal under the data directory (false: memory only). */
        @WithDefault("true")
        boolean persist();

        @WithDefault("16")
        int shards();

        /** "interval" (fsync every sync-interval; a killed process loses nothing) or "always" (also power loss). */
        @WithDefault("interval")
        String fsync();

        @WithDefault("1s")
        Duration syncInterval();

        @WithDefault("268435456")
        long snapshotBytes();

        /** Per-instance search cache entries (0 = off); KVCM's meta_cache_policy_config. */
        @WithDefault("0")
        int searchCache();
    }

    interface Write {
        @WithDefault("30")
        int defaultTimeoutSeconds();

        @WithDefault("3600")
        int maxTimeoutSeconds();

        /** How often write sessions past their deadline are failed. */
        @WithDefault("250ms")
        Duration expiryPeriod();
    }
}
