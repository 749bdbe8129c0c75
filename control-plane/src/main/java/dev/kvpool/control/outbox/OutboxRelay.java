package dev.kvpool.control.outbox;

import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.KafkaClientConfig;
import dev.kvpool.api.events.Topics;
import dev.kvpool.control.leader.LeaseElector;
import dev.kvpool.control.leader.Leadership;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Publishes outbox rows to {@code kvpool.config}, in position order, at least once. Each run (every
 * {@code kvpool.control.outbox.interval}) takes the relay lock row ({@code FOR UPDATE SKIP LOCKED}: one relay across
 * replicas, so the topic stays in order), claims the oldest unpublished rows ({@code FOR UPDATE SKIP LOCKED}), sends
 * them with an idempotent {@code acks=all} producer, waits for every ack and only then marks them published in the same
 * transaction. Kafka down: the send fails, the transaction rolls back, the producer is dropped and the rows wait for the
 * next run. A crash between ack and commit re-sends the rows with the same {@code ce_id} (consumers dedupe on it).
 * Runs on the elected control-plane leader only ({@link Leadership}); a replica that loses leadership mid-batch
 * finishes or rolls back that batch under the relay lock row, which the new leader's relay waits out (skips), so the
 * topic stays in order across a take-over.
 */
@ApplicationScoped
public class OutboxRelay {
    private static final Logger LOG = Logger.getLogger(OutboxRelay.class);
    public static final String SOURCE = "/kvpool/control-plane";
    public static final String POSITION_HEADER = "ce_position";

    @Inject
    EntityManager em;
    @Inject
    Leadership leadership;

    @ConfigProperty(name = "kafka.bootstrap.servers")
    Optional<String> bootstrap;
    /** TLS/SASL settings, one file per property (KafkaClientConfig); read at start so a bad one stops the start. */
    @ConfigProperty(name = KafkaClientConfig.PROPERTY)
    Optional<String> clientConfigDir;
    private Map<String, String> clientConfig = Map.of();
    @ConfigProperty(name = "kvpool.control.outbox.batch-size", defaultValue = "200")
    int batchSize;
    @ConfigProperty(name = "kvpool.control.outbox.send-timeout", defaultValue = "PT10S")
    Duration sendTimeout;

    private KafkaProducer<String, byte[]> producer;
    private boolean idleLogged;
    private volatile boolean paused;
    private long lastFailureLog;
    private final AtomicLong published = new AtomicLong();
    /** Test hook: fail the next run after the sends were acked, before the rows are marked (a crash there). */
    volatile boolean failAfterSendOnce;

    @ConfigProperty(name = "kvpool.control.outbox.interval", defaultValue = "200ms")
    String interval;
    private ScheduledExecutorService timer;

    /** A dedicated thread with a fixed delay: Quarkus' scheduler does not go below one second. */
    void start(@Observes StartupEvent ev) {
        clientConfig = KafkaClientConfig.load(clientConfigDir);
        long ms = parseMillis(interval);
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvpool-outbox-relay");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::tick, ms, ms, TimeUnit.MILLISECONDS);
        leadership.addListener(new LeaseElector.Listener() {
            @Override
            public void gained(long epoch) {
                timer.execute(OutboxRelay.this::tick); // publish what waited at once
            }

            @Override
            public void lost(long epoch, String why) {
                timer.execute(OutboxRelay.this::dropProducer); // on the relay's thread: never mid-batch
            }
        });
    }

    static long parseMillis(String v) {
        String s = v.trim().toLowerCase();
        if (s.endsWith("ms")) {
            return Long.parseLong(s.substring(0, s.length() - 2).trim());
        }
        if (s.endsWith("s")) {
            return Math.round(Double.parseDouble(s.substring(0, s.length() - 1).trim()) * 1000);
        }
        return Duration.parse(v.trim()).toMillis();
    }

    void tick() {
        if (paused || !leadership.isLeader()) {
            return;
        }
        if (bootstrap.isEmpty() || bootstrap.get().isBlank()) {
            if (!idleLogged) {
                idleLogged = true;
                LOG.info("kafka.bootstrap.servers is not set: the outbox relay is idle; config changes accumulate in "
                        + "outbox_event until Kafka is configured (consumers can still read GET /api/v1/config/snapshot)");
            }
            return;
        }
        try {
            runOnce();
        } catch (Throwable e) {
            dropProducer();
            long now = System.currentTimeMillis();
            if (now - lastFailureLog > 10_000) {
                lastFailureLog = now;
                LOG.warnf("outbox relay: Kafka at %s not reachable (%s); unpublished changes wait and go out in order "
                        + "when it is back", bootstrap.get(), rootMessage(e));
            }
        }
    }

