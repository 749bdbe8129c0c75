package dev.kvpool.meta.index;

import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.random.RandomGenerator;

/**
 * An index whose {@link #touch} does not wait: over a remote store a touch is a round trip plus a script, and a
 * read must not pay for it. Access times are eviction input, advisory by contract, so they are recorded on a
 * background thread shortly after; when the queue is full (the store is slow) a touch is dropped and counted
 * rather than slowing reads. Everything else goes straight to the delegate.
 */
public final class DeferredTouchIndex implements InstanceIndex {
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

    private final InstanceIndex delegate;
    private final Toucher toucher;

    public DeferredTouchIndex(InstanceIndex delegate, Toucher toucher) {
        this.delegate = delegate;
        this.toucher = toucher;
    }

    public InstanceIndex delegate() {
        return delegate;
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
    public String instanceId() {
        return delegate.instanceId();
    }

    @Override
    public long keyCount() {
        return delegate.keyCount();
    }

    @Override
    public Block get(long key) {
        return delegate.get(key);
    }

    @Override
    public void getAll(long[] keys, int off, int len, Block[] out) {
        delegate.getAll(keys, off, len, out);
    }

    @Override
    public StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate storageUsable,
                                  long maxKeys, String sessionId, long deadlineMs, int nowSec) {
        return delegate.startWrite(keys, a, b, minReplicas, storageUsable, maxKeys, sessionId, deadlineMs, nowSec);
    }

    @Override
    public FinishResult finishWrite(String sessionId, boolean[] success, int nowSec) {
        return delegate.finishWrite(sessionId, success, nowSec);
    }

    @Override
    public WriteSession session(String sessionId) {
        return delegate.session(sessionId);
    }

    @Override
    public List<WriteSession> sessions() {
        return delegate.sessions();
    }

    @Override
    public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition) {
        return delegate.markDeleting(keys, off, len, skipPosition);
    }

    @Override
    public LocList purge(long key, long locId) {
        return delegate.purge(key, locId);
    }

    @Override
    public void clear() {
        delegate.clear();
    }

    @Override
    public long scan(long cursor, int max, LongConsumer sink) {
        return delegate.scan(cursor, max, sink);
    }

    @Override
    public long[] sample(int n, RandomGenerator random) {
        return delegate.sample(n, random);
    }

    @Override
    public void forEach(Consumer<Block> visitor) {
        delegate.forEach(visitor);
    }

    @Override
    public long[] keysWhere(LongPredicate metaPredicate) {
        return delegate.keysWhere(metaPredicate);
    }

    @Override
    public String toString() {
        return "DeferredTouch(" + delegate + ")";
    }
}
