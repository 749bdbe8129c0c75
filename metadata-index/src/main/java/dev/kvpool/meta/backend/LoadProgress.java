package dev.kvpool.meta.backend;

import java.util.concurrent.atomic.AtomicLong;

/**
 * How far a backend has read what it loads at start-up (the embedded store's snapshot and journal), in bytes; the
 * plane's start-up probe shows it while it runs. A backend that loads nothing leaves it at zero.
 */
public final class LoadProgress {
    private final AtomicLong total = new AtomicLong();
    private final AtomicLong read = new AtomicLong();

    public long total() {
        return total.get();
    }

    public long read() {
        return read.get();
    }

    public void total(long bytes) {
        total.set(bytes);
    }

    public void read(long bytes) {
        read.addAndGet(bytes);
    }
}
