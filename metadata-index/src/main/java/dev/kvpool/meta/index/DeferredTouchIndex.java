package dev.kvpool.meta.index;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An index whose {@link #touch} does not wait: over a remote store a touch is a round trip plus a script, and a
 * read must not pay for it. Access times are eviction input, advisory by contract, so they are recorded on a
 * background thread shortly after; when the queue is full (the store is slow) a touch is dropped and counted
 * rather than slowing reads. Everything else goes straight to the delegate.
 */
public final class DeferredTouchIndex extends ForwardingIndex {
    /** One touch thread per store: touches from all its indexes share it. */
    public static final class Toucher implements AutoCloseable {
        private final ThreadPoolExecutor pool;
        public final AtomicLong dropped = new AtomicLong();
        public final AtomicLong failed = new AtomicLong();

        public Toucher(int queue) {
            pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(queue), r -> {
                Thread t = new Thread(r, "kvpool-touch");
                t.setDaemon(true);
                return t;
            }, (r, p) -> dropped.incrementAndGet());
        }

        void submit(Runnable r) {
            pool.execute(() -> {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    failed.incrementAndGet();
                }
            });
        }

        /** Waits until the touches queued so far are applied (tests). */
        public void drain() {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            long queued = pool.getTaskCount();
            // polling, not a marker task: a full queue would reject (drop) the marker
            while (pool.getCompletedTaskCount() < queued) {
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("touch queue did not drain");
                }
                Thread.onSpinWait();
                Thread.yield();
            }
        }

        @Override
        public void close() {
            pool.shutdown();
        }
    }

    private final Toucher toucher;

    public DeferredTouchIndex(InstanceIndex delegate, Toucher toucher) {
        super(delegate);
        this.toucher = toucher;
    }

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        if (len <= 0) {
            return;
        }
        long[] copy = java.util.Arrays.copyOfRange(keys, off, off + len); // the caller may reuse its array
        toucher.submit(() -> delegate.touch(copy, 0, copy.length, nowSec));
    }

    @Override
    public String toString() {
        return "DeferredTouch(" + delegate + ")";
    }
}
