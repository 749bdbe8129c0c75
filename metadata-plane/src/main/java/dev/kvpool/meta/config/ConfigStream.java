package dev.kvpool.meta.config;

import dev.kvpool.api.events.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jboss.logging.Logger;

/**
 * The change stream: follows the {@code kvpool.config} topic from its beginning, every partition, and hands each
 * record's {@code ce_position} and body to the sync, which applies it only when it is beyond the applied position.
 *
 * <p>Why the plain Kafka client and not SmallRye Reactive Messaging: the connector (quarkus-messaging-kafka) is not
 * among the dependencies that resolve here, and this consumer is not a channel bound at boot: it starts only after
 * the registry exists and only when a bootstrap is configured, belongs to no consumer group (every replica reads
 * every record: assign and seek to the beginning, no commits), and the positions, not offsets, decide what applies.
 */
final class ConfigStream implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ControlPlaneSync.class); // the sync's log, as before the split
    static final String TOPIC = Topics.CONFIG;

    /** Receives a record of the topic: its position and its body (the consumer thread). */
    interface Listener {
        void record(long position, String value);
    }

    private final String bootstrap;
    private final Properties props;
    private final Listener listener;
    /** The applied position, for the log line when following begins. */
    private final LongSupplier position;
    private volatile KafkaConsumer<String, String> consumer;
    private volatile Thread thread;
    private volatile boolean closed;

    ConfigStream(ControlPlaneSync.Settings settings, LongSupplier position, Listener listener) {
        this.bootstrap = settings.kafkaBootstrap();
        this.props = consumerProperties(settings);
        this.position = position;
        this.listener = listener;
    }

    /** The config consumer's settings, plus the client security settings (disjoint keys: see KafkaClientConfig). */
    static Properties consumerProperties(ControlPlaneSync.Settings settings) {
        Properties p = new Properties();
        p.putAll(settings.kafkaClient() == null ? Map.of() : settings.kafkaClient());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.kafkaBootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kvpool-meta-config");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        return p;
    }

    void start() {
        Thread t = new Thread(this::consume, "kvpool-config-consumer");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    private void consume() {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            consumer = c;
            List<TopicPartition> parts = List.of();
            boolean warned = false;
            while (!closed && parts.isEmpty()) {
                try {
                    List<PartitionInfo> infos = c.partitionsFor(TOPIC, Duration.ofSeconds(5));
                    if (infos != null) {
                        parts = infos.stream().map(i -> new TopicPartition(i.topic(), i.partition())).toList();
                    }
                } catch (WakeupException e) {
                    return;
                } catch (RuntimeException e) {
                    if (!warned) {
                        LOG.warnf("Kafka %s: topic %s not reachable yet (%s); retrying", bootstrap, TOPIC, e.toString());
                        warned = true;
                    }
                }
                if (parts.isEmpty() && !closed) {
                    Thread.sleep(1000);
                }
            }
            if (closed) {
                return;
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            LOG.infof("following Kafka topic %s at %s (%d partitions) from configuration position %d", TOPIC,
                    bootstrap, parts.size(), position.getAsLong());
            while (!closed) {
                try {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        onRecord(r);
                    }
                } catch (WakeupException e) {
                    return;
                } catch (RuntimeException e) {
                    LOG.warnf("Kafka %s: %s", bootstrap, e.toString());
                    Thread.sleep(1000);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.error("the kvpool.config consumer stopped; configuration changes now arrive only with the resync", e);
            }
        }
    }

    private void onRecord(ConsumerRecord<String, String> r) {
        Header h = r.headers().lastHeader("ce_position");
        if (h == null) {
            LOG.warnf("kvpool.config record at offset %d has no ce_position header; ignored", r.offset());
            return;
        }
        long pos;
        try {
            pos = Long.parseLong(new String(h.value(), StandardCharsets.UTF_8).trim());
        } catch (NumberFormatException e) {
            LOG.warnf("kvpool.config record at offset %d: bad ce_position; ignored", r.offset());
            return;
        }
        listener.record(pos, r.value());
    }

    @Override
    public void close() {
        closed = true;
        KafkaConsumer<String, String> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        Thread t = thread;
        if (t != null) {
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
