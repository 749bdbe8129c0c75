package dev.kvpool.meta.index;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * An index whose {@link #touch} does not wait: over a remote store a touch is a round trip plus a script, and a
 * read must not pay for it, nor wake a thread for it. Access times are eviction input, advisory by contract, so a
 * touch only appends its keys to a per-index buffer; a background thread applies the buffers every
 * {@code interval}, each key once with its number of hits ({@link InstanceIndex#touch(long[], int[], int, int)}),
 * stamped with the latest access second of the window. A read path that touches the same prefix blocks over and
 * over then costs the store one script per instance per interval instead of one per read. When the keys waiting
 * exceed the bound (the store is slow or down), further touches are dropped and counted rather than slowing reads.
 * Everything else goes straight to the delegate.
 */
public final class DeferredTouchIndex extends ForwardingIndex {
    /** Hits of one key counted per window at most: the counter is logarithmic, so more would change little. */
    static final int MAX_HITS_PER_WINDOW = 64;

    /** One touch thread per store: the buffers of all its indexes are applied by it. */
    public static final class Toucher implements AutoCloseable {
        private final long maxPending;
        private final long intervalNanos;
        private final AtomicLong pending = new AtomicLong();
        private final ConcurrentLinkedQueue<DeferredTouchIndex> dirty = new ConcurrentLinkedQueue<>();
        private final Object flushing = new Object();
        private final Thread thread;
        private volatile boolean closed;
        /** Touches (keys) not recorded because {@code maxPending} keys were already waiting. */
        public final AtomicLong dropped = new AtomicLong();
        /** Batches the delegate failed to apply (their keys are lost: access time is advisory). */
        public final AtomicLong failed = new AtomicLong();
        /** Store calls made, and the distinct keys they carried. */
        public final AtomicLong batches = new AtomicLong();
        public final AtomicLong applied = new AtomicLong();

        /**
         * @param maxPending keys that may wait in all buffers together
         * @param interval   how often buffers are applied; access times may be recorded up to this late
         */
        public Toucher(long maxPending, Duration interval) {
            if (maxPending <= 0 || interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("touch buffer needs maxPending > 0 and interval > 0: "
                        + maxPending + ", " + interval);
            }
            this.maxPending = maxPending;
            this.intervalNanos = interval.toNanos();
            thread = new Thread(this::run, "kvpool-touch");
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            while (!closed) {
                // parkNanos may return early (spuriously): wait out the whole interval unless closing
                long due = System.nanoTime() + intervalNanos;
                for (long left = intervalNanos; left > 0 && !closed; left = due - System.nanoTime()) {
                    LockSupport.parkNanos(this, left);
                }
                flush();
            }
        }

        /** Applies every buffer now, on the caller's thread (tests, shutdown); the periodic thread does the same. */
        public void drain() {
            flush();
        }

        /** Keys waiting in all buffers. */
        public long pending() {
            return pending.get();
        }

        private void flush() {
            synchronized (flushing) {
                // only the buffers waiting now: one re-queued by a read during this pass waits for the next, or a
                // busy read path would keep this loop sending tiny batches
                java.util.List<DeferredTouchIndex> now = new java.util.ArrayList<>();
                for (DeferredTouchIndex ix; (ix = dirty.poll()) != null; ) {
                    now.add(ix);
                }
                now.forEach(DeferredTouchIndex::apply);
            }
        }

        /** Stops the thread after applying what waits (best effort: the store may be closing too). */
        @Override
        public void close() {
            closed = true;
            LockSupport.unpark(thread);
            try {
                thread.join(Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            flush(); // the thread may have seen the flag before its last pass (or before it ever ran)
        }
    }

    private final Toucher toucher;
    // guarded by this: the keys touched since the last apply, and the latest second they were touched at
    private long[] buffer = new long[64];
    private int size;
    private int latestSec;
    private boolean queued;

    public DeferredTouchIndex(InstanceIndex delegate, Toucher toucher) {
        super(delegate);
        this.toucher = toucher;
    }

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        if (len <= 0) {
            return;
        }
        if (toucher.pending.addAndGet(len) > toucher.maxPending) {
            toucher.pending.addAndGet(-len);
            toucher.dropped.addAndGet(len);
            return;
        }
        boolean enqueue;
        synchronized (this) {
            if (size + len > buffer.length) {
                buffer = Arrays.copyOf(buffer, Math.max(size + len, buffer.length * 2));
            }
            System.arraycopy(keys, off, buffer, size, len); // the caller may reuse its array
            size += len;
            latestSec = Math.max(latestSec, nowSec);
            enqueue = !queued;
            queued = true;
        }
        if (enqueue) {
            toucher.dirty.add(this);
        }
    }

    @Override
    public void touch(long[] keys, int[] hits, int len, int nowSec) {
        delegate.touch(keys, hits, len, nowSec); // already coalesced by the caller
    }

    /** Hands the buffer to the delegate: each key once, with its hits. Runs under the toucher's flush lock. */
    private void apply() {
        long[] keys;
        int n, sec;
        synchronized (this) {
            keys = buffer;
            n = size;
            sec = latestSec;
            buffer = new long[Math.clamp(n, 64, 4096)];
            size = 0;
            queued = false;
        }
        toucher.pending.addAndGet(-n);
        if (n == 0) {
            return;
        }
        Arrays.sort(keys, 0, n);
        int[] hits = new int[n];
        int u = 0;
        for (int i = 0; i < n; i++) {
            if (u > 0 && keys[u - 1] == keys[i]) {
                hits[u - 1] = Math.min(MAX_HITS_PER_WINDOW, hits[u - 1] + 1);
            } else {
                keys[u] = keys[i];
                hits[u++] = 1;
            }
        }
        try {
            delegate.touch(keys, hits, u, sec);
            toucher.batches.incrementAndGet();
            toucher.applied.addAndGet(u);
        } catch (RuntimeException e) {
            toucher.failed.incrementAndGet();
        }
    }

    @Override
    public String toString() {
        return "DeferredTouch(" + delegate + ")";
    }
}
