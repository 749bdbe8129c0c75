package dev.kvpool.agent.api;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** {@code kvpool.agent.*}: see data-agent/README.md. */
@ConfigMapping(prefix = "kvpool.agent")
public interface AgentConfig {
    /** Agent name in events (defaults to the host name). */
    Optional<String> id();

    /** HTTP control port (KVPool's agent port; %test 16390). */
    @WithDefault("6390")
    int httpPort();

    /**
     * Interface of the engine API (default 127.0.0.1). The API takes no credentials: anyone who reaches it can save
     * bytes of the shared segment under any key and remove blocks, so it stays on the node unless set otherwise.
     */
    @WithDefault("127.0.0.1")
    String httpHost();

    /** Port of {@code /q/metrics} (Quarkus' management interface, on {@code metrics-host}). */
    @WithDefault("6389")
    int metricsPort();

    /**
     * Interface of the metrics port (default 127.0.0.1): it takes no credentials either, so it stays on the node
     * unless set otherwise (0.0.0.0 for a Prometheus elsewhere).
     */
    @WithDefault("127.0.0.1")
    String metricsHost();

    @WithDefault("262144")
    int blockBytes();

    @WithDefault("16")
    int blockTokens();

    /** Layers per block (block-bytes must be divisible by it); layer i is bytes [i*L, (i+1)*L) of a block. */
    @WithDefault("1")
    int layers();

    /**
     * contiguous | layered: layered keeps each layer of a block addressable and checksummed on its own (NVMe slot
     * files cut into a region per layer), so a load can deliver layer by layer; needs the layer size to be a
     * multiple of 4096.
     */
    @WithDefault("contiguous")
    String layout();

    @WithDefault("data/agent")
    String dataDir();

    Host host();

    Nvme nvme();

    Gpu gpu();

    /** {@code kvpool.agent.gds.*}: how the GPU tier reaches the NVMe slot files (README "GPUDirect Storage"). */
    Gds gds();

    Pool pool();

    Events events();

    Shm shm();

    Sched sched();

    ControlPlane controlPlane();

    Health health();

    interface Host {
        @WithDefault("2")
        int regions();

        @WithDefault("128")
        long regionMib();
    }

    interface Nvme {
        /** One directory per disk; empty = no NVMe tier. Default: {data-dir}/nvme0. */
        Optional<List<String>> dirs();

        @WithDefault("1024")
        long deviceMib();

        /** auto | io_uring | filechannel */
        @WithDefault("auto")
        String io();

        @WithDefault("8")
        int queueDepth();

        /** Per-device bandwidth (MB/s) instead of the start-up probe. */
        Optional<List<Double>> bandwidthMbps();

        /** Per-device throttle (MB/s), to emulate several slower disks on one. */
        Optional<List<Double>> throttleMbps();

        @WithDefault("16")
        long probeMib();

        @WithDefault("true")
        boolean enabled();

        /**
         * Keep NVMe blocks across agent restarts (a slot table beside each slot file); false starts every run
         * empty.
         */
        @WithDefault("true")
        boolean keep();
    }

    interface Gpu {
        @WithDefault("false")
        boolean enabled();

        @WithDefault("256")
        long mib();

        /**
         * Check each block's CRC32C on every load from the GPU tier. Off: the tier holds only bytes checksummed or
         * verified on their way in, in the agent's own ECC memory (data-agent/README.md, "GPU tier").
         */
        @WithDefault("false")
        boolean verify();

        /**
         * Scattered GPU-tier copies as cuMemcpyBatchAsync_v2 calls where the CUDA driver has them (13.0+); false: one
         * cudaMemcpyAsync per block, as before.
         */
        @WithDefault("true")
        boolean batchCopies();
    }

    interface Gds {
        /** auto: cuFile where it works, else the bounce path; on: cuFile or the start fails; off: never cuFile. */
        @WithDefault("auto")
        String mode();

        /** libcufile to load lazily: a path, or a soname for the loader's search (default libcufile.so.0). */
        Optional<String> library();

        /** Ops per cuFileBatchIOSubmit (1 to 1024; cuFile's own default is 128). */
        @WithDefault("128")
        int maxBatch();

        /** Pinned host staging of the bounce path, MiB (both halves). */
        @WithDefault("64")
        long stagingMib();
    }

    interface Pool {
        @WithDefault("false")
        boolean enabled();

        @WithDefault("http://127.0.0.1:6382")
        String metaUri();

        @WithDefault("agent")
        String instanceId();

        @WithDefault("default")
        String instanceGroup();

        @WithDefault("tp0")
        String spec();

        @WithDefault("30")
        int writeTimeoutSeconds();

        @WithDefault("kvpool-agent")
        String model();

        @WithDefault("true")
        boolean requireChecksum();

        /**
         * The root paths of the file storages the pool's slab files are in (their {@code root_path}), as this host
         * sees them. Every location the metadata plane hands out must lie in one of them, in this agent's instance
         * directory; anything else is refused (a failed write, a miss). Default {@code $KVPOOL_DATA_DIR/nfs}, the
         * default storage of {@code ./kvpool up}.
         */
        @WithDefault("data/nfs")
        List<String> storageRoots();
    }

    interface Events {
        /** Kafka bootstrap servers; empty = events off. */
        Optional<String> bootstrapServers();

        /** TLS/SASL client settings: a directory with one file per property (KafkaClientConfig), e.g. a Secret. */
        Optional<String> clientConfigDir();

        @WithDefault("512")
        int maxEvents();

        @WithDefault("20")
        long lingerMs();

        /** A batch is cut at about this many bytes of JSON, under Kafka's default 1 MiB record limit. */
        @WithDefault("524288")
        int maxBatchBytes();

        @WithDefault("10000")
        int spoolBatches();

        /** The spool's bound in MiB as well (oldest batches dropped, counted, when either bound is reached). */
        @WithDefault("128")
        long spoolMib();
    }

    interface Shm {
        /** Default: /dev/shm/kvpool-agent-{http port}. */
        Optional<String> path();

        @WithDefault("256")
        long mib();
    }

    interface Sched {
        @WithDefault("4")
        int chunkOps();

        @WithDefault("4096")
        int highWaterOps();

        @WithDefault("500")
        long guardMicros();
    }

    /** Where this agent posts its heartbeat (GET /api/v1/services lists it); no url: it reports nowhere. */
    interface ControlPlane {
        /** The control plane's base URL, e.g. {@code http://127.0.0.1:8080} (env KVPOOL_CONTROL_PLANE_URL). */
        Optional<String> url();

        /** Operator (or admin) credentials used to obtain bearer tokens ({@code POST /api/v1/tokens}). */
        Optional<String> user();

        Optional<String> password();

        /** A ready-made bearer token instead of user/password (not renewed). */
        Optional<String> token();

        /** Heartbeat period (the control plane shows the agent DOWN after three without one). */
        @WithDefault("10s")
        Duration period();

        /** Connect and request timeout of one heartbeat. */
        @WithDefault("5s")
        Duration timeout();
    }

    /** {@code /q/health} on the management interface (data-agent/README.md, "Health"). */
    interface Health {
        /**
         * Due work on a device (queued reads or first-tier writes, ops on the device) that sees no progress for this
         * long makes the agent's liveness DOWN: a wedged device worker, not a slow one.
         */
        @WithDefault("30s")
        Duration stallAfter();
    }
}