    /** One batch; returns how many rows were published. */
    public synchronized int runOnce() {
        return QuarkusTransaction.requiringNew().timeout(120).call(this::publishBatch);
    }

    @SuppressWarnings("unchecked")
    private int publishBatch() {
        List<Object> relay = em.createNativeQuery("select id from outbox_relay where id = 1 for update skip locked")
                .getResultList();
        if (relay.isEmpty()) {
            return 0; // another replica is relaying
        }
        List<OutboxEvent> rows = em.createNativeQuery("select * from outbox_event where published_at is null "
                + "order by id limit " + batchSize + " for update skip locked", OutboxEvent.class).getResultList();
        if (rows.isEmpty()) {
            return 0;
        }
        KafkaProducer<String, byte[]> p = producer();
        p.partitionsFor(Topics.CONFIG); // waits for metadata (max.block.ms) so no record is queued behind a missing one
        List<Future<RecordMetadata>> acks = new ArrayList<>(rows.size());
        for (OutboxEvent e : rows) {
            ProducerRecord<String, byte[]> r = new ProducerRecord<>(Topics.CONFIG, e.name,
                    e.payload.getBytes(StandardCharsets.UTF_8));
            CloudEventHeaders.of(e.eventId, SOURCE, CloudEventHeaders.TYPE_CONFIG_PREFIX
                    + e.kind.toLowerCase() + "." + e.action, e.createdAt).forEach((k, v) -> r.headers().add(k, v));
            r.headers().add(POSITION_HEADER, Long.toString(e.position).getBytes(StandardCharsets.US_ASCII));
            Future<RecordMetadata> f = p.send(r);
            if (f.isDone()) {
                try {
                    f.get(); // failed at once (e.g. metadata): send nothing after it, so the topic stays in order
                } catch (Exception ex) {
                    throw new IllegalStateException("send failed: " + rootMessage(ex), ex);
                }
            }
            acks.add(f);
        }
        p.flush();
        try {
            for (Future<RecordMetadata> f : acks) {
                f.get(sendTimeout.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (Exception ex) {
            throw new IllegalStateException("send failed: " + rootMessage(ex), ex);
        }
        if (failAfterSendOnce) {
            failAfterSendOnce = false;
            throw new IllegalStateException("simulated crash after the acks, before marking the rows");
        }
        Instant now = Instant.now();
        for (OutboxEvent e : rows) {
            e.publishedAt = now;
        }
        published.addAndGet(rows.size());
        return rows.size();
    }

    private KafkaProducer<String, byte[]> producer() {
        if (producer == null) {
            producer = new KafkaProducer<>(producerProperties(bootstrap.get(), sendTimeout, clientConfig),
                    new StringSerializer(), new ByteArraySerializer());
        }
        return producer;
    }

    /** The relay's producer settings, plus the client security settings (disjoint keys: see KafkaClientConfig). */
    static Properties producerProperties(String bootstrap, Duration sendTimeout, Map<String, String> clientConfig) {
        Properties p = new Properties();
        p.putAll(clientConfig);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 3000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(3000, sendTimeout.toMillis()));
        p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        p.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2000);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kvpool-control-plane-outbox");
        return p;
    }

    private synchronized void dropProducer() {
        if (producer != null) {
            try {
                producer.close(Duration.ZERO);
            } catch (RuntimeException ignored) {
                // closing a producer whose broker is gone
            }
            producer = null;
        }
    }

    /** Test hook: the next batch is sent and acked, then its transaction fails as if the process died there. */
    public void simulateCrashAfterNextSend() {
        failAfterSendOnce = true;
    }

    public void pause(boolean p) {
        paused = p;
    }

    public long publishedCount() {
        return published.get();
    }

    public boolean kafkaConfigured() {
        return bootstrap.isPresent() && !bootstrap.get().isBlank();
    }

    void shutdown(@Observes ShutdownEvent ev) {
        paused = true;
        if (timer != null) {
            timer.shutdownNow();
        }
        dropProducer();
    }

    private static String rootMessage(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
}
