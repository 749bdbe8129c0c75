package dev.kvpool.meta.engine.ingest;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/** vLLM / SGLang KV-event ingest ({@code kvpool.meta.engine-events.*}); metadata-plane/README.md lists them. */
@ConfigMapping(prefix = "kvpool.meta.engine-events")
public interface EngineEventsSettings {
    /** Off: no ZMQ sockets, no Kafka consumer (the scores API still reads what KVCM reporters put in the view). */
    @WithDefault("true")
    boolean enabled();

    /** Static sources ({@code sources[0].name=...}); more can be added over REST (kept in memory only). */
    Optional<List<Source>> sources();

    /** One engine publisher (one pod, or one DP rank of it) that KVPool connects to. */
    interface Source {
        /** Identifier (letters, digits, {@code . _ -}). */
        String name();

        /** The KVPool instance (model) the blocks belong to; it need not be registered. */
        String instanceId();

        /** Default: from an llm-d topic {@code kv@<pod>@<model>}, else the endpoint's host:port. */
        Optional<String> pod();

        /** The engine's PUB socket, {@code tcp://host:port} only ({@code *}, ipc://, inproc:// refused). */
        String endpoint();

        /** The engine's replay ROUTER, {@code tcp://host:port}; unset: no replay, a gap leaves the pod uncertain. */
        Optional<String> replayEndpoint();

        /** SUB prefix filter; default: every topic. */
        Optional<String> topic();

        /**
         * Medium to tier, {@code MEDIUM=tier,...}, e.g. {@code CPU_TIER1=cpu,CPU_TIER2=disk}; other media
         * lower-cased, a nil medium is gpu.
         */
        Optional<String> tierAliases();
    }

    Bind bind();

    /** One bound SUB socket that pods connect to with their llm-d topic {@code kv@<pod>@<model>}. */
    interface Bind {
        /** Unset: no bound socket. */
        OptionalInt port();

        /** Where the bound socket listens. */
        @WithDefault("0.0.0.0")
        String host();

        /** The instance every pod connecting here belongs to (required with a port). */
        Optional<String> instanceId();

        /** SUB prefix filter of the bound socket (a message whose topic names no pod is counted malformed). */
        @WithDefault("kv@")
        String topic();
    }

    Kafka kafka();

    /** The kvpool.engine-events topic between ZMQ sources and the view (every replica applies every batch). */
    interface Kafka {
        /** With Kafka configured, ZMQ batches go through the topic (false: ZMQ → view directly even then). */
        @WithDefault("true")
        boolean enabled();

        /** Default: kvpool.meta.events.bootstrap-servers. */
        Optional<String> bootstrapServers();

        /** The topic ZMQ batches go through. */
        @WithDefault("kvpool.engine-events")
        String topic();
    }

    /** How long a replay reply may take before the replay is given up (the pod then becomes uncertain). */
    @WithDefault("2s")
    Duration replayTimeout();

    /** Batches one replay reads at most (vLLM keeps 10,000 by default). */
    @WithDefault("100000")
    int maxReplayBatches();

    /** SUB receive high-water mark (messages); past it ZMQ drops, which shows as gaps. */
    @WithDefault("100000")
    int rcvHwm();
}
