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

    /**
     * The largest body a KVCM meta HTTP call may send (413 beyond it). The body is read as it arrives, so a client
     * that only declares a large Content-Length holds no more than 64 KiB until its bytes come.
     */
    @WithName("meta.http.max-body-bytes")
    @WithDefault("67108864")
    long maxBodyBytes();

    /**
     * How long a request body may stop arriving before api's HttpGuard answers 408 and closes the connection, on every
     * route of this port (read there; declared here so the key is known to this mapping).
     */
    @WithName("http.body-timeout")
    @WithDefault("30s")
    Duration bodyTimeout();

    @WithName("meta.index")
    Index index();

    /** TLS/SASL settings of every Kafka client: a directory with one file per property (KafkaClientConfig). */
    @WithName("kafka.client-config-dir")
    Optional<String> kafkaClientConfigDir();

    /**
     * How long start-up keeps the HTTP and gRPC ports closed while it recovers (waits for another replica's rebuild,
     * rebuilds usage and slots from the index, sweeps for a lost replica's leftovers). A quick start opens them
     * ready; a longer one opens them after this, answers health probes (/q/health/started DOWN with progress until
     * recovery ends) and KVCM calls with SERVER_NOT_LEADER, as a KVCM leader does until it has recovered.
     */
    @WithName("meta.start.ports-wait")
    @WithDefault("5s")
    Duration portsWait();

    @WithName("meta.write")
    Write write();

    @WithName("meta.reclaim")
    Reclaim reclaim();

    @WithName("meta.files")
    FileStorage files();

    /** Files of file-type storages (file, hf3fs) that hold no block. */
    interface FileStorage {
        /** How often the leader sweeps them away (0: only on request, POST /api/v1/storage/sweeps). */
        @WithDefault("1h")
        Duration sweepInterval();

        /**
         * Such a file is kept until it has not been written for this long (a writer past its deadline may still
         * be at work); at least the longest write timeout plus a minute.
         */
        @WithDefault("1h")
        Duration orphanAge();
    }

    /** Where the index, usage ledger, file slots, sessions and leader lease live. */
    @WithName("meta.store")
    @WithDefault("embedded")
    StoreKind store();

    /**
     * The index store's kinds; written in lower case ({@code embedded}, {@code redis}): SmallRye Config's enum
     * converter matches any case and hyphenated names.
     */
    enum StoreKind {
        /** In this process: snapshot + journal under the data directory; one replica. */
        EMBEDDED,
        /** In Redis/Valkey, shared by any number of replicas. */
        REDIS
    }

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

        /**
         * The most keys one background command (HSCAN, HRANDFIELD of eviction, expiry and sweeps) asks for. Redis
         * serves no other client while it runs one, at about a microsecond per key: this bounds that stall.
         */
        @WithDefault("1000")
        int pageSize();

        /** Leader lease: a dead leader is replaced after at most this long. */
        @WithDefault("3s")
        Duration leaseTtl();

        /**
         * How long an abandoned session outlives its deadline in Redis (the leader's expiry normally closes it at
         * its deadline). Long, so that a replica back after every replica was down still closes it properly;
         * only an outage longer than this leaves orphans for the sweep. Costs nothing while a replica runs.
         */
        @WithDefault("24h")
        Duration sessionGrace();

        /**
         * A finish on the replica that started the session, of at least this many keys, is written with native
         * commands under WATCH: a round trip more, ~1 µs of Redis' time less per key than the script (whose
         * arguments all pass through Lua). 0: always the script.
         */
        @WithDefault("128")
        int nativeFinishKeys();

        /**
         * Read hits (access time, LFU counter) are buffered and applied this often, each key once with its count:
         * eviction may see an access up to this late.
         */
        @WithDefault("100ms")
        Duration touchInterval();

        /** Block keys that may wait for their access-time update; beyond it hits are dropped and counted. */
        @WithDefault("1000000")
        long touchBuffer();

        /**
         * How often every replica checks its instances against Redis: removed by another replica (forgotten here),
         * or lost with Redis' data (written again with a new empty index). One HGETALL of the instance records.
         */
        @WithDefault("2s")
        Duration reconcileInterval();

        /**
         * Keep a local copy of the served locations of every instance, fed by a change stream in Redis, so that
         * getCacheLocation answers without a Redis round trip (standalone or cluster; on a cluster each instance is
         * read from its slot's node). Costs heap (39–77 bytes per served block in every replica), one thread, and
         * one stream entry per finish and delete batch in Redis (a written block cost about the same with and
         * without it on 2 shared cores); a new block may be a miss on other replicas for up to
         * {@link #mirrorMaxLag}.
         */
        @WithDefault("false")
        boolean mirror();

        /**
         * The copy answers only while it is provably at most this far behind Redis; deleters of every replica add
         * it to the reader lease (the largest value any replica of the deployment uses, kept in Redis).
         */
        @WithDefault("50ms")
        Duration mirrorMaxLag();

        /**
         * After this long without a read of the copy and without a change to apply, the copy polls Redis only every
         * 250 ms (its max lag, if longer) instead of every quarter of its max lag, until the next read wakes it;
         * that read goes to Redis. 0: never.
         */
        @WithDefault("1s")
        Duration mirrorIdleAfter();
    }

    @WithName("meta.events")
    Events events();

    @WithName("meta.control-plane")
    ControlPlane controlPlane();

    @WithName("meta.auth")
    Auth auth();


    /** Where configuration comes from: the control plane's snapshot and its kvpool.config topic. */
    interface ControlPlane {
        /** Base URL, e.g. http://127.0.0.1:6492; unset: configuration from the startup file, no sync. */
        Optional<String> url();

        /** Operator (or admin) credentials used to obtain bearer tokens. */
        Optional<String> user();

        Optional<String> password();

        /** A ready-made bearer token instead of user/password (not refreshed). */
        Optional<String> token();

        /** Kafka for kvpool.config; default: kvpool.meta.events.bootstrap-servers. */
        Optional<String> kafkaBootstrap();

        /** Full re-read of the snapshot. */
        @WithDefault("5m")
        Duration resync();

        /**
         * A KVCM call naming a group or instance this plane does not know waits at most this long for fresh
         * configuration from the control plane (issue 34); past it the call answers SERVICE_NOT_READY.
         */
        @WithDefault("2s")
        Duration freshWait();

        /** At least this long between two such fetches, whoever asks (protects the control plane). */
        @WithDefault("200ms")
        Duration freshMinInterval();

        /** A name such a fetch did not find is answered as missing without another fetch for this long. */
        @WithDefault("1s")
        Duration freshNegativeTtl();

        /** At most this many names are kept as missing (the oldest are dropped). */
        @WithDefault("10000")
        int freshNegativeMax();

        /**
         * How often the leader posts usage samples, and every replica its stats (POST /api/v1/stats: what it served
         * per instance since its last accepted report).
         */
        @WithDefault("30s")
        Duration usagePeriod();

        /**
         * How long stats the control plane has not accepted (it is down, or refuses) are carried into the next
         * report; past this they are dropped rather than posted as one spike.
         */
        @WithDefault("1h")
        Duration statsCarry();

        /** Per HTTP call to the control plane. */
        @WithDefault("10s")
        Duration timeout();
    }

    interface Auth {
        /**
         * Base64 X.509 Ed25519 public key pinned to verify every token (any kid; no rotation, no revocation feed
         * unless the control plane is configured); default: the control plane's JWKS.
         */
        Optional<String> publicKey();

        /** The iss the control plane's tokens carry (its kvpool.control.token-issuer). */
        @WithDefault("kvpool")
        String issuer();

        /** How often the JWKS is refetched (besides on a token with an unknown kid). */
        @WithDefault("5m")
        Duration jwksRefresh();

        /** The least time between two fetches caused by unknown kids. */
        @WithDefault("1s")
        Duration jwksMinRefetch();

        /** How often the control plane's token revocations are polled. */
        @WithDefault("1s")
        Duration revocationPoll();
    }

    interface Reclaim {
        /** Run the reclaimer (on the leader). */
        @WithDefault("true")
        boolean enabled();

        /** Up to this many keys an instance's victims are chosen exactly; above it by sampling. */
        @WithDefault("262144")
        int exactLimit();

        @WithDefault("4096")
        int sampleSize();

        /**
         * LRU/TTL (exact) and PREFIX_LRU: at most this many of an instance's oldest keys kept from one pass for the
         * next rounds (a pass keeps 256 rounds' worth or a sixteenth of the index; 16 bytes of heap each).
         */
        @WithDefault("8388608")
        int queueLimit();

        /** Shared store: an index larger than this is passed over this many keys per round (0: in one go). */
        @WithDefault("65536")
        int passPage();

        /**
         * Share of the time the reclaimer may work while it has work (evicting, expiring, sweeping): after a busy
         * round of t ms it pauses t × (1 − share) / share. 1 runs back to back; lower leaves Redis to the engines'
         * lookups, at the price of slower recovery. No pause while a group that evicted is at 95 % of a hard
         * limit: there writes are about to be refused.
         */
        @WithDefault("1.0")
        double dutyCycle();

        /**
         * How often the leader recounts each group's usage from its index and compares it with the ledger (the
         * usage invariant; a difference confirmed by two quiet audits in a row is logged and counted). 0 turns it
         * off. Each audit reads every index of the group: on a large Redis-backed pool, lengthen it.
         */
        @WithDefault("15m")
        java.time.Duration usageAudit();
    }

    interface Events {
        /** Kafka bootstrap servers for kvpool.cache; unset: no events. */
        Optional<String> bootstrapServers();

        /** Events waiting for the producer; beyond this they are dropped and counted. */
        @WithDefault("65536")
        int queueCapacity();
    }

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

    interface Index {
        /** Keep the index in a snapshot + journal under the data directory (false: memory only). */
        @WithDefault("true")
        boolean persist();

        @WithDefault("16")
        int shards();

        /** When the journal is forced to disk. */
        @WithDefault("interval")
        Fsync fsync();

        @WithDefault("1s")
        Duration syncInterval();

        @WithDefault("268435456")
        long snapshotBytes();

        /** Per-instance search cache entries (0 = off); KVCM's meta_cache_policy_config. */
        @WithDefault("0")
        int searchCache();

        /**
         * Instances whose index the first replica of a cold start reads at once (usage, file slots, interrupted
         * deletions); it serves once every one has been read.
         */
        @WithDefault("4")
        int recoveryThreads();
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
