package dev.kvpool.meta.engine.ingest;

import dev.kvpool.api.events.Topics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jboss.logging.Logger;

/**
 * Writes each batch a ZMQ source receives (live or replayed) to {@code kvpool.engine-events} as one record: key
 * {@code <instance>@<pod>} (one partition per pod keeps its batches in order), value the raw msgpack payload as the
 * engine published it, headers {@code instance}, {@code pod}, {@code seq} (decimal), {@code source}. acks=all and
 * idempotence: a broker outage shorter than the delivery timeout (10 min) loses and duplicates nothing. A record
 * that is not delivered after all is counted and its pod marked uncertain (its batch is missing from the topic).
 */
public final class EngineEventsProducer implements ZmqSubscriber.Sink, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(EngineEventsProducer.class);
    public static final String H_INSTANCE = "instance", H_POD = "pod", H_SEQ = "seq", H_SOURCE = "source";

    private final KafkaProducer<String, byte[]> producer;
    private final String topic;
    private final PodStates states;
    private final Counter produced, failed;

    public EngineEventsProducer(String bootstrap, String topic, Map<String, String> clientProps, String clientId,
                                PodStates states, MeterRegistry meters) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.putAll(clientProps);
        this.producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
        this.topic = topic;
        this.states = states;
        produced = Counter.builder("kvpool.engine.ingest.kafka.produced")
                .description("engine KV-event batches written to kvpool.engine-events").register(meters);
        failed = Counter.builder("kvpool.engine.ingest.kafka.failed")
                .description("engine KV-event batches Kafka did not take (their pods became uncertain)")
                .register(meters);
    }

    @Override
    public void accept(String instance, String basePod, String source, long seq, byte[] payload) {
        var rec = new ProducerRecord<>(topic, instance + "@" + basePod, payload);
        rec.headers().add(H_INSTANCE, instance.getBytes(StandardCharsets.UTF_8))
                .add(H_POD, basePod.getBytes(StandardCharsets.UTF_8))
                .add(H_SEQ, Long.toString(seq).getBytes(StandardCharsets.UTF_8))
                .add(H_SOURCE, source.getBytes(StandardCharsets.UTF_8));
        try {
            producer.send(rec, (md, ex) -> {
                if (ex == null) {
                    produced.increment();
                } else {
                    lost(instance, basePod, source, seq, ex);
                }
            });
        } catch (RuntimeException ex) { // buffer full past max.block.ms, a closed producer
            lost(instance, basePod, source, seq, ex);
        }
    }

    private void lost(String instance, String basePod, String source, long seq, Exception ex) {
        failed.increment();
        states.markUncertain(instance, basePod, source);
        LOG.warnf("%s: batch %d of %s pod %s not written: %s", topic, seq, instance, basePod, ex.toString());
    }

    public void flush() {
        producer.flush();
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(5));
    }

    /** The topic name (kvpool.engine-events unless overridden for tests). */
    public static String defaultTopic() {
        return Topics.ENGINE_EVENTS;
    }
}
