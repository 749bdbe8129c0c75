package dev.kvpool.meta.runtime;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;
import java.util.Optional;

/**
 * Metadata-plane settings; application.properties maps KVCM's kvcm.service.* keys onto these. Their reference,
 * docs/configuration.md, is generated from this Javadoc (ConfigurationReferenceTest).
 */
@ConfigMapping(prefix = "kvpool")
public interface MetaSettings {
    /**
     * The index snapshot + journal (locked while a plane has it open: a second plane on the same directory refuses
     * to start), what-if traces, and the default file storage.
     */
    @WithDefault("data")
    String dataDir();

    /**
     * The storages and groups file used without a control plane ("Storages and instance groups without the control
     * plane"); unset: KVCM's default group and file storage, rooted under the data directory.
     */
    @WithName("meta.startup-config")
    Optional<String> startupConfig();

    /** This replica's name in the leader lease and GetClusterInfo; default: advertised host:HTTP port_random. */
    @WithName("meta.node-id")
    Optional<String> nodeId();

    /** The host GetClusterInfo advertises; default: the first non-loopback IPv4 address. */
    @WithName("meta.advertised-host")
    Optional<String> advertisedHost();

    /** KVCM's meta HTTP port: KVCM routes, the KVPool REST API, metrics (/q/metrics) and health (/q/health). */
    @WithName("meta.http-port")
    @WithDefault("6382")
    int httpPort();

    /** KVCM's meta gRPC port (also the DebugService's). */
    @WithName("meta.grpc-port")
    @WithDefault("6381")
    int grpcPort();

    /**
     * The largest body a KVCM meta HTTP call may send (413 beyond it). The body is read as it arrives, so a client
     * that only declares a large Content-Length holds no more than 64 KiB until its bytes come (docs/security.md).
     */
    @WithName("meta.http.max-body-bytes")
    @WithDefault("67108864")
    long maxBodyBytes();

    /**
     * How long a request body may stop arriving before api's HttpGuard answers 408 and closes the connection, on every
     * route of this port (read there; declared here so the key is known to this mapping; docs/security.md).
     */
    @WithName("http.body-timeout")
    @WithDefault("30s")
    Duration bodyTimeout();

    /**
     * Instances whose index the first replica of a cold start reads at once (usage, file slots, interrupted
     * deletions); it serves once every one has been read. Together they hold at most half the heap (~24 bytes a
     * block while read); a larger instance is read alone.
     */
    @WithName("meta.index.recovery-threads")
    @WithDefault("4")
    int recoveryThreads();

    /** TLS/SASL settings of every Kafka client: a directory with one file per property (KafkaClientConfig). */
    @WithName("kafka.client-config-dir")
    Optional<String> kafkaClientConfigDir();

    /**
     * The longest start-up keeps the HTTP and gRPC ports closed while it opens and recovers (loads the embedded
     * index, its progress shown by /q/health/started; waits for another replica's rebuild or runs one: usage and
     * slots from the index, a lost replica's leftovers). A quick start opens them ready; once the index is loaded
     * and the rebuild has not ended within a second, or past this wait, they open: lookups (GetCacheLocation and the
     * other reads) are answered from the loaded index, /q/health/live UP, /q/health/started and /q/health/ready DOWN
     * with start_phase and the load's or rebuild's progress until recovery ends, other KVCM calls SERVER_NOT_LEADER
     * (what a KVCM leader answers until it has recovered; connectors retry) except GetClusterInfo, which answers OK
     * with no leader endpoint yet, /api/v1 503. On Kubernetes point the startupProbe at /q/health/started.
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
        /** How often the leader sweeps them away (0: only on request, {@code POST /api/v1/storage/sweeps}). */
        @WithDefault("1h")
        Duration sweepInterval();

