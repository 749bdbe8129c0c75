package dev.kvpool.agent.pool;

/** A free list of slot numbers on one device (LIFO: recently freed slots are reused first). Thread-safe. */
public final class SlotAllocator {
    private final long[] free;
    private int top;

    public SlotAllocator(long slots) {
        this(slots, new java.util.BitSet());
    }

    /** All slots free but those set in {@code used} (blocks kept from before a restart). */
    public SlotAllocator(long slots, java.util.BitSet used) {
        if (slots > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("too many slots: " + slots);
        }
        free = new long[(int) slots];
        for (long s = slots - 1; s >= 0; s--) { // lowest slot on top: handed out first
            if (!used.get((int) s)) {
                free[top++] = s;
            }
        }
    }

    /** A free slot, or -1 when the device is full. */
    public synchronized long allocate() {
        return top == 0 ? -1 : free[--top];
    }

    public synchronized void release(long slot) {
        free[top++] = slot;
    }

    public synchronized int freeSlots() {
        return top;
    }

    public int capacity() {
        return free.length;
    }
}
