package dev.kvpool.agent.pool;

import java.lang.foreign.MemorySegment;

/**
 * One device of a tier: a memory region, a preallocated file on one disk, one GPU. It holds fixed-size slots;
 * blocks are addressed by slot number only (no per-block files, no filesystem metadata on the hot path), or one layer
 * of a slot by {@link #layerAddress}. Exactly
 * one {@link dev.kvpool.agent.sched.DeviceWorker} calls {@link #io}, so an implementation needs no locking.
 */
public interface Device extends AutoCloseable {
    String id();

    long slotCount();

    int slotBytes();

    /**
     * Moves {@code bufs[i].byteSize()} bytes between slot {@code slots[i]} and {@code bufs[i]}, all ops of one
     * direction, issued as one batch.
     *
     * @return per op whether it transferred every byte
     */
    boolean[] io(boolean write, long[] slots, MemorySegment[] bufs);

    /**
     * Slot ops handed over one at a time, up to {@link #depth} in flight across requests; the device worker uses it
     * where a device has one, so the queue stays full from one request to the next.
     */
    interface Pipeline {
        /** Completion of one op: its tag and the bytes transferred, or -errno. */
        interface Completion {
            void complete(long tag, int res);
        }

        int depth();

        int inFlight();

        /** Queues one op; false when {@link #depth} ops are in flight. */
        boolean offer(boolean write, long slot, MemorySegment buf, long tag);

        /** Starts the queued ops and delivers ready completions, waiting for one first when {@code wait}. */
        int poll(boolean wait, Completion c);
    }

    /** This device's pipeline, or null: the worker then runs whole batches through {@link #io}. */
    default Pipeline pipeline() {
        return null;
    }

    /** The record of what each slot holds, where this device keeps its blocks across restarts; null otherwise. */
    default SlotTable slotTable() {
        return null;
    }

    /** Bytes of the slot, for direct (zero-copy) access where the device is host memory; null otherwise. */
    default MemorySegment slotMemory(long slot) {
        return null;
    }

    /**
     * Whether this device keeps a slot's layers apart (the layered layout on disk): a whole-slot op then goes as one
     * op per layer ({@link #layerAddress}); a pipeline takes layer addresses only.
     */
    default boolean layerMajor() {
        return false;
    }

    /**
     * The address of one layer of a slot, where an op names a slot: {@code bufs[i].byteSize()} is then the layer's
     * bytes. Whole-slot addresses are plain slot numbers (below 2^32), so they mean what they always did.
     */
    static long layerAddress(long slot, int layer) {
        return ((long) (layer + 1) << 32) | slot;
    }

    /** The slot of an address. */
    static long slotOf(long address) {
        return address & 0xFFFF_FFFFL;
    }

    /** The layer of an address, or -1 for the whole slot. */
    static int layerOf(long address) {
        return (int) (address >>> 32) - 1;
    }

    @Override
    default void close() {
    }
}
