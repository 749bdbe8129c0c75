package dev.kvpool.agent.pool;

import java.lang.foreign.MemorySegment;

/**
 * A decorator's base: a device that changes how another one's I/O behaves (throttled, made to fail in tests) and
 * forwards the rest. No pipeline and no slot memory: the worker then sends every op through {@link #io}.
 */
public abstract class ForwardingDevice implements Device {
    protected final Device inner;

    protected ForwardingDevice(Device inner) {
        this.inner = inner;
    }

    @Override
    public String id() {
        return inner.id();
    }

    @Override
    public long slotCount() {
        return inner.slotCount();
    }

    @Override
    public int slotBytes() {
        return inner.slotBytes();
    }

    @Override
    public SlotTable slotTable() {
        return inner.slotTable();
    }

    @Override
    public boolean layerMajor() {
        return inner.layerMajor();
    }

    @Override
    public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
        return inner.io(write, slots, bufs);
    }

    @Override
    public void close() {
        inner.close();
    }
}
