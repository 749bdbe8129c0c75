package dev.kvpool.meta.slots;

/**
 * Slot allocation inside the slab files of one (instance, storage); addresses are {@code file << 24 | slot}.
 * In-process ({@link SlotAllocator}) with the embedded store; shared in Redis when replicas share a Redis store.
 */
public interface Slots {

    long[] allocate(int n);

    /**
     * {@link #allocate} without waiting, so a caller can overlap it with its quota check; an in-process allocator
     * answers at once. A failure fails the stage.
     */
    default java.util.concurrent.CompletableFuture<long[]> allocateAsync(int n) {
        try {
            return java.util.concurrent.CompletableFuture.completedFuture(allocate(n));
        } catch (RuntimeException e) {
            return java.util.concurrent.CompletableFuture.failedFuture(e);
        }
    }

    /** Returns a slot; true when its file holds no block any more (the caller deletes the file). */
    boolean free(long address);

    /**
     * Returns many slots at once: the addresses among them whose free emptied their file (the caller deletes those
     * files), in no particular order. Shared allocators override it to free a batch in one round trip.
     */
    default long[] freeAll(long[] addresses) {
        return java.util.Arrays.stream(addresses).filter(this::free).toArray();
    }

    /** Start-up rebuild: exactly these addresses are in use, everything else is free. */
    void rebuild(long[] usedAddresses);

    int usedSlots();

    int files();

    /** For each file number: whether the file holds a used slot (a block served, being written or deleted). */
    boolean[] live(long[] files);

    /**
     * Never opens a file below {@code file} afresh from now on. A file below that number which {@link #live} does not
     * call live then holds no block and never will again: the storage sweep's guarantee that a file it
     * deletes is not handed out meanwhile (numbers restart low after a rebuild from an emptied index).
     */
    void openFilesFrom(long file);
}
