package dev.kvpool.meta.events;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import dev.kvpool.api.events.CacheEvent;
import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jboss.logging.Logger;

/**
 * Publishes metadata-plane operations to {@code kvpool.cache}, keyed by instance id, as CloudEvents. Request
 * threads only enqueue (no JSON, no I/O on the hot path); one thread serializes and hands records to the Kafka
 * producer, which batches them. A full queue (Kafka slow or down for long) drops the newest event and counts it,
 * so the trace is known to be incomplete rather than the metadata plane slowed down. An operation over many keys
 * goes as several records ({@link CacheEvent#split}); {@code published} and {@code failed} count records.
 */
public final class CacheEvents implements AutoCloseable, MeterBinder {
    private static final Logger LOG = Logger.getLogger(CacheEvents.class);
    /** Disabled publisher: every call is a no-op. */
    public static final CacheEvents OFF = new CacheEvents();

    private final KafkaProducer<String, byte[]> producer;
    private final BlockingQueue<CacheEvent> queue;
    private final String source;
    private final String nodeId;
    private final Thread thread;
    private final AtomicLong seq = new AtomicLong();
    public final AtomicLong published = new AtomicLong();
    public final AtomicLong dropped = new AtomicLong();
    public final AtomicLong failed = new AtomicLong();
    /** Dropped or undelivered since the last record sent: told to consumers on the next one (ce_missingbefore). */
    private final AtomicLong missingSinceLast = new AtomicLong();
    private volatile boolean closed;

    private CacheEvents() {
        producer = null;
        queue = null;
        source = nodeId = "";
        thread = null;
    }

    public CacheEvents(String bootstrapServers, String nodeId, int queueCapacity, Map<String, String> producerProps) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kvpool-meta-" + nodeId);
        p.putAll(producerProps);
        this.producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
        this.queue = new ArrayBlockingQueue<>(queueCapacity);
        this.nodeId = nodeId;
        this.source = "kvpool/metadata-plane/" + nodeId;
        this.thread = Thread.ofPlatform().daemon().name("kvpool-cache-events").start(this::run);
    }

    public boolean enabled() {
        return producer != null;
    }

    public void offer(CacheEvent e) {
        if (producer != null && !queue.offer(e)) {
            dropped.incrementAndGet();
            missingSinceLast.incrementAndGet();
        }
    }

    public static long nowMicros() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000 + t.getNano() / 1000;
    }

    private void run() {
        List<CacheEvent> batch = new ArrayList<>(512);
        while (!closed || !queue.isEmpty()) {
            try {
                CacheEvent first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, 511);
                for (CacheEvent e : batch) {
                    send(e);
                }
                batch.clear();
            } catch (InterruptedException ie) {
                if (closed) {
                    break;
                }
            } catch (RuntimeException ex) {
                failed.addAndGet(batch.size());
                missingSinceLast.addAndGet(batch.size());
                batch.clear();
                LOG.warnf("kvpool.cache publish failed: %s", ex.toString());
            }
        }
    }

    private void send(CacheEvent whole) {
        for (CacheEvent e : whole.split(CacheEvent.MAX_KEYS_PER_RECORD)) { // over 1 MiB, Kafka refuses the record
            sendRecord(e);
        }
    }

    private void sendRecord(CacheEvent e) {
        var rec = new ProducerRecord<String, byte[]>(Topics.CACHE, e.instanceId(), EventCodec.toJson(e));
        String id = nodeId + "-" + seq.incrementAndGet();
        CloudEventHeaders.of(id, source, CloudEventHeaders.TYPE_CACHE_PREFIX + e.type(),
                Instant.ofEpochSecond(e.triggerTimeUs() / 1_000_000, (e.triggerTimeUs() % 1_000_000) * 1000))
                .forEach((k, v) -> rec.headers().add(k, v));
        long missing = missingSinceLast.getAndSet(0);
        if (missing > 0) {
            rec.headers().add(CloudEventHeaders.MISSING_BEFORE, Long.toString(missing).getBytes(StandardCharsets.UTF_8));
        }
        producer.send(rec, (md, ex) -> {
            if (ex == null) {
                published.incrementAndGet();
            } else {
                failed.incrementAndGet();
                // this record's own count, and the record itself, are missing now: the next record says so
                missingSinceLast.addAndGet(1 + missing);
                LOG.debugf("kvpool.cache record not delivered: %s", ex.toString()); // counted, in the metrics
            }
        });
    }

    @Override
    public void close() {
        if (producer == null) {
            return;
        }
        closed = true;
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close(java.time.Duration.ofSeconds(5));
    }

    /** The publisher's counts (all 0 when events are off). */
    @Override
    public void bindTo(MeterRegistry meters) {
        Gauge.builder("kvpool.meta.events.published", this, e -> e.published.get()).strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.events.dropped", this, e -> e.dropped.get())
                .description("kvpool.cache events dropped because the queue was full").strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.events.failed", this, e -> e.failed.get())
                .description("kvpool.cache records Kafka did not take (refused, or undelivered within the delivery"
                        + " timeout)").strongReference(true).register(meters);
    }
}
