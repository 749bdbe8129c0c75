package dev.kvpool.agent.pool;

/** A free list of slot numbers on one device (LIFO: recently freed slots are reused first). Thread-safe. */
public final class SlotAllocator {
    private final long[] free;
    private int top;

    public SlotAllocator(long slots) {
        if (slots > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("too many slots: " + slots);
        }
        free = new long[(int) slots];
        for (int i = 0; i < slots; i++) {
            free[i] = slots - 1 - i;
        }
        top = (int) slots;
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
