package dev.kvpool.agent.events;

import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.api.events.BlockBatch;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import dev.kvpool.api.events.CloudEventHeaders;
import dev.kvpool.api.events.EventCodec;
import dev.kvpool.api.events.Topics;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Logger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Block lifecycle events to {@code kvpool.blocks} exactly as spec/events.md says: events are collected into a
 * {@link BlockBatch} flushed when it reaches {@code maxEvents} or about {@link #maxBatchBytes} of JSON, or after
 * {@code linger} (~20 ms), never per block (an event larger than a batch is split: a chain into sub-chains, each
 * with the hash before it as its parent), so every record fits Kafka's default 1 MiB limit;
 * {@code seq} grows by one per batch per agent; each record carries CloudEvents binary headers
 * ({@code ce_id = <agent>-<seq>}, so consumers dedupe on it) and is keyed by instance id.
 *
 * <p>Every batch goes into a bounded local spool first; a sender thread ships the spool in order (idempotent
 * producer, several in flight without reordering) and removes a batch only once Kafka acknowledged it. When Kafka
 * is unreachable the spool holds the batches and the sender resends from the oldest unacknowledged one once it is
 * back; when the spool is full the oldest batch is dropped and counted ({@link #droppedBatches()}), so a
 * consumer sees the gap in {@code seq}. With a {@link SeqFile}, {@code seq} goes on across restarts instead of
 * starting at 0 again (which would make consumers drop the new batches as duplicates). With a {@link SpoolLog}, the
 * spool is also on disk: batches Kafka had not acknowledged when the agent stopped or was killed are sent, in order
 * and before any new one, by the next run.
 */
public final class BlockEventPublisher implements EventSink, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(BlockEventPublisher.class.getName());
    /** Half of Kafka's default {@code max.request.size} and broker {@code message.max.bytes} (1 MiB). */
    public static final int DEFAULT_MAX_BATCH_BYTES = 512 * 1024;
    /** The spool's bound in bytes (besides its count): batches of up to 512 KiB would otherwise fill the heap. */
    public static final long DEFAULT_MAX_SPOOL_BYTES = 128L << 20;
    /** JSON bytes of one hash at most: a sign, 19 digits and a comma. */
    private static final int HASH_BYTES = 21;
    /** JSON bytes of an event without its hashes, at most (field names, medium, location, numbers). */
    private static final int EVENT_BYTES = 256;

    /** One spooled batch. */
    static final class Spooled {
        final long seq;
        final byte[] value;
        final long tsMs;
        volatile boolean acked;

        Spooled(long seq, byte[] value, long tsMs) {
            this.seq = seq;
            this.value = value;
            this.tsMs = tsMs;
        }
    }

    private final String agent;
    private final String instanceId;
    private final String instanceGroup;
    private final int maxEvents;
    private final long lingerNanos;
    private final int spoolCapacity;
    private final Producer<String, byte[]> producer;
    private final String topic;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private List<BlockEvent> pending = new ArrayList<>();
    private long pendingSince;
    private long pendingBytes;
    private int maxBatchBytes = DEFAULT_MAX_BATCH_BYTES;
    private long backoffMs = 100;
    private long spoolBytes;
    private long maxSpoolBytes = DEFAULT_MAX_SPOOL_BYTES;
    private long nextSeq;
    private final ArrayDeque<Spooled> spool = new ArrayDeque<>();
    private int sentIndex; // spool entries [0, sentIndex) are in flight or acked
    private boolean failed;
    private int inFlight;
    private volatile boolean running = true;
    private final AtomicLong dropped = new AtomicLong(), sentBatches = new AtomicLong(), batchedEvents = new AtomicLong(),
            sendErrors = new AtomicLong();
    private final Thread flusher, sender;
    private final SeqFile seqs;
    private boolean seqFileFailing;
    private final SpoolLog disk;
    private boolean diskFailing;
    private final int keptFromLastRun;

    public BlockEventPublisher(String bootstrapServers, String agent, String instanceId, String instanceGroup,
                               int maxEvents, long lingerMillis, int spoolCapacity, long firstSeq) {
        this(createProducer(bootstrapServers), Topics.BLOCKS, agent, instanceId, instanceGroup, maxEvents,
                lingerMillis, spoolCapacity, firstSeq, null, null);
    }

    /**
     * Seq continued from {@code seqs} (see {@link SeqFile}); the spool also on disk when {@code disk} is not null, its
     * batches from the last run sent first (see {@link SpoolLog}).
     */
    public BlockEventPublisher(String bootstrapServers, String agent, String instanceId, String instanceGroup,
                               int maxEvents, long lingerMillis, int spoolCapacity, SeqFile seqs, SpoolLog disk) {
        this(createProducer(bootstrapServers), Topics.BLOCKS, agent, instanceId, instanceGroup, maxEvents,
                lingerMillis, spoolCapacity, seqs.first(), seqs, disk);
    }

    public BlockEventPublisher(Producer<String, byte[]> producer, String topic, String agent, String instanceId,
                               String instanceGroup, int maxEvents, long lingerMillis, int spoolCapacity,
                               long firstSeq) {
        this(producer, topic, agent, instanceId, instanceGroup, maxEvents, lingerMillis, spoolCapacity, firstSeq, null,
                null);
    }

    public BlockEventPublisher(Producer<String, byte[]> producer, String topic, String agent, String instanceId,
                               String instanceGroup, int maxEvents, long lingerMillis, int spoolCapacity,
                               long firstSeq, SeqFile seqs, SpoolLog disk) {
        this.seqs = seqs;
        this.disk = disk;
        this.producer = producer;
        this.topic = topic;
        this.agent = agent;
        this.instanceId = instanceId;
        this.instanceGroup = instanceGroup;
        this.maxEvents = Math.max(1, maxEvents);
        this.lingerNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, lingerMillis));
        this.spoolCapacity = Math.max(1, spoolCapacity);
        this.nextSeq = firstSeq;
        if (disk != null) {
            nextSeq = Math.max(nextSeq, disk.lastDone() + 1);
            for (SpoolLog.Batch b : disk.recovered()) { // before anything new, in their order
                spool.addLast(new Spooled(b.seq(), b.value(), b.tsMs()));
                spoolBytes += b.value().length;
                nextSeq = Math.max(nextSeq, b.seq() + 1); // a lost seq file must not make seqs repeat
            }
            while (spool.size() > this.spoolCapacity || spoolBytes > maxSpoolBytes) {
                dropOldest();
            }
            if (!spool.isEmpty()) {
                LOG.info("kvpool.blocks: " + spool.size() + " batches the last run could not send (seq "
                        + spool.peekFirst().seq + "-" + spool.peekLast().seq + ") are sent first, from " + disk.dir());
            }
        }
        this.keptFromLastRun = spool.size();
        this.reach = new dev.kvpool.api.logging.FailureLog(org.jboss.logging.Logger.getLogger(BlockEventPublisher.class),
                "kvpool.blocks to Kafka (batches spooled meanwhile)", java.time.Duration.ofSeconds(30));
        this.flusher = Thread.ofPlatform().daemon().name("kvpool-events-flush").start(this::flushLoop);
        this.sender = Thread.ofPlatform().daemon().name("kvpool-events-send").start(this::sendLoop);
    }

    public static Producer<String, byte[]> createProducer(String bootstrapServers) {
        return createProducer(bootstrapServers, Map.of());
    }

    /** With the client security settings of KafkaClientConfig (TLS, SASL; keys disjoint from the ones below). */
    public static Producer<String, byte[]> createProducer(String bootstrapServers, Map<String, String> clientConfig) {
        Properties p = new Properties();
        p.putAll(clientConfig);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none"); // lz4/snappy/zstd natives are not on the classpath
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "2000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "8000");
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kvpool-agent");
        return new KafkaProducer<>(p);
    }

    /** Kafka out of reach: one line when it starts, one per 30 s, one when it is back. */
    private final dev.kvpool.api.logging.FailureLog reach;

    /**
     * Caps a batch's JSON at about {@code bytes} (default {@link #DEFAULT_MAX_BATCH_BYTES}); keep it under the
     * producer's {@code max.request.size} and the topic's {@code max.message.bytes}.
     */
    public BlockEventPublisher maxBatchBytes(int bytes) {
        lock.lock();
        try {
            maxBatchBytes = Math.max(4096, bytes);
        } finally {
            lock.unlock();
        }
        return this;
    }

    /**
     * Bounds the spool by bytes as well as by count (default {@link #DEFAULT_MAX_SPOOL_BYTES}): while Kafka is down
     * the oldest batches go, counted, once either is reached.
     */
    public BlockEventPublisher maxSpoolBytes(long bytes) {
        lock.lock();
        try {
            maxSpoolBytes = Math.max(1, bytes);
        } finally {
            lock.unlock();
        }
        return this;
    }

    /** Bytes of the batches in the spool. */
    public long spooledBytes() {
        lock.lock();
        try {
            return spoolBytes;
        } finally {
            lock.unlock();
        }
    }

    /** Queues an event; it leaves in the next batch. */
    @Override
    public void publish(BlockEvent e) {
        lock.lock();
        try {
            long[] h = e.blockHashes();
            int perPiece = (maxBatchBytes - EVENT_BYTES) / HASH_BYTES;
            if (h == null || h.length <= perPiece) {
                add(e, EVENT_BYTES + (h == null ? 0 : (long) h.length * HASH_BYTES));
            } else { // larger than a batch: sub-chains, each after the last hash of the one before
                for (int from = 0; from < h.length; from += perPiece) {
                    int to = Math.min(h.length, from + perPiece);
                    long[] part = java.util.Arrays.copyOfRange(h, from, to);
                    Long parent = !BlockEvent.STORED.equals(e.eventType()) ? null
                            : from == 0 ? e.parentBlockHash() : Long.valueOf(h[from - 1]);
                    Long bytes = e.bytes() == null ? null : e.bytes() / h.length * part.length;
                    add(new BlockEvent(e.eventType(), part, parent, e.blockSize(), e.medium(), e.storageLocation(), bytes),
                            EVENT_BYTES + (long) part.length * HASH_BYTES);
                }
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits while the spool is more than half full (by count or bytes), so a burst (the announcement of what a
     * restarted agent kept: millions of blocks) does not push out batches Kafka has yet to take, the restart's
     * {@code all_cleared} first among them. False when there was no room within {@code maxMillis} (Kafka down or
     * slower than the burst): the caller goes on without waiting and the spool's bounds apply as for any event.
     */
    @Override
    public boolean awaitRoom(long maxMillis) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMillis);
        lock.lock();
        try {
            while (spool.size() > spoolCapacity / 2 || spoolBytes + pendingBytes > maxSpoolBytes / 2) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20))); // acks leave the spool later
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds the lock. */
    private void add(BlockEvent e, long bytes) {
        if (!pending.isEmpty() && pendingBytes + bytes > maxBatchBytes) {
            cutBatch();
        }
        if (pending.isEmpty()) {
            pendingSince = System.nanoTime();
        }
        pending.add(e);
        pendingBytes += bytes;
        if (pending.size() >= maxEvents) {
            cutBatch();
        }
    }

    /** Caller holds the lock. */
    private void cutBatch() {
        if (pending.isEmpty()) {
            return;
        }
        long ts = System.currentTimeMillis();
        BlockBatch b = new BlockBatch(agent, instanceId, instanceGroup, nextSeq, ts, pending);
        Spooled s = new Spooled(nextSeq++, EventCodec.toJson(b), ts);
        if (seqs != null) {
            try {
                seqs.advanced(nextSeq); // once per SeqFile.RESERVE batches: one small fsync
                seqFileFailing = false;
            } catch (RuntimeException e) { // events go on; only a crash before it works again could repeat seqs
                if (!seqFileFailing) {
                    LOG.warning("kvpool.blocks: " + e.getMessage() + " (" + e.getCause() + "); seq may repeat after a crash");
                }
                seqFileFailing = true;
            }
        }
        batchedEvents.addAndGet(pending.size());
        pending = new ArrayList<>();
        pendingBytes = 0;
        while (!spool.isEmpty() && (spool.size() >= spoolCapacity || spoolBytes + s.value.length > maxSpoolBytes)) {
            dropOldest();
        }
        if (disk != null) {
            try {
                disk.append(s.seq, s.tsMs, s.value);
                if (diskFailing) {
                    LOG.info("kvpool.blocks: the spool on disk works again");
                }
                diskFailing = false;
            } catch (RuntimeException e) { // events go on in memory; only a crash meanwhile would lose batches
                if (!diskFailing) {
                    LOG.warning("kvpool.blocks: " + e.getMessage() + " (" + e.getCause() + "); spooling in memory only");
                }
                diskFailing = true;
            }
        }
        spool.addLast(s);
        spoolBytes += s.value.length;
        changed.signalAll();
    }

    /** Caller holds the lock. */
    private void dropOldest() {
        Spooled s = spool.pollFirst();
        spoolBytes -= s.value.length;
        dropped.incrementAndGet();
        if (sentIndex > 0) {
            sentIndex--;
        }
        forget(s.seq);
    }

    /** Drops acknowledged batches from the head, in order. Caller holds the lock. */
    private void popAcked() {
        long last = -1;
        while (!spool.isEmpty() && spool.peekFirst().acked) {
            Spooled s = spool.pollFirst();
            spoolBytes -= s.value.length;
            last = s.seq;
            sentIndex = Math.max(0, sentIndex - 1);
        }
        if (last >= 0) {
            forget(last);
        }
    }

    /** Batches up to {@code seq} left the spool: the disk may drop them. Caller holds the lock. */
    private void forget(long seq) {
        if (disk != null) {
            try {
                disk.done(seq);
            } catch (RuntimeException e) { // the next run may resend them: consumers dedupe on ce_id
                if (!diskFailing) {
                    LOG.warning("kvpool.blocks: " + e.getMessage() + " (" + e.getCause() + ")");
                }
                diskFailing = true;
            }
        }
    }

    private void flushLoop() {
        lock.lock();
        try {
            while (running) {
                if (!pending.isEmpty()) {
                    long due = pendingSince + lingerNanos - System.nanoTime();
                    if (due <= 0) {
                        cutBatch();
                        continue;
                    }
                    changed.awaitNanos(due);
                } else {
                    changed.await(100, TimeUnit.MILLISECONDS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    private void sendLoop() {
        while (running || hasUnsent()) {
            Spooled next;
            lock.lock();
            try {
                popAcked();
                if (failed) {
                    if (inFlight > 0) { // wait for the rest of the failed window to settle
                        changed.await(50, TimeUnit.MILLISECONDS);
                        continue;
                    }
                    failed = false;
                    sentIndex = 0; // resend everything unacknowledged, oldest first
                    long wait = backoffMs;
                    backoffMs = Math.min(2000, backoffMs * 2); // back to 100 ms at the next acknowledgement
                    lock.unlock();
                    try {
                        Thread.sleep(wait);
                    } finally {
                        lock.lock();
                    }
                    continue;
                }
                if (sentIndex >= spool.size() || inFlight >= 64) {
                    if (!running && spool.isEmpty()) {
                        return;
                    }
                    changed.await(20, TimeUnit.MILLISECONDS);
                    continue;
                }
                next = get(sentIndex++);
                if (next.acked) {
                    continue;
                }
                inFlight++;
            } catch (InterruptedException e) {
                return;
            } finally {
                if (lock.isHeldByCurrentThread()) {
                    lock.unlock();
                }
            }
            try {
                send(next);
            } catch (RuntimeException e) { // metadata not available within max.block.ms, producer closed, ...
                settle(next, e);
            }
        }
    }

    private Spooled get(int index) {
        int i = 0;
        for (Spooled s : spool) {
            if (i++ == index) {
                return s;
            }
        }
        throw new IndexOutOfBoundsException(index);
    }

    private void send(Spooled s) {
        ProducerRecord<String, byte[]> rec = new ProducerRecord<>(topic, null, s.tsMs, instanceId, s.value);
        for (Map.Entry<String, byte[]> h : CloudEventHeaders.of(agent + "-" + s.seq, "kvpool-agent/" + agent,
                CloudEventHeaders.TYPE_BLOCKS, Instant.ofEpochMilli(s.tsMs)).entrySet()) {
            rec.headers().add(new RecordHeader(h.getKey(), h.getValue()));
        }
        producer.send(rec, (md, err) -> settle(s, err));
    }

    private void settle(Spooled s, Exception err) {
        lock.lock();
        try {
            inFlight--;
            if (err == null) {
                if (!s.acked) {
                    s.acked = true;
                    sentBatches.incrementAndGet();
                }
                backoffMs = 100;
                reach.ok();
            } else if (err instanceof org.apache.kafka.common.errors.RecordTooLargeException
                    || err instanceof org.apache.kafka.common.errors.RecordBatchTooLargeException
                    || err instanceof org.apache.kafka.common.InvalidRecordException) {
                // sending it again cannot work, and would hold up every batch behind it: drop it, counted
                if (!s.acked) {
                    s.acked = true;
                    dropped.incrementAndGet();
                    LOG.severe("kvpool.blocks: batch " + s.seq + " (" + s.value.length + " bytes) refused by Kafka and"
                            + " dropped (consumers see the seq gap): " + err.getMessage());
                }
            } else {
                reach.failed(err);
                sendErrors.incrementAndGet();
                failed = true;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private boolean hasUnsent() {
        lock.lock();
        try {
            return !spool.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** Cuts the pending batch now and waits until the spool is empty (everything acknowledged). */
    public boolean flush(long timeoutMillis) throws InterruptedException {
        lock.lock();
        try {
            cutBatch();
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            while (!spool.isEmpty() || inFlight > 0) {
                popAcked();
                if (spool.isEmpty() && inFlight == 0) {
                    break;
                }
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    public long droppedBatches() {
        return dropped.get();
    }

    public long sentBatches() {
        return sentBatches.get();
    }

    public long batchedEvents() {
        return batchedEvents.get();
    }

    public long sendErrors() {
        return sendErrors.get();
    }

    public int spooled() {
        lock.lock();
        try {
            return spool.size();
        } finally {
            lock.unlock();
        }
    }

    /** Batches of the last run this one found on disk and sends first. */
    public int keptFromLastRun() {
        return keptFromLastRun;
    }

    public long nextSeq() {
        lock.lock();
        try {
            return nextSeq;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        try {
            flush(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        running = false;
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        sender.interrupt();
        flusher.interrupt();
        try {
            sender.join(2000);
            flusher.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close(java.time.Duration.ofSeconds(2));
        lock.lock();
        try {
            popAcked();
            if (!spool.isEmpty()) {
                LOG.warning("kvpool.blocks: " + spool.size() + " batches not acknowledged at stop"
                        + (disk != null ? "; kept in " + disk.dir() + " for the next run" : " are lost"));
            }
            if (disk != null) {
                disk.close();
            }
        } finally {
            lock.unlock();
        }
        if (seqs != null) {
            long next = nextSeq();
            try {
                seqs.closed(next); // batches still spooled have smaller seqs: the next run sends them first
            } catch (RuntimeException e) {
                LOG.warning("kvpool.blocks: " + e.getMessage() + "; the next run starts at the reservation");
            }
        }
    }
}
