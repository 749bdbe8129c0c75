package dev.kvpool.meta.engine.ingest;

import dev.kvpool.api.events.KafkaClientConfig;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.meta.engine.EngineCaches;
import dev.kvpool.meta.runtime.MetaSettings;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jboss.logging.Logger;
import org.zeromq.ZContext;

/**
 * Wires engine KV-event ingest in the metadata plane: the configured and REST-added ZMQ sources, and Kafka when
 * configured (ZMQ → {@code kvpool.engine-events} → consumer → view; without Kafka ZMQ → view directly).
 */
@ApplicationScoped
public class EngineIngest {
    private static final Logger LOG = Logger.getLogger(EngineIngest.class);

    @Inject
    EngineCaches caches;

    @Inject
    EngineEventsSettings cfg;

    @Inject
    MetaSettings meta;

    @Inject
    MeterRegistry meters;

    private final PodStates states = new PodStates();
    private final Map<String, Running> sources = new LinkedHashMap<>();
    private EventApplier applier;
    private ZContext zmq;
    private ZmqSubscriber.Sink sink;
    private EngineEventsProducer producer;
    private EngineEventsConsumer consumer;
    private ZmqSubscriber bound;
    private Counter replays;

    /** A running source and where it came from ("config" or "api"). */
    public record Running(EngineSource source, String origin, ZmqSubscriber subscriber) {
    }

    void start(@Observes StartupEvent ev) {
        applier = new EventApplier(caches.view(), states, Clock.systemUTC(), this::aliasesOf, meters);
        replays = Counter.builder("kvpool.engine.ingest.replays").description("replay requests sent to engines")
                .register(meters);
        if (!cfg.enabled()) {
            return;
        }
        List<EngineSource> configured = new ArrayList<>();
        for (EngineEventsSettings.Source s : cfg.sources().orElse(List.of())) {
            try {
                configured.add(new EngineSource(s.name(), s.instanceId(), s.pod().orElse(null), s.endpoint(),
                        s.replayEndpoint().orElse(null), s.topic().orElse(""), parseAliases(s.tierAliases())));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("kvpool.meta.engine-events.sources (" + s.name() + "): "
                        + e.getMessage(), e);
            }
        }
        if (configured.size() > EngineSource.MAX_SOURCES) {
            throw new IllegalArgumentException("kvpool.meta.engine-events.sources: at most " + EngineSource.MAX_SOURCES);
        }
        zmq = new ZContext();
        zmq.setLinger(0);
        String nodeId = meta.nodeId().orElse("meta");
        Optional<String> kafka = cfg.kafka().enabled()
                ? cfg.kafka().bootstrapServers().or(() -> meta.events().bootstrapServers()).filter(b -> !b.isBlank())
                : Optional.empty();
        if (kafka.isPresent()) {
            Map<String, String> client = KafkaClientConfig.load(meta.kafkaClientConfigDir());
            producer = new EngineEventsProducer(kafka.get(), cfg.kafka().topic(), client,
                    "kvpool-engine-events-" + nodeId, states, meters);
            sink = producer;
            consumer = new EngineEventsConsumer(kafka.get(), cfg.kafka().topic(), client,
                    "kvpool-engine-indexer-" + nodeId, applier, meters);
            LOG.infof("engine events: through Kafka topic %s at %s", cfg.kafka().topic(), kafka.get());
        } else {
            sink = applier::apply;
        }
        for (EngineSource s : configured) {
            add(s, "config");
        }
        if (cfg.bind().port().isPresent()) {
            int port = cfg.bind().port().getAsInt();
            String inst = cfg.bind().instanceId().orElseThrow(() -> new IllegalArgumentException(
                    "kvpool.meta.engine-events.bind.instance-id is required with bind.port"));
            Identifiers.require(Identifiers.Kind.INSTANCE, "kvpool.meta.engine-events.bind.instance-id", inst);
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("kvpool.meta.engine-events.bind.port must be 1..65535");
            }
            bound = new ZmqSubscriber(zmq, "bind", inst, "tcp://" + cfg.bind().host() + ":" + port,
                    cfg.bind().topic(), sink, states, applier, settings(), replays);
        }
    }

    private ZmqSubscriber.Settings settings() {
        return new ZmqSubscriber.Settings(cfg.replayTimeout(), cfg.maxReplayBatches(), cfg.rcvHwm());
    }

    /** {@code MEDIUM=tier,MEDIUM2=tier2}. */
    static Map<String, String> parseAliases(Optional<String> s) {
        Map<String, String> out = new HashMap<>();
        if (s.isEmpty() || s.get().isBlank()) {
            return out;
        }
        for (String kv : s.get().split(",")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("tier-aliases: '" + kv.trim() + "' is not MEDIUM=tier");
            }
            out.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        return out;
    }

    private Map<String, String> aliasesOf(String source) {
        synchronized (sources) {
            Running r = sources.get(source);
            return r == null ? Map.of() : r.source().tierAliases();
        }
    }

    public enum AddResult { ADDED, EXISTS, TOO_MANY, DISABLED }

    public AddResult add(EngineSource s, String origin) {
        synchronized (sources) {
            if (zmq == null) {
                return AddResult.DISABLED;
            }
            if (sources.containsKey(s.name())) {
                return AddResult.EXISTS;
            }
            if (sources.size() >= EngineSource.MAX_SOURCES) {
                return AddResult.TOO_MANY;
            }
            sources.put(s.name(), new Running(s, origin,
                    new ZmqSubscriber(zmq, s, sink, states, applier, settings(), replays)));
            return AddResult.ADDED;
        }
    }

    /** Stops a source and drops what its pods held. False when there is no such source. */
    public boolean remove(String name) {
        Running r;
        synchronized (sources) {
            r = sources.remove(name);
        }
        if (r == null) {
            return false;
        }
        r.subscriber().close();
        for (PodStates.Key k : states.forgetSource(name)) {
            applier.forget(k);
        }
        return true;
    }

    public List<Running> sources() {
        synchronized (sources) {
            return List.copyOf(sources.values());
        }
    }

    public PodStates states() {
        return states;
    }

    public EventApplier applier() {
        return applier;
    }

    /** The Kafka consumer, or null without Kafka. */
    public EngineEventsConsumer consumer() {
        return consumer;
    }

    void stop(@Observes ShutdownEvent ev) {
        List<Running> all;
        synchronized (sources) {
            all = List.copyOf(sources.values());
            sources.clear();
        }
        all.forEach(r -> r.subscriber().close());
        if (bound != null) {
            bound.close();
        }
        if (producer != null) {
            producer.close();
        }
        if (consumer != null) {
            consumer.close();
        }
        if (zmq != null) {
            zmq.close();
        }
    }
}
