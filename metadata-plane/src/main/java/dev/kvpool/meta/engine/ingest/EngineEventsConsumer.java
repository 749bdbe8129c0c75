package dev.kvpool.meta.engine.ingest;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jboss.logging.Logger;

/**
 * Reads {@code kvpool.engine-events} from the beginning, then follows it, applying every record to the view: so a
 * restarted indexer starts full (as far back as the topic's retention reaches: a pod whose early batches were deleted
 * comes back uncertain, never wrong-and-live). No consumer group, no committed offsets: every metadata-plane replica
 * builds its own complete view. Records need headers {@code instance}, {@code pod}, {@code seq}, {@code source}
 * (ours, or an external side-car's); a record without usable ones is counted malformed and skipped.
 */
public final class EngineEventsConsumer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(EngineEventsConsumer.class);

    private final Properties props = new Properties();
    private final String topic;
    private final EventApplier applier;
    private final Thread thread;
    private final AtomicLong lag = new AtomicLong(-1);
    private final AtomicLong records = new AtomicLong();
    private volatile boolean closed;
    private volatile boolean caughtUp;

    public EngineEventsConsumer(String bootstrap, String topic, Map<String, String> clientProps, String clientId,
                                EventApplier applier, MeterRegistry meters) {
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        props.putAll(clientProps);
        this.topic = topic;
        this.applier = applier;
        Gauge.builder("kvpool.engine.ingest.kafka.lag", lag, AtomicLong::get)
                .description("records of kvpool.engine-events not yet applied (-1 before the first poll)")
                .register(meters);
        thread = Thread.ofPlatform().daemon().name("kvpool-engine-events-consumer").start(this::run);
    }

    /** True once every record present when reading started has been applied. */
    public boolean caughtUp() {
        return caughtUp;
    }

    public long records() {
        return records.get();
    }

    public long lag() {
        return lag.get();
    }

    private void run() {
        ensureTopic();
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = List.of();
            while (!closed && parts.isEmpty()) {
                try {
                    List<PartitionInfo> info = c.partitionsFor(topic, Duration.ofSeconds(5));
                    parts = info == null ? List.of()
                            : info.stream().map(i -> new TopicPartition(topic, i.partition())).toList();
                } catch (RuntimeException e) {
                    LOG.debugf("%s: no partitions yet: %s", topic, e.toString());
                }
                if (parts.isEmpty()) {
                    pause(Duration.ofSeconds(1));
                }
            }
            if (closed) {
                return;
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(30));
            LOG.infof("%s: replaying %d partitions from the beginning", topic, parts.size());
            while (!closed) {
                var recs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, byte[]> r : recs) {
                    apply(r);
                    records.incrementAndGet();
                }
                long l = 0;
                boolean done = true;
                for (TopicPartition tp : parts) {
                    l += c.currentLag(tp).orElse(0);
                    if (!caughtUp && c.position(tp) < end.getOrDefault(tp, 0L)) {
                        done = false;
                    }
                }
                lag.set(l);
                if (done && !caughtUp) {
                    caughtUp = true;
                    LOG.infof("%s: caught up after %d records", topic, records.get());
                }
            }
        } catch (org.apache.kafka.common.errors.InterruptException e) {
            // closing
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.errorf(e, "%s: consumer stopped", topic);
            }
        }
    }

    private void apply(ConsumerRecord<String, byte[]> r) {
        String instance = header(r, EngineEventsProducer.H_INSTANCE);
        String pod = header(r, EngineEventsProducer.H_POD);
        String seq = header(r, EngineEventsProducer.H_SEQ);
        String source = header(r, EngineEventsProducer.H_SOURCE);
        if (instance == null || pod == null || seq == null || r.value() == null
                || !dev.kvpool.api.naming.Identifiers.valid(dev.kvpool.api.naming.Identifiers.Kind.INSTANCE, instance)
                || EngineSource.podProblem(pod) != null) {
            applier.malformed(topic + " offset " + r.offset() + ": missing or unusable instance/pod/seq headers");
            return;
        }
        long s;
        try {
            s = Long.parseLong(seq);
        } catch (NumberFormatException e) {
            applier.malformed(topic + " offset " + r.offset() + ": seq header is not a number");
            return;
        }
        applier.apply(instance, pod, source == null ? "kafka" : source, s, r.value());
    }

    private static String header(ConsumerRecord<?, ?> r, String name) {
        Header h = r.headers().lastHeader(name);
        if (h == null || h.value() == null || h.value().length > 512) {
            return null;
        }
        return new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Creates the topic when it is missing (the broker's default partitions and replication); an error is only logged. */
    private void ensureTopic() {
        Properties ap = new Properties();
        props.forEach((k, v) -> {
            String key = k.toString();
            if (key.equals(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) || key.startsWith("ssl.") || key.startsWith("sasl.")
                    || key.equals("security.protocol")) {
                ap.put(k, v);
            }
        });
        try (Admin a = Admin.create(ap)) {
            if (!a.listTopics().names().get(10, java.util.concurrent.TimeUnit.SECONDS).contains(topic)) {
                a.createTopics(List.of(new NewTopic(topic, java.util.Optional.empty(), java.util.Optional.empty())
                        .configs(Map.of("cleanup.policy", "delete")))).all().get(10, java.util.concurrent.TimeUnit.SECONDS);
                LOG.infof("%s: created", topic);
            }
        } catch (Exception e) {
            LOG.infof("%s: not created here (%s); waiting for it", topic, e.toString());
        }
    }

    private void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
