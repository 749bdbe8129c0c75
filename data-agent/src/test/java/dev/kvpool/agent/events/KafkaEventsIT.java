package dev.kvpool.agent.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.agent.store.AgentSetup;
import dev.kvpool.agent.store.BlockStore;
import dev.kvpool.api.events.BlockBatch;
import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import dev.kvpool.testing.KafkaBroker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** kvpool.blocks on a real broker: batching, seq, CloudEvents headers, spool across a broker kill and restart. */
class KafkaEventsIT {
    static final int BLOCK = 16 * 1024;

    @TempDir
    Path dir;

    /** A started broker with the topic. */
    KafkaBroker broker() throws Exception {
        KafkaBroker b = new KafkaBroker(dir.resolve("kafka"));
        b.start();
        b.createTopics(Topics.BLOCKS);
        return b;
    }

    @Test
    void kafkaKilledAndRestartedDuringASaveLoadLosesNoBatch() throws Exception {
        try (KafkaBroker broker = broker()) {
            var s = AgentSetup.Settings.defaults(dir).withBlock(BLOCK, 1, 64L << 20).withNvme(List.of(), 0);
            BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-k", "inst-k", "grp", 64,
                    20, 100_000, 0);
            AtomicBoolean run = new AtomicBoolean(true);
            AtomicInteger saves = new AtomicInteger();
            int maxSpooled = 0;
            try (BlockStore store = AgentSetup.build(s, pub).store(); Arena a = Arena.ofShared()) {
                MemorySegment[] src = TestBlocks.random(a, 4, BLOCK, 1);
                Thread load = Thread.ofPlatform().start(() -> {
                    long k = 0;
                    while (run.get()) {
                        store.save(new long[] {k, k + 1, k + 2, k + 3}, src, null);
                        k += 4;
                        saves.incrementAndGet();
                        try {
                            Thread.sleep(2);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                Thread.sleep(2000);
                broker.stop(); // kill -9 under the producer
                long until = System.currentTimeMillis() + 4000;
                while (System.currentTimeMillis() < until) {
                    maxSpooled = Math.max(maxSpooled, pub.spooled());
                    Thread.sleep(50);
                }
                broker.start(); // same port, same data
                Thread.sleep(2000);
                run.set(false);
                load.join();
                assertTrue(pub.flush(60_000), "spool drained after the broker came back; spooled " + pub.spooled());
            }
            long batches = pub.nextSeq();
            assertTrue(maxSpooled > 10, "batches were spooled while Kafka was down: " + maxSpooled);
            assertEquals(0, pub.droppedBatches());
            pub.close();

            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
            p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify");
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            TreeMap<Long, BlockBatch> bySeq = new TreeMap<>();
            int records = 0;
            long events = 0;
            try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
                c.assign(List.of(new TopicPartition(Topics.BLOCKS, 0)));
                c.seekToBeginning(List.of(new TopicPartition(Topics.BLOCKS, 0)));
                long end = System.currentTimeMillis() + 60_000;
                while (bySeq.size() < batches && System.currentTimeMillis() < end) {
                    for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                        records++;
                        assertEquals("inst-k", r.key());
                        assertNotNull(r.headers().lastHeader(CloudEventHeaders.ID));
                        assertEquals(CloudEventHeaders.TYPE_BLOCKS,
                                new String(r.headers().lastHeader(CloudEventHeaders.TYPE).value(), StandardCharsets.UTF_8));
                        BlockBatch b = EventCodec.fromJson(r.value(), BlockBatch.class);
                        assertEquals("agent-k-" + b.seq(),
                                new String(r.headers().lastHeader(CloudEventHeaders.ID).value(), StandardCharsets.UTF_8));
                        if (bySeq.put(b.seq(), b) == null) {
                            events += b.events().stream().filter(e -> e.eventType().equals("stored")).count();
                        }
                    }
                }
            }
            assertEquals(batches, bySeq.size(), "every batch arrived (duplicates allowed, deduped on ce_id)");
            assertEquals(0L, bySeq.firstKey());
            assertEquals(batches - 1, bySeq.lastKey(), "seq without gaps");
            assertEquals(saves.get(), events, "one stored event per save (the rest are evictions)");
            assertTrue(batches < saves.get(), "events are batched, not one record per block: " + batches);
            System.out.printf("[KafkaEventsIT] %d saves, %d batches, %d records (%d duplicates), max spooled %d%n",
                    saves.get(), batches, records, records - batches, maxSpooled);
        }
    }

    @Test
    void aRestartedAgentAnnouncesWhatItKeptRightAfterAllClearedThroughASmallSpool() throws Exception {
        var s = AgentSetup.Settings.defaults(dir).withBlock(BLOCK, 1, 4L << 20)
                .withNvme(List.of(dir.resolve("nvme0")), 256L * BLOCK);
        int n = 64;
        try (KafkaBroker broker = broker(); Arena a = Arena.ofShared()) {
            MemorySegment[] one = TestBlocks.random(a, 1, BLOCK, 12);
            try (BlockStore first = AgentSetup.build(s, EventSink.NONE).store()) {
                for (long k = 0; k < n; k++) { // 64 prompts of one block: 64 stored events at the restart
                    first.save(new long[] {7_000 + k}, one, null);
                }
                first.awaitWriteBehind();
            }
            // a spool of 4 batches of 1 event: without pacing, the announcement would push all_cleared out of it
            try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-a", "inst-a", "g", 1,
                    5, 4, 0); BlockStore again = AgentSetup.build(s, pub).store()) {
                for (long k = 9_994; k <= 9_999; k++) { // served while announcing; their events wait behind it
                    again.save(new long[] {k}, one, null);
                }
                again.keptAnnounced().get(60, java.util.concurrent.TimeUnit.SECONDS);
                again.awaitWriteBehind();
                assertTrue(pub.flush(60_000));
                assertEquals(0, pub.droppedBatches(), "nothing pushed out of the spool");
            }
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
            p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-a");
            TreeMap<Long, BlockBatch> bySeq = new TreeMap<>();
            try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
                TopicPartition tp = new TopicPartition(Topics.BLOCKS, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long end = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < end && bySeq.values().stream().noneMatch(b -> b.events().stream()
                        .anyMatch(e -> e.blockHashes() != null && e.blockHashes()[0] == 9_999))) {
                    for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                        BlockBatch b = EventCodec.fromJson(r.value(), BlockBatch.class);
                        bySeq.put(b.seq(), b);
                    }
                }
            }
            List<BlockBatch.BlockEvent> all = bySeq.values().stream().flatMap(b -> b.events().stream()).toList();
            assertEquals(bySeq.lastKey() + 1, bySeq.size(), "no seq gap");
            assertEquals(BlockBatch.BlockEvent.ALL_CLEARED, all.getFirst().eventType());
            for (int i = 1; i <= n; i++) {
                assertEquals("stored/disk", all.get(i).eventType() + "/" + all.get(i).medium(), "kept block " + i);
            }
            assertTrue(all.stream().skip(n + 1).anyMatch(e -> e.blockHashes() != null && e.blockHashes()[0] == 9_999),
                    "the save made meanwhile comes after the announcement");
        }
    }

    @Test
    void seqGoesOnAcrossAnAgentRestartSoNoBatchLooksLikeADuplicate() throws Exception {
        try (KafkaBroker broker = broker()) {
            Path seqs = dir.resolve("events-agent-r.seq");
            for (int run = 0; run < 2; run++) { // two lives of one agent, stopped cleanly in between
                try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-r", "inst-r",
                        "grp", 1, 5, 1000, SeqFile.open(seqs), null)) {
                    assertEquals(run * 10L, pub.nextSeq());
                    for (int i = 0; i < 10; i++) {
                        pub.publish(BlockBatch.BlockEvent.removed(new long[] {run * 100L + i}, "cpu"));
                    }
                    assertTrue(pub.flush(30_000));
                }
            }
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
            p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-r");
            TreeMap<String, Long> byId = new TreeMap<>(); // ce_id -> the block the batch carried
            try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
                TopicPartition tp = new TopicPartition(Topics.BLOCKS, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long end = System.currentTimeMillis() + 30_000;
                while (byId.size() < 20 && System.currentTimeMillis() < end) {
                    for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                        String id = new String(r.headers().lastHeader(CloudEventHeaders.ID).value(), StandardCharsets.UTF_8);
                        BlockBatch b = EventCodec.fromJson(r.value(), BlockBatch.class);
                        Long had = byId.put(id, b.events().getFirst().blockHashes()[0]);
                        assertTrue(had == null || had == b.events().getFirst().blockHashes()[0],
                                "ce_id " + id + " named two different batches");
                    }
                }
            }
            assertEquals(20, byId.size(), "20 batches, 20 distinct ce_ids: " + byId.keySet());
            assertTrue(byId.containsKey("agent-r-19"));
        }
    }

    @Test
    void batchesSpooledWhenTheAgentIsKilledDuringAKafkaOutageAreSentByTheNextRun() throws Exception {
        try (KafkaBroker broker = broker()) {
            broker.stop(); // Kafka is down for the whole first life of the agent
            int n = 50;
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process p = new ProcessBuilder(java, "-Xmx128m", "-cp", System.getProperty("java.class.path"),
                    SpoolingAgent.class.getName(), dir.toString(), broker.bootstrapServers(), Integer.toString(n))
                    .redirectErrorStream(true).start();
            try (var out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))) {
                Thread watchdog = Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(120_000);
                        p.destroyForcibly();
                    } catch (InterruptedException ignored) {
                        // done in time
                    }
                });
                String line;
                while ((line = out.readLine()) != null && !line.startsWith("SPOOLED")) {
                    System.out.println("[SpoolingAgent] " + line);
                }
                watchdog.interrupt();
                assertEquals("SPOOLED " + n + " sent 0", line);
                p.destroyForcibly(); // SIGKILL: no flush, no clean close of the seq file or the spool
                p.waitFor();
            }
            broker.start();
            try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-s", "inst-s", "grp",
                    1, 5, 10_000, SeqFile.open(dir.resolve("events-agent-s.seq")),
                    SpoolLog.open(dir.resolve("events-agent-s.spool")))) {
                assertEquals(n, pub.keptFromLastRun());
                assertEquals(SeqFile.RESERVE, pub.nextSeq(), "after a crash the new seqs start at the reservation");
                for (int i = 0; i < 5; i++) {
                    pub.publish(BlockBatch.BlockEvent.removed(new long[] {1000 + i}, "disk"));
                }
                assertTrue(pub.flush(60_000), "spooled " + pub.spooled());
            }
            List<BlockBatch> got = consume(broker, n + 5);
            assertEquals(n + 5, got.size(), "the killed run's batches and the new ones, each once");
            for (int i = 0; i < got.size(); i++) {
                BlockBatch b = got.get(i);
                long seq = i < n ? i : SeqFile.RESERVE + i - n;
                long block = i < n ? i : 1000 + i - n;
                assertEquals(seq, b.seq(), "in order, old batches first");
                assertEquals(block, b.events().getFirst().blockHashes()[0]);
            }
            try (SpoolLog log = SpoolLog.open(dir.resolve("events-agent-s.spool"))) {
                assertEquals(List.of(), log.recovered(), "all acknowledged: nothing for a third run");
            }
        }
    }

    @Test
    void aCleanStopDuringAKafkaOutageKeepsTheSpoolForTheNextRun() throws Exception {
        try (KafkaBroker broker = broker()) {
            for (int run = 0; run < 2; run++) {
                if (run == 0) {
                    broker.stop();
                } else {
                    broker.start();
                }
                try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-c", "inst-c",
                        "grp", 1, 5, 1000, SeqFile.open(dir.resolve("events-agent-c.seq")),
                        SpoolLog.open(dir.resolve("events-agent-c.spool")))) {
                    assertEquals(run * 10, pub.keptFromLastRun());
                    assertEquals(run * 10L, pub.nextSeq(), "a clean stop: seqs go on exactly");
                    for (int i = 0; i < 10; i++) {
                        pub.publish(BlockBatch.BlockEvent.removed(new long[] {run * 100L + i}, "cpu"));
                    }
                    if (run == 1) {
                        assertTrue(pub.flush(60_000));
                    }
                }
            }
            List<BlockBatch> got = consume(broker, 20);
            assertEquals(20, got.size());
            for (int i = 0; i < 20; i++) {
                assertEquals(i, got.get(i).seq());
                assertEquals((i / 10) * 100L + i % 10, got.get(i).events().getFirst().blockHashes()[0]);
            }
        }
    }

    /** Batches on kvpool.blocks in offset order, duplicates (same ce_id) dropped as a consumer would. */
    static List<BlockBatch> consume(KafkaBroker broker, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-" + System.nanoTime());
        List<BlockBatch> out = new java.util.ArrayList<>();
        java.util.Set<String> ids = new java.util.HashSet<>();
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(Topics.BLOCKS, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = System.currentTimeMillis() + 30_000;
            while (out.size() < expected && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                    if (ids.add(new String(r.headers().lastHeader(CloudEventHeaders.ID).value(), StandardCharsets.UTF_8))) {
                        out.add(EventCodec.fromJson(r.value(), BlockBatch.class));
                    }
                }
            }
            for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(1000))) { // nothing more than expected
                if (ids.add(new String(r.headers().lastHeader(CloudEventHeaders.ID).value(), StandardCharsets.UTF_8))) {
                    out.add(EventCodec.fromJson(r.value(), BlockBatch.class));
                }
            }
        }
        return out;
    }

    @Test
    void longChainsAreCutIntoBatchesThatFitKafkasRecordLimit() throws Exception {
        // a busy node saving long prompts: 600 stored events of 1,024 blocks each would be one ~13 MB batch by count
        try (KafkaBroker broker = broker()) {
            long next;
            try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-l", "inst-l", "grp",
                    512, 20, 1000, 0)) {
                for (int e = 0; e < 600; e++) {
                    long[] h = new long[1024];
                    for (int i = 0; i < h.length; i++) {
                        h[i] = Long.MIN_VALUE + (long) e * 1024 + i; // 20 digits and a sign: the longest hashes
                    }
                    pub.publish(BlockBatch.BlockEvent.stored(h, e == 0 ? null : h[0] - 1, 16, "cpu", "host", 1024L << 18));
                }
                pub.publish(BlockBatch.BlockEvent.removed(java.util.stream.LongStream.range(0, 200_000).toArray(), "cpu"));
                assertTrue(pub.flush(60_000), "every batch acknowledged; spooled " + pub.spooled());
                assertEquals(0, pub.droppedBatches());
                next = pub.nextSeq();
                assertTrue(next > 10, "cut by size, not only by count: " + next + " batches");
            }
            List<BlockBatch> got = consume(broker, (int) next);
            assertEquals(next, got.size());
            long stored = 0, removed = 0;
            for (BlockBatch b : got) {
                for (BlockBatch.BlockEvent e : b.events()) {
                    if (e.eventType().equals("stored")) {
                        stored += e.blockHashes().length;
                    } else {
                        removed += e.blockHashes().length;
                    }
                }
            }
            assertEquals(600 * 1024L, stored, "every block hash arrived");
            for (BlockBatch b : got) {
                assertTrue(EventCodec.toJson(b).length < BlockEventPublisher.DEFAULT_MAX_BATCH_BYTES, "batch " + b.seq());
            }
            assertEquals(200_000L, removed, "an event larger than a batch is split, not lost");
        }
    }

    @Test
    void aBatchKafkaRefusesIsDroppedAndCountedInsteadOfHoldingUpTheRest() throws Exception {
        try (KafkaBroker broker = broker()) {
            try (BlockEventPublisher pub = new BlockEventPublisher(broker.bootstrapServers(), "agent-t", "inst-t", "grp",
                    512, 20, 1000, 0).maxBatchBytes(8 << 20)) { // misconfigured above the producer's 1 MiB
                pub.publish(BlockBatch.BlockEvent.removed(java.util.stream.LongStream.range(0, 200_000).toArray(), "cpu"));
                assertTrue(pub.flush(30_000));
                pub.publish(BlockBatch.BlockEvent.removed(new long[] {42}, "cpu"));
                assertTrue(pub.flush(30_000), "the batches behind it still go");
                assertEquals(1, pub.droppedBatches());
            }
            List<BlockBatch> got = consume(broker, 1);
            assertEquals(1, got.size());
            assertEquals(1, got.getFirst().seq(), "seq 0 is the gap consumers see");
        }
    }

    @Test
    void theSpoolIsBoundedInBytesToo() throws Exception {
        try (BlockEventPublisher pub = new BlockEventPublisher("127.0.0.1:1", "agent-y", "i", "g", 1, 5, 1000, 0)
                .maxSpoolBytes(10_000)) {
            long[] h = java.util.stream.LongStream.range(1_000_000_000_000L, 1_000_000_000_100L).toArray(); // ~1.4 KB
            for (int i = 0; i < 20; i++) {
                pub.publish(BlockBatch.BlockEvent.removed(h, "cpu"));
            }
            long end = System.currentTimeMillis() + 5000;
            while (pub.nextSeq() < 20 && System.currentTimeMillis() < end) {
                Thread.sleep(20);
            }
            assertEquals(20, pub.nextSeq());
            assertTrue(pub.spooledBytes() <= 10_000, "bytes " + pub.spooledBytes());
            assertEquals(20, pub.spooled() + pub.droppedBatches(), "every batch kept or counted as dropped");
            assertTrue(pub.droppedBatches() >= 12, "dropped " + pub.droppedBatches());
        }
    }

    @Test
    void aBurstThatWaitsForRoomPushesOutNothingThatABurstWithoutWaitingWould() throws Exception {
        try (KafkaBroker broker = broker()) {
            try (BlockEventPublisher hasty = new BlockEventPublisher(broker.bootstrapServers(), "agent-h", "i", "g", 1, 5,
                    8, 0)) {
                for (int i = 0; i < 300; i++) {
                    hasty.publish(BlockBatch.BlockEvent.removed(new long[] {i}, "disk"));
                }
                assertTrue(hasty.flush(30_000));
                assertTrue(hasty.droppedBatches() > 0, "a spool of 8 cannot hold a burst of 300");
            }
            try (BlockEventPublisher paced = new BlockEventPublisher(broker.bootstrapServers(), "agent-p", "i", "g", 1, 5,
                    8, 0)) {
                for (int i = 0; i < 300; i++) {
                    assertTrue(paced.awaitRoom(10_000), "Kafka takes them: room within 10 s");
                    paced.publish(BlockBatch.BlockEvent.removed(new long[] {i}, "disk"));
                }
                assertTrue(paced.flush(30_000));
                assertEquals(0, paced.droppedBatches());
                assertEquals(300, paced.sentBatches());
            }
        }
        try (BlockEventPublisher down = new BlockEventPublisher("127.0.0.1:1", "agent-d", "i", "g", 1, 5, 4, 0)) {
            for (int i = 0; i < 3; i++) {
                down.publish(BlockBatch.BlockEvent.removed(new long[] {i}, "disk"));
            }
            long t0 = System.nanoTime();
            assertFalse(down.awaitRoom(300), "no Kafka: no room");
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "and the wait is bounded");
        }
    }

    @Test
    void fullSpoolDropsTheOldestAndCountsIt() throws Exception {
        try (BlockEventPublisher pub = new BlockEventPublisher("127.0.0.1:1", "agent-x", "i", "g", 1, 5, 5, 0)) {
            for (int i = 0; i < 20; i++) {
                pub.publish(BlockBatch.BlockEvent.removed(new long[] {i}, "cpu"));
            }
            long end = System.currentTimeMillis() + 5000;
            while (pub.droppedBatches() < 15 && System.currentTimeMillis() < end) {
                Thread.sleep(20);
            }
            assertEquals(15, pub.droppedBatches());
            assertEquals(5, pub.spooled());
            assertEquals(20, pub.nextSeq());
        }
    }
}
