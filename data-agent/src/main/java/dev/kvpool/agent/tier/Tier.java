package dev.kvpool.agent.tier;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * One tier of KVBM's G1–G4 hierarchy: GPU memory, the host pool, local NVMe, the global pool. Every block is
 * {@link #blockBytes()} long and carries a CRC32C kept beside it; a block whose bytes fail the check is reported
 * as a miss and dropped, never returned. A block becomes visible to readers only after its write completed in
 * full, so a write that failed midway is never read.
 */
public interface Tier extends AutoCloseable {
    /** Tier name for the API and metrics: gpu, host, nvme, pool. */
    String name();

    /** The event medium (BlockEvent.GPU/CPU/DISK/REMOTE). */
    String medium();

    int blockBytes();

    boolean contains(long key);

    /**
     * Stores blocks. {@code deferred} marks a write-behind (drained in idle windows) as opposed to a write the
     * caller waits on.
     *
     * @return per key whether the block is now in this tier (already present counts as stored)
     */
    CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred);

    /** Loads blocks into {@code dst}; per key whether it was found with a valid checksum. */
    CompletableFuture<boolean[]> get(long[] keys, MemorySegment[] dst);

    /** Removes a block; whether it was present. */
    boolean remove(long key);

    /** Blocks held. */
    long size();

    /** Called with keys the tier evicted to make room. */
    default void onEvict(java.util.function.Consumer<long[]> listener) {
    }

    @Override
    void close();
}
