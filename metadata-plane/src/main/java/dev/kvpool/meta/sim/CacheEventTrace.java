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
 * The workload a running pool recorded on {@code kvpool.cache}, as requests a {@link TraceSimulation} replays: every
 * GetCacheLocation (its parts joined), in the order they happened. A connector asks for a prompt's keys and writes
 * what missed, which is what a simulated request does, so an operator can ask how another policy or quota would have
 * done on the traffic the pool actually served. Reads the topic as it stands when the read starts (from the earliest
 * retained record to the end offsets of that moment), without a consumer group: nothing is committed.
 */
public final class CacheEventTrace {
    private static final String QUERY_TYPE = CloudEventHeaders.TYPE_CACHE_PREFIX + CacheEvent.GET_CACHE_LOCATION;

    private CacheEventTrace() {
    }

    /**
     * @param instance only this instance's queries; null: every instance (replayed as one)
     * @param limit    at most this many requests
     * @param progress called with the number of records read so far, every 100,000 records
     */
    /**
     * The queries read, and how many operations the publishing planes reported missing from the topic (dropped
     * while Kafka was slow or down, or undelivered; of any instance): when that is not 0 the replay is partial.
     */
    public record Recorded(List<MooncakeTrace.Request> requests, long missing) {
    }

    public static Recorded read(String bootstrap, String instance, int limit, Duration timeout,
                                LongConsumer progress) {
        Map<String, Object> cfg = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000,
                ConsumerConfig.CLIENT_ID_CONFIG, "kvpool-trace-reader",
                ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false); // a reader creates nothing
        record Query(long tsUs, int partition, long offset, long[] keys) {
        }
        List<Query> queries = new ArrayList<>();
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
            while (!reachedEnd(c, end) && queries.size() < limit) {
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
                    if (type != null && !QUERY_TYPE.equals(new String(type.value(), StandardCharsets.UTF_8))) {
                        continue; // writes, removals and evictions: not parsed (about half of the topic)
                    }
                    CacheEvent e = EventCodec.fromJson(r.value(), CacheEvent.class);
                    if (!CacheEvent.GET_CACHE_LOCATION.equals(e.type()) || e.keys() == null) {
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
                        queries.add(new Query(e.triggerTimeUs(), r.partition(), r.offset(), keys));
                    }
                }
            }
        }
        // one partition keeps each instance's order; across partitions the plane's clock decides
        queries.sort(Comparator.comparingLong(Query::tsUs).thenComparingInt(Query::partition)
                .thenComparingLong(Query::offset));
        List<MooncakeTrace.Request> out = new ArrayList<>(Math.min(limit, queries.size()));
        long t0 = queries.isEmpty() ? 0 : queries.get(0).tsUs();
        for (Query q : queries.subList(0, Math.min(limit, queries.size()))) {
            // input_length in tokens: unknown here (events carry keys, not the instance's block size)
            out.add(new MooncakeTrace.Request((q.tsUs() - t0) / 1000, 0, q.keys()));
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
