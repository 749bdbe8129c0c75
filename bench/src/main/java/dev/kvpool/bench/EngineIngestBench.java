package dev.kvpool.bench;

import dev.kvpool.api.events.Topics;
import dev.kvpool.engine.view.IndexedEngineView;
import dev.kvpool.meta.engine.ingest.EngineEventsConsumer;
import dev.kvpool.meta.engine.ingest.EngineEventsProducer;
import dev.kvpool.meta.engine.ingest.EventApplier;
import dev.kvpool.meta.engine.ingest.PodStates;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.testing.KafkaBroker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * {@code ./kvpool bench engine-ingest [--batches 200000] [--pods 16] [--rounds 2]}: fills {@code kvpool.engine-events} on a
 * local KRaft broker with vLLM KV-event batches (legacy array encoding) made from the Mooncake conversation trace: per
 * request a BlockStored of its hash_ids on one of the pods, every 4th request also a BlockRemoved of the previous
 * request's last blocks. Then, in rounds, (a) Kafka's own consumer reading the topic (poll loop touching each value's
 * bytes: the floor) and (b) KVPool's ingest (EngineEventsConsumer: consume + decode + apply to the metadata plane's IndexedEngineView). Reports
 * events/s of each and the ratio b/a.
 */
final class EngineIngestBench {
    private EngineIngestBench() {
    }

    static void run(Map<String, String> opt) throws IOException {
        int batches = Integer.parseInt(opt.getOrDefault("batches", "200000"));
        int pods = Integer.parseInt(opt.getOrDefault("pods", "16"));
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "2"));
        List<MooncakeTrace.Request> trace = MooncakeTrace.read(MooncakeTrace.conversation(), Integer.MAX_VALUE);
        try (KafkaBroker broker = KafkaBroker.started()) {
            broker.createTopics(Topics.ENGINE_EVENTS);
            long events = fill(broker.bootstrapServers(), trace, batches, pods);
            System.out.printf("engine-ingest: %,d batches, %,d events (%d pods, Mooncake conversation trace)%n",
                    batches, events, pods);
            double bestRaw = 0, bestKv = 0;
            for (int r = 1; r <= rounds; r++) {
                double raw = events / rawConsumer(broker.bootstrapServers(), batches);
                double kv = events / kvpool(broker.bootstrapServers(), batches);
                System.out.printf("round %d: kafka consumer %,.0f events/s, kvpool ingest %,.0f events/s (%.2f)%n", r,
                        raw, kv, kv / raw);
                bestRaw = Math.max(bestRaw, raw);
                bestKv = Math.max(bestKv, kv);
            }
            System.out.printf("best: kafka consumer %,.0f events/s, kvpool ingest %,.0f events/s, ratio %.2f%n",
                    bestRaw, bestKv, bestKv / bestRaw);
        }
    }

    private static long fill(String bootstrap, List<MooncakeTrace.Request> trace, int batches, int pods)
            throws IOException {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        long events = 0;
        long[] seq = new long[pods];
        try (var prod = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < batches; i++) {
                MooncakeTrace.Request req = trace.get(i % trace.size());
                MooncakeTrace.Request prev = trace.get((i + trace.size() - 1) % trace.size());
                boolean evict = i % 4 == 3 && prev.hashIds().length > 0;
                byte[] payload = batch(req.hashIds(), evict ? java.util.Arrays.copyOfRange(prev.hashIds(),
                        Math.max(0, prev.hashIds().length - 2), prev.hashIds().length) : null);
                events += evict ? 2 : 1;
                int pod = i % pods;
                var rec = new ProducerRecord<>(Topics.ENGINE_EVENTS, "bench@pod-" + pod, payload);
                rec.headers().add(EngineEventsProducer.H_INSTANCE, "bench".getBytes(StandardCharsets.UTF_8))
                        .add(EngineEventsProducer.H_POD, ("pod-" + pod).getBytes(StandardCharsets.UTF_8))
                        .add(EngineEventsProducer.H_SEQ, Long.toString(seq[pod]++).getBytes(StandardCharsets.UTF_8))
                        .add(EngineEventsProducer.H_SOURCE, "bench".getBytes(StandardCharsets.UTF_8));
                prod.send(rec);
            }
            prod.flush();
        }
        return events;
    }

    /** A vLLM batch: [ts, [BlockStored(hashes, GPU), BlockRemoved(removed, GPU)?], 0]. */
    private static byte[] batch(long[] stored, long[] removed) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(System.currentTimeMillis() / 1000.0).packArrayHeader(removed == null ? 1 : 2);
            p.packArrayHeader(10).packString("BlockStored").packArrayHeader(stored.length);
            for (long h : stored) {
                p.packLong(h);
            }
            p.packNil().packArrayHeader(0).packInt(16).packNil().packString("GPU").packNil().packNil().packInt(0);
            if (removed != null) {
                p.packArrayHeader(3).packString("BlockRemoved").packArrayHeader(removed.length);
                for (long h : removed) {
                    p.packLong(h);
                }
                p.packString("GPU");
            }
            p.packInt(0);
            return p.toByteArray();
        }
    }

    /** Seconds for Kafka's own consumer to read every record, touching each value. */
    private static double rawConsumer(String bootstrap, int records) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        long t0 = System.nanoTime();
        long n = 0, sum = 0;
        try (var c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
            var parts = c.partitionsFor(Topics.ENGINE_EVENTS).stream()
                    .map(i -> new TopicPartition(Topics.ENGINE_EVENTS, i.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            while (n < records) {
                for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(200))) {
                    for (byte b : r.value()) {
                        sum += b;
                    }
                    n++;
                }
            }
        }
        double s = (System.nanoTime() - t0) / 1e9;
        if (sum == 42) {
            System.out.print(""); // keeps the byte loop
        }
        return s;
    }

    /** Seconds for KVPool's consumer to read, decode and apply every record to a fresh view. */
    private static double kvpool(String bootstrap, int records) {
        var meters = new SimpleMeterRegistry();
        var applier = new EventApplier(new IndexedEngineView(), new PodStates(), Clock.systemUTC(), s -> Map.of(),
                meters);
        long t0 = System.nanoTime();
        try (var c = new EngineEventsConsumer(bootstrap, Topics.ENGINE_EVENTS, Map.of(), "bench", applier, meters)) {
            while (c.records() < records) {
                Thread.onSpinWait();
            }
            double s = (System.nanoTime() - t0) / 1e9;
            if (applier.malformed() > 0 || applier.gaps() > 0) {
                throw new IllegalStateException("bench batches did not apply cleanly: " + applier.malformed()
                        + " malformed, " + applier.gaps() + " gaps");
            }
            return s;
        }
    }
}