        /**
         * Such a file is deleted only once it has not been written for this long (a writer past its deadline may
         * still be at work); at least max-timeout-seconds plus a minute.
         */
        @WithDefault("1h")
        Duration orphanAge();
    }

    /**
     * Where the index, usage ledger, file-slot allocators, write sessions and the leader lease live: the kind of one
     * of the backends on the class path, {@code embedded} (in this process: snapshot + journal under the data
     * directory; one replica; kvpool.meta.index.*) or {@code redis} (in Redis/Valkey, shared by any number of
     * replicas; kvpool.meta.redis.*). An unknown kind fails the start naming the known ones.
     */
    @WithName("meta.store")
    @WithDefault("embedded")
    String store();

    @WithName("meta.events")
    Events events();

    @WithName("meta.control-plane")
    ControlPlane controlPlane();

    @WithName("meta.auth")
    Auth auth();


    /** Where configuration comes from: the control plane's snapshot and its kvpool.config topic. */
    interface ControlPlane {
        /**
         * Base URL, e.g. {@code http://127.0.0.1:6492}: storages, groups and instances come from it
         * ("Configuration from the control plane"); unset: configuration from the startup file, no sync.
         */
        Optional<String> url();

        /** Operator (or admin) account used to obtain bearer tokens, renewed before they expire. */
        Optional<String> user();

        /** That account's password. */
        Optional<String> password();

        /** A ready-made bearer token instead of user/password (not refreshed). */
        Optional<String> token();

        /**
         * Kafka carrying the kvpool.config topic; default: kvpool.meta.events.bootstrap-servers; neither set: changes
         * arrive with the resync only.
         */
        Optional<String> kafkaBootstrap();

        /** Full re-read of the configuration snapshot (also a few seconds after a gap in ce_position). */
        @WithDefault("5m")
        Duration resync();

        /**
         * A KVCM call naming a group or instance this plane does not know waits at most this long for fresh
         * configuration from the control plane (issue 34); past it the call answers SERVICE_NOT_READY "the control
         * plane did not answer within … ms".
         */
        @WithDefault("2s")
        Duration freshWait();

        /**
         * At least this long between two such fetches, whoever asks (one snapshot GET per interval at most: protects
         * the control plane).
         */
        @WithDefault("200ms")
        Duration freshMinInterval();

        /** A name such a fetch did not find is answered as missing without another fetch for this long. */
        @WithDefault("1s")
        Duration freshNegativeTtl();

        /** At most this many names are kept as missing (the oldest are dropped). */
        @WithDefault("10000")
        int freshNegativeMax();

        /**
         * How often the leader posts usage per group and storage type ({@code POST /api/v1/usage}), and every
         * replica its stats ({@code POST /api/v1/stats}: prefix queries, blocks queried/hit/written and evictions by
         * reason per instance since its last accepted report, and the replica's heartbeat).
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

    /** Bearer tokens on the KVCM and REST APIs (docs/security.md). */
    interface Auth {
        /**
         * Base64 X.509 Ed25519 public key pinned to verify every token (any kid; no rotation, no revocation feed
         * unless the control plane is configured); default: the control plane's JWKS. Setting it turns token checks
         * on without a control plane (then no group allows anonymous calls).
         */
        Optional<String> publicKey();

        /** The iss the control plane's tokens carry (its kvpool.control.token-issuer). */
        @WithDefault("kvpool")
        String issuer();

        /** How often the JWKS is refetched (besides on a token with an unknown kid). */
        @WithDefault("5m")
        Duration jwksRefresh();

        /**
         * The least time between two JWKS fetches caused by unknown kids (a kid not found is not fetched for again
         * for 30 s).
         */
        @WithDefault("1s")
        Duration jwksMinRefetch();

        /** How often the control plane's token revocations are polled ({@code GET /api/v1/auth/revocations}). */
        @WithDefault("1s")
        Duration revocationPoll();
    }

    /** Eviction and expiry on the leader ("Eviction: water levels and policies"). */
    interface Reclaim {
        /** Run the reclaimer (on the leader). */
        @WithDefault("true")
        boolean enabled();

        /** Up to this many keys an instance's victims are chosen exactly; above it by sampling. */
        @WithDefault("262144")
        int exactLimit();

        /**
         * Keys sampled per round from an instance above exact-limit (four times its share of the round's evictions
         * if that is more).
         */
        @WithDefault("4096")
        int sampleSize();

        /**
         * LRU/TTL (exact) and PREFIX_LRU: at most this many of an instance's oldest keys kept from one pass over the
         * index for the next rounds (a pass keeps 256 rounds' worth or a sixteenth of the index, at least two
         * rounds' worth; 16 bytes of heap each while queued). 0: no queue, a pass every round.
         */
        @WithDefault("8388608")
        int queueLimit();

        /**
         * Redis store: an index larger than this is read this many keys per round, so a huge instance's pass does
         * not hold up the other groups (0: in one go).
         */
        @WithDefault("65536")
        int passPage();

        /**
         * Share of the time the reclaimer may work while it has work (evicting, expiring, sweeping): after a busy
         * round of t ms it pauses t × (1 − share) / share. At 1 a round that evicted is followed by the next at
         * once (as KVCM does); lower leaves Redis to the engines' lookups while a group is over its water level, at
         * the price of slower recovery. No pause while a group that evicted is at 95 % of a hard limit (its quota, a
         * storage type quota, or an instance's max_key_count): there writes are about to be refused, so eviction
         * runs flat out. Measured in docs/benchmarks.md ("On 16 cores").
         */
        @WithDefault("1.0")
        double dutyCycle();

        /**
         * How often the leader recounts each group's usage from its index and compares it with the ledger (the
         * usage invariant; a difference confirmed by two quiet audits in a row is logged and counted in
         * {@code kvpool_meta_usage_audit_drifts}). 0 turns it off. Each audit reads every index of the group: on a
         * large Redis-backed pool, lengthen it.
         */
        @WithDefault("15m")
        java.time.Duration usageAudit();
    }

    /** Cache operations published to Kafka (topic kvpool.cache). */
    interface Events {
        /** Kafka bootstrap servers for the kvpool.cache topic; unset: no events. */
        Optional<String> bootstrapServers();

        /** Events waiting for the producer; beyond this they are dropped and counted. */
        @WithDefault("65536")
        int queueCapacity();
    }

    /** Two-phase write sessions (startWriteCache / finishWriteCache). */
    interface Write {
        /** Used when a client sends write_timeout_seconds ≤ 0 (KVCM expires those at once). */
        @WithDefault("30")
        int defaultTimeoutSeconds();

        /** Cap on a write session's lifetime. */
        @WithDefault("3600")
        int maxTimeoutSeconds();

        /** How often write sessions past their deadline are failed and their storage released. */
        @WithDefault("250ms")
        Duration expiryPeriod();
    }
}
