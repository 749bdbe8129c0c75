package dev.kvpool.agent.store;

import dev.kvpool.agent.io.SpoolLog;
import java.nio.ByteBuffer;
import java.util.BitSet;

/**
 * Saved blocks whose global-pool copy could not be written because the metadata plane was out of reach (down,
 * restarting, timing out): their keys and parents, oldest first. Bounded by {@code capacity}, the local tiers'
 * slots (a block beyond that has left the local tiers and cannot be written anyway); when full the oldest entry
 * goes and is counted. Arrays grow with use, 24 bytes and a bit per entry. Thread-safe; one consumer, with one
 * {@link #take} outstanding at a time.
 *
 * <p>With a {@link SpoolLog}, the backlog is also on disk, so an agent stopped or killed during a plane outage still
 * owes those copies when it starts again (the blocks it kept on NVMe are still there to copy): every entry gets a
 * seq, each {@link #add} appends one record of its entries, and the log is told which seqs are done as entries
 * are settled or dropped. Everything older than the oldest entry still owed is done, because entries leave in
 * order (a batch put back returns in front with its seqs).
 */
final class PoolBacklog {
    /** key, parent, has-parent. */
    private static final int ENTRY = 8 + 8 + 1;
    private final int capacity;
    private final SpoolLog log;
    private final int keptFromLastRun;
    private long[] keys = new long[0];
    private long[] parents = new long[0];
    private long[] seqs = new long[0];
    private BitSet hasParent = new BitSet();
    private int head;
    private int size;
    private long nextSeq;
    // the outstanding take: how many, and their keys and seqs (to give seqs back to what is put back)
    private int out;
    private long[] takenKeys = new long[0];
    private long[] takenSeqs = new long[0];
    private long dropped;
    private boolean logClosed; // a writer still busy at close must not touch it
    private boolean logFailing;
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(PoolBacklog.class.getName());

    PoolBacklog(int capacity) {
        this(capacity, null);
    }

    /** With {@code log}: what a previous run left owed comes first, oldest first. */
    PoolBacklog(int capacity, SpoolLog log) {
        this.capacity = Math.max(1, capacity);
        this.log = log;
        long last = log == null ? 0 : log.lastDone();
        int kept = 0;
        if (log != null) {
            for (SpoolLog.Batch b : log.recovered()) {
                ByteBuffer v = ByteBuffer.wrap(b.value());
                int n = v.remaining() / ENTRY;
                for (int i = 0; i < n; i++) {
                    long seq = b.seq() - n + 1 + i, key = v.getLong(), parent = v.getLong();
                    boolean has = v.get() != 0;
                    if (seq > log.lastDone()) { // a record partly done before the stop
                        append(key, has ? parent : null, seq);
                        kept++;
                    }
                }
                last = Math.max(last, b.seq());
            }
        }
        this.keptFromLastRun = kept;
        this.nextSeq = last + 1;
        markDone();
    }

    /** Appends blocks (parents null or per key, null entries where unknown). */
    synchronized void add(long[] k, Long[] p) {
        if (k.length == 0) {
            return;
        }
        long first = nextSeq;
        nextSeq += k.length;
        if (log != null && !logClosed) {
            ByteBuffer v = ByteBuffer.allocate(k.length * ENTRY);
            for (int i = 0; i < k.length; i++) {
                Long parent = p == null ? null : p[i];
                v.putLong(k[i]).putLong(parent == null ? 0 : parent).put((byte) (parent == null ? 0 : 1));
            }
            try {
                log.append(nextSeq - 1, System.currentTimeMillis(), v.array());
                logFailing = false;
            } catch (RuntimeException e) { // disk full or gone: owed in memory still, only a restart would lose them
                if (!logFailing) {
                    LOG.warning("global-pool backlog: " + e.getMessage() + " (" + e.getCause() + "); kept in memory only");
                }
                logFailing = true;
            }
        }
        for (int i = 0; i < k.length; i++) {
            append(k[i], p == null ? null : p[i], first + i);
        }
        markDone(); // the oldest may have been dropped
        notifyAll();
    }

