package dev.kvpool.meta.sim;

import dev.kvpool.api.events.CacheEvent;
import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The workload a running pool recorded on {@code kvpool.cache}, as operations a {@link TraceSimulation} replays:
 * every GetCacheLocation and StartWriteCache (parts joined), in the order they happened, so an operator can ask how
 * another policy or quota would have done on the traffic the pool actually served. Replaying the writes as recorded
 * also covers clients that save without asking first (data agents); a write counts as done in full (its finish is
 * not consulted). Reads the topic as it stands when the read starts (from the earliest retained record to the end
 * offsets of that moment), without a consumer group: nothing is committed.
 */
public final class CacheEventTrace {
    private static final String QUERY_TYPE = CloudEventHeaders.TYPE_CACHE_PREFIX + CacheEvent.GET_CACHE_LOCATION;
    private static final String WRITE_TYPE = CloudEventHeaders.TYPE_CACHE_PREFIX + CacheEvent.START_WRITE_CACHE;

    /** One recorded operation: a prefix query, or a write of {@code keys}; {@code tsMs} from the first operation. */
    public record Op(long tsMs, boolean write, long[] keys) {
    }

    private CacheEventTrace() {
    }

    /**
     * @param instance only this instance's queries; null: every instance (replayed as one)
     * @param limit    at most this many queries (and the writes between them)
     * @param progress called with the number of records read so far, every 100,000 records
     */
    /**
     * The queries read, and how many operations the publishing planes reported missing from the topic (dropped
     * while Kafka was slow or down, or undelivered; of any instance): when that is not 0 the replay is partial.
     */
    public record Recorded(List<Op> ops, long missing) {
        /** The queries alone, as trace requests (each one then writes what it missed, like a connector). */
        public List<MooncakeTrace.Request> requests() {
            // input_length in tokens: unknown here (events carry keys, not the instance's block size)
            return ops.stream().filter(o -> !o.write()).map(o -> new MooncakeTrace.Request(o.tsMs(), 0, o.keys()))
                    .toList();
        }
    }

    public static Recorded read(String bootstrap, String instance, int limit, Duration timeout,
                                LongConsumer progress) {
        Map<String, Object> cfg = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000,
                ConsumerConfig.CLIENT_ID_CONFIG, "kvpool-trace-reader",
                ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false); // a reader creates nothing
        record Seen(long tsUs, int partition, long offset, boolean write, long[] keys) {
        }
        List<Seen> seen = new ArrayList<>();
        long missing = 0;
        try (var c = new KafkaConsumer<String, byte[]>(cfg, new StringDeserializer(), new ByteArrayDeserializer())) {
            List<org.apache.kafka.common.PartitionInfo> infos;
            try {
                infos = c.partitionsFor(Topics.CACHE, timeout);
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                throw new IllegalArgumentException("no answer from Kafka at " + bootstrap + " within " + timeout);
            }
            if (infos == null || infos.isEmpty()) {
                throw new IllegalArgumentException("topic " + Topics.CACHE + " not found at " + bootstrap);
            }
            List<TopicPartition> parts = infos.stream().map(p -> new TopicPartition(p.topic(), p.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts, timeout);
            // an operation cut into parts arrives as consecutive records of one partition (same key)
            Map<String, List<CacheEvent>> pending = new HashMap<>();
            long read = 0, deadline = System.nanoTime() + timeout.toNanos();
            int asked = 0;
            while (!reachedEnd(c, end) && asked < limit) {
                var batch = c.poll(Duration.ofMillis(200));
                if (batch.isEmpty() && System.nanoTime() > deadline) {
                    throw new IllegalStateException("no records from " + bootstrap + " for " + timeout
                            + " before the end of " + Topics.CACHE + " was reached");
                }
                for (ConsumerRecord<String, byte[]> r : batch) {
                    deadline = System.nanoTime() + timeout.toNanos();
                    if (++read % 100_000 == 0 && progress != null) {
                        progress.accept(read);
                    }
                    if (r.offset() >= end.getOrDefault(new TopicPartition(r.topic(), r.partition()), Long.MAX_VALUE)) {
                        continue;
                    }
                    var gap = r.headers().lastHeader(CloudEventHeaders.MISSING_BEFORE);
                    if (gap != null) {
                        missing += Long.parseLong(new String(gap.value(), StandardCharsets.UTF_8));
                    }
                    if (instance != null && !instance.equals(r.key())) {
                        continue;
                    }
                    var type = r.headers().lastHeader(CloudEventHeaders.TYPE);
                    String t = type == null ? null : new String(type.value(), StandardCharsets.UTF_8);
                    if (t != null && !QUERY_TYPE.equals(t) && !WRITE_TYPE.equals(t)) {
                        continue; // finishes, removals and evictions: not parsed
                    }
                    CacheEvent e = EventCodec.fromJson(r.value(), CacheEvent.class);
                    boolean write = CacheEvent.START_WRITE_CACHE.equals(e.type());
                    if (!write && !CacheEvent.GET_CACHE_LOCATION.equals(e.type()) || e.keys() == null) {
                        continue;
                    }
                    long[] keys = e.keys();
                    if (e.parts() != null) {
                        List<CacheEvent> got = pending.computeIfAbsent(r.key(), k -> new ArrayList<>());
                        got.add(e);
                        if (e.part() < e.parts() - 1) {
                            continue;
                        }
                        pending.remove(r.key());
                        keys = got.stream().flatMapToLong(p -> java.util.Arrays.stream(p.keys())).toArray();
                    }
                    if (keys.length > 0) {
                        seen.add(new Seen(e.triggerTimeUs(), r.partition(), r.offset(), write, keys));
                        asked += write ? 0 : 1;
                    }
                }
            }
        }
        // one partition keeps each instance's order; across partitions the plane's clock decides
        seen.sort(Comparator.comparingLong(Seen::tsUs).thenComparingInt(Seen::partition)
                .thenComparingLong(Seen::offset));
        List<Op> out = new ArrayList<>(seen.size());
        long t0 = seen.isEmpty() ? 0 : seen.get(0).tsUs();
        int kept = 0;
        for (Seen q : seen) {
            if (!q.write() && ++kept > limit) {
                break;
            }
            out.add(new Op((q.tsUs() - t0) / 1000, q.write(), q.keys()));
        }
        return new Recorded(out, missing);
    }

    private static boolean reachedEnd(KafkaConsumer<?, ?> c, Map<TopicPartition, Long> end) {
        for (var e : end.entrySet()) {
            if (c.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
