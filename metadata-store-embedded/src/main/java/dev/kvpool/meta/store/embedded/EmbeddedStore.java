package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.backend.LoadProgress;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.WriteSession;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * The embedded in-process index store. With a directory it recovers from, and appends to, a snapshot + journal
 * there; without one it is memory-only (tests, benchmarks).
 */
public final class EmbeddedStore implements IndexStore {
    private static final Logger LOG = Logger.getLogger(EmbeddedStore.class);

    /**
     * @param dir           where snapshot and journal live; null for memory only
     * @param shards        lock shards per instance index (power of two)
     * @param fsyncAlways   force every append to the device before returning (else once per syncInterval)
     * @param syncInterval  background fsync period
     * @param snapshotBytes journal size after which a new snapshot is written
     */
    public record Options(Path dir, int shards, boolean fsyncAlways, Duration syncInterval, long snapshotBytes) {
        public static Options memory(int shards) {
            return new Options(null, shards, false, Duration.ofSeconds(1), Long.MAX_VALUE);
        }
    }

    private final Options options;
    private final Map<String, EmbeddedIndex> indexes = new ConcurrentHashMap<>();
    private final Map<String, String> sessionOwners = new ConcurrentHashMap<>();
    private final Map<String, Map<String, byte[]>> records = new ConcurrentHashMap<>();
    private final Journal journal;
    private final ScheduledExecutorService background;
    private final Object snapshotLock = new Object();
    private volatile boolean killed;

    public EmbeddedStore(Options options) {
        this(options, new LoadProgress());
    }