    private void append(long key, Long parent, long seq) {
        if (size == capacity) {
            head = (head + 1) % keys.length;
            size--;
            dropped++;
        }
        grow();
        set((head + size) % keys.length, key, parent, seq);
        size++;
    }

    /** Takes up to {@code k.length} of the oldest blocks; returns how many. */
    synchronized int take(long[] k, Long[] p) {
        int n = Math.min(k.length, size);
        if (n == 0) {
            return 0;
        }
        if (takenKeys.length < n) {
            takenKeys = new long[k.length];
            takenSeqs = new long[k.length];
        }
        for (int i = 0; i < n; i++) {
            int at = (head + i) % keys.length;
            k[i] = keys[at];
            p[i] = hasParent.get(at) ? parents[at] : null;
            takenKeys[i] = keys[at];
            takenSeqs[i] = seqs[at];
        }
        head = (head + n) % keys.length;
        size -= n;
        out = n;
        return n;
    }

    /** {@code n} taken blocks are done with (written, or no longer owed). */
    synchronized void settled(int n) {
        out -= n;
        markDone();
    }

    /**
     * Of {@code taken} blocks, puts the first {@code n} of {@code k} back in front, in their order (their write
     * failed again; the others are no longer owed), in one step so {@link #owed} never counts one twice.
     */
    synchronized void putBack(long[] k, Long[] p, int n, int taken) {
        int from = out;
        out -= taken;
        // k is a subsequence of the take: find each one's seq, newest first, as they go in front
        int j = from - 1;
        for (int i = n - 1; i >= 0; i--) {
            while (j >= 0 && takenKeys[j] != k[i]) {
                j--;
            }
            long seq = j >= 0 ? takenSeqs[j--] : (size > 0 ? seqs[head] : nextSeq) - 1;
            if (size == capacity) { // newer saves filled it meanwhile: these are the oldest
                dropped += i + 1;
                break;
            }
            grow();
            head = (head - 1 + keys.length) % keys.length;
            set(head, k[i], p[i], seq);
            size++;
        }
        markDone();
    }

    /** Tells the log every seq before the oldest still owed is done. */
    private void markDone() {
        if (log == null || logClosed) {
            return;
        }
        long oldest = out > 0 ? takenSeqs[0] : size > 0 ? seqs[head] : nextSeq;
        try {
            log.done(oldest - 1);
        } catch (RuntimeException e) { // the next run may look for a few again: it finds them written or gone
            if (!logFailing) {
                LOG.warning("global-pool backlog: " + e.getMessage() + " (" + e.getCause() + ")");
            }
            logFailing = true;
        }
    }

    /** Waits up to {@code millis} for an entry. */
    synchronized void awaitEntries(long millis) throws InterruptedException {
        if (size == 0) {
            wait(millis);
        }
    }

    /** Waiting, plus taken by the writer and not settled. */
    synchronized int owed() {
        return size + out;
    }

    synchronized int size() {
        return size;
    }

    synchronized long dropped() {
        return dropped;
    }

    boolean persistent() {
        return log != null;
    }

    /** Owed copies read back from the log at start-up. */
    int keptFromLastRun() {
        return keptFromLastRun;
    }

    /** Forces the log to disk and closes it; what is still owed stays in it for the next run. */
    synchronized void close() {
        if (log != null && !logClosed) {
            logClosed = true;
            log.close();
        }
    }

    private void set(int at, long key, Long parent, long seq) {
        keys[at] = key;
        seqs[at] = seq;
        if (parent != null) {
            parents[at] = parent;
            hasParent.set(at);
        } else {
            hasParent.clear(at);
        }
    }

    private void grow() {
        if (size < keys.length) {
            return;
        }
        int n = (int) Math.min(capacity, Math.max(1024, 2L * keys.length));
        long[] k = new long[n], p = new long[n], s = new long[n];
        BitSet b = new BitSet(n);
        for (int i = 0; i < size; i++) {
            int at = (head + i) % keys.length;
            k[i] = keys[at];
            p[i] = parents[at];
            s[i] = seqs[at];
            b.set(i, hasParent.get(at));
        }
        keys = k;
        parents = p;
        seqs = s;
        hasParent = b;
        head = 0;
    }
}
