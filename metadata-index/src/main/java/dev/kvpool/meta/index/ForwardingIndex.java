package dev.kvpool.meta.index;

import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.random.RandomGenerator;

/** A decorator's base: every call goes to the delegate; subclasses override what they change. */
public abstract class ForwardingIndex implements InstanceIndex {
    protected final InstanceIndex delegate;

    protected ForwardingIndex(InstanceIndex delegate) {
        if (delegate == null) {
            throw new IllegalArgumentException("delegate is null");
        }
        this.delegate = delegate;
    }

    public InstanceIndex delegate() {
        return delegate;
    }

    @Override
    public String instanceId() {
        return delegate.instanceId();
    }

    @Override
    public boolean alive() {
        return delegate.alive();
    }

    @Override
    public boolean remoteReads() {
        return delegate.remoteReads();
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
    public java.util.concurrent.CompletionStage<Void> getAllAsync(long[] keys, int off, int len, Block[] out) {
        return delegate.getAllAsync(keys, off, len, out);
    }

    @Override
    public java.util.concurrent.CompletionStage<Void> servingAsync(long[] keys, int off, int len, Block[] out) {
        return delegate.servingAsync(keys, off, len, out);
    }

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        delegate.touch(keys, off, len, nowSec);
    }

    @Override
    public void touch(long[] keys, int[] hits, int len, int nowSec) {
        delegate.touch(keys, hits, len, nowSec);
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
    public FinishResult finishWrite(String sessionId, boolean[] ok, boolean exactLength, int nowSec) {
        return delegate.finishWrite(sessionId, ok, exactLength, nowSec);
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
    public int sessionCount() {
        return delegate.sessionCount();
    }

    @Override
    public List<String> expiredUnclosed() {
        return delegate.expiredUnclosed();
    }

    @Override
    public void forgetExpiredUnclosed(java.util.Collection<String> ids) {
        delegate.forgetExpiredUnclosed(ids);
    }

    @Override
    public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing) {
        return delegate.markDeleting(keys, off, len, skipPosition, writing);
    }

    @Override
    public LocList purge(long key, long locId) {
        return delegate.purge(key, locId);
    }

    @Override
    public LocList purgeAll(LocList deleting) {
        return delegate.purgeAll(deleting);
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
    public long scanBlocks(long cursor, int hint, Consumer<Block> sink) {
        return delegate.scanBlocks(cursor, hint, sink);
    }

    @Override
    public long[] sample(int n, RandomGenerator random) {
        return delegate.sample(n, random);
    }

    @Override
    public Block[] sampleBlocks(int n, RandomGenerator random) {
        return delegate.sampleBlocks(n, random);
    }

    @Override
    public void forEach(Consumer<Block> visitor) {
        delegate.forEach(visitor);
    }

    @Override
    public long[] keysWhere(LongPredicate metaPredicate) {
        return delegate.keysWhere(metaPredicate);
    }
}