    public EmbeddedStore(Options options, LoadProgress progress) {
        this.options = options;
        if (options.dir() == null) {
            journal = null;
            background = null;
            return;
        }
        journal = new Journal(options.dir(), options.fsyncAlways() ? Journal.Durability.ALWAYS
                : Journal.Durability.INTERVAL, progress);
        long t0 = System.nanoTime();
        journal.recover(this::loadSnapshot, this::replay);
        LOG.infof("embedded index recovered from %s: %d instances, %d keys, %d open sessions in %d ms",
                options.dir(), indexes.size(), indexes.values().stream().mapToLong(EmbeddedIndex::keyCount).sum(),
                sessionOwners.size(), (System.nanoTime() - t0) / 1_000_000);
        background = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvpool-index-journal");
            t.setDaemon(true);
            return t;
        });
        long ms = Math.max(10, options.syncInterval().toMillis());
        background.scheduleWithFixedDelay(this::housekeeping, ms, ms, TimeUnit.MILLISECONDS);
    }

    /**
     * Journal bytes after which the background writes a new snapshot: a quarter of the last snapshot's size (the
     * journal then replays in about the time the snapshot loads), at least {@link #MIN_JOURNAL_BYTES} (a small
     * index is not rewritten for every burst), at most the configured snapshot-bytes.
     */
    long snapshotThreshold() {
        return Math.min(options.snapshotBytes(), Math.max(MIN_JOURNAL_BYTES, journal.lastSnapshotBytes() / 4));
    }

    static final long MIN_JOURNAL_BYTES = 16L << 20;
    /** A clean close snapshots when the journal holds more than this, so the next start reads no journal. */
    static final long CLOSE_SNAPSHOT_BYTES = 1L << 20;

    private void housekeeping() {
        try {
            journal.sync();
            if (journal.bytesSinceSnapshot() > snapshotThreshold()) {
                snapshot();
            }
        } catch (RuntimeException e) {
            LOG.error("index journal housekeeping failed", e);
        }
    }

    /** Writes a snapshot now and drops the journal generations it supersedes. */
    public void snapshot() {
        if (journal == null) {
            return;
        }
        synchronized (snapshotLock) {
            long t0 = System.nanoTime();
            journal.snapshot(out -> {
                Frame rec = new Frame("");
                // under the monitor putRecord/removeRecord hold between their append and their map update: a
                // record appended to the old journal generation must already be in the map we copy here
                synchronized (this) {
                    records.forEach((section, m) -> m.forEach((name, v) -> rec.recordPut(section, name, v)));
                }
                out.section(SnapshotFile.RECORDS, rec.finish());
                for (EmbeddedIndex idx : indexes.values()) {
                    idx.snapshotInto(out);
                }
            });
            LOG.infof("index snapshot written in %d ms", (System.nanoTime() - t0) / 1_000_000);
        }
    }

    /** Threads that read a snapshot's shards: the columns are copied at memory speed, so a few suffice. */
    private static final int LOAD_THREADS = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));

    private void loadSnapshot(Path file) throws java.io.IOException {
        SnapshotFile.load(file, options.shards(), LOAD_THREADS, journal.progress()::read, new SnapshotFile.Sink() {
            @Override
            public void frame(ByteBuffer payload) {
                replay(payload);
            }

            @Override
            public void shard(String instance, int shardCount, int shard, LongTable.Image img, boolean sameLayout) {
                EmbeddedIndex idx = indexes.computeIfAbsent(instance, id -> new EmbeddedIndex(id, EmbeddedStore.this,
                        options.shards()));
                if (sameLayout) {
                    idx.installShard(shard, img);
                } else {
                    idx.reinsert(img);
                }
            }
        });
    }

    private void replay(ByteBuffer payload) {
        String instance = Frame.instanceOf(payload);
        if (!instance.isEmpty()) {
            ByteBuffer probe = payload.duplicate();
            if (isDrop(probe)) {
                EmbeddedIndex gone = indexes.remove(instance);
                if (gone != null) {
                    gone.apply(payload, false);
                }
                return;
            }
            indexes.computeIfAbsent(instance, id -> new EmbeddedIndex(id, this, options.shards()))
                    .apply(payload, false);
            return;
        }
        Frame.read(payload, new RecordVisitor());
    }

    private static boolean isDrop(ByteBuffer b) {
        Frame.readString(b);
        return b.getInt() == 1 && b.get() == Frame.DROP;
    }

    private final class RecordVisitor implements Frame.Visitor {
        public void block(long key, long[] locs, long meta) {
            throw new IllegalStateException("block in a store frame");
        }

        public void sessionOpen(WriteSession s) {
            throw new IllegalStateException("session in a store frame");
        }

        public void sessionClose(String id) {
            throw new IllegalStateException("session in a store frame");
        }

        public void clear() {
        }

        public void drop() {
        }

        public void recordPut(String section, String name, byte[] value) {
            records.computeIfAbsent(section, s -> new ConcurrentHashMap<>()).put(name, value);
        }

        public void recordDel(String section, String name) {
            Map<String, byte[]> m = records.get(section);
            if (m != null) {
                m.remove(name);
            }
        }

        public void end() {
        }
    }

    void append(ByteBuffer payload) {
        if (journal != null) {
            journal.append(payload);
        }
    }

    void sessionOpened(String id, String instanceId) {
        sessionOwners.put(id, instanceId);
    }

    void sessionClosed(String id) {
        sessionOwners.remove(id);
    }

    /** Reserves a session id for an instance; false when the id is already open (in any instance). */
    boolean claimSession(String id, String instanceId) {
        return sessionOwners.putIfAbsent(id, instanceId) == null;
    }

    /** Releases a reservation that did not turn into an open session. */
    void sessionClosed(String id, String instanceId) {
        sessionOwners.remove(id, instanceId);
    }

    @Override
    public InstanceIndex index(String instanceId) {
        EmbeddedIndex idx = indexes.get(instanceId);
        if (idx != null) {
            return idx;
        }
        EmbeddedIndex fresh = new EmbeddedIndex(instanceId, this, options.shards());
        idx = indexes.putIfAbsent(instanceId, fresh);
        if (idx != null) {
            return idx;
        }
        // without a frame of its own, an index that never receives a key would be gone after a restart
        fresh.journalCreation();
        return fresh;
    }

    @Override
    public InstanceIndex existing(String instanceId) {
        return indexes.get(instanceId);
    }

    @Override
    public void drop(String instanceId) {
        EmbeddedIndex idx = indexes.get(instanceId);
        if (idx != null) {
            idx.drop(() -> indexes.remove(instanceId, idx));
        }
    }

    @Override
    public Set<String> instanceIds() {
        return Set.copyOf(indexes.keySet());
    }

    @Override
    public String sessionOwner(String sessionId) {
        return sessionOwners.get(sessionId);
    }

    /** Small durable records (registrations) kept beside the indexes, in the same journal. */
    @Override
    public synchronized void putRecord(String section, String name, byte[] value) {
        ByteBuffer p = new Frame("").recordPut(section, name, value).finish();
        append(p);
        records.computeIfAbsent(section, s -> new ConcurrentHashMap<>()).put(name, value);
    }

    @Override
    public synchronized void removeRecord(String section, String name) {
        ByteBuffer p = new Frame("").recordDel(section, name).finish();
        append(p);
        Map<String, byte[]> m = records.get(section);
        if (m != null) {
            m.remove(name);
        }
    }

    @Override
    public Map<String, byte[]> records(String section) {
        return new TreeMap<>(records.getOrDefault(section, Map.of()));
    }

    /** Approximate heap held by all indexes (table columns; excludes session and record maps). */
    public long heapBytes() {
        return indexes.values().stream().mapToLong(EmbeddedIndex::heapBytes).sum();
    }

    @Override
    public void sync() {
        if (journal != null) {
            journal.sync();
        }
    }

    @Override
    public String kind() {
        return "embedded";
    }

    /**
     * What the OS does when this process is killed: the directory lock goes, everything appended stays. Tests
     * simulate a crash with it, then open the directory again in the same process.
     */
    void releaseLockLikeAKill() {
        killed = true; // a killed process writes nothing more: its later close() in a test must not either
        if (journal != null) {
            journal.releaseLockLikeAKill();
        }
    }

    @Override
    public void close() {
        if (background != null) {
            // let a housekeeping round that is running (fsync, snapshot) finish rather than interrupt it
            background.shutdown();
            try {
                if (!background.awaitTermination(30, TimeUnit.SECONDS)) {
                    background.shutdownNow();
                }
            } catch (InterruptedException e) {
                background.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        if (journal != null) {
            if (!killed && journal.bytesSinceSnapshot() > CLOSE_SNAPSHOT_BYTES) {
                try {
                    snapshot(); // the next start then loads one file at the speed of the disk
                } catch (RuntimeException e) {
                    LOG.warn("snapshot on close failed; the journal keeps everything", e);
                }
            }
            journal.close();
        }
    }
}
