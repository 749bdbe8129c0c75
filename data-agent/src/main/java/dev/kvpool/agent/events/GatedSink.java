package dev.kvpool.agent.events;

import dev.kvpool.api.events.BlockBatch.BlockEvent;

/**
 * Holds events back until {@link #open}, then passes them on in the order they came, and every later one straight
 * through. A restarted agent announces what it kept from a background thread while it already serves; what happens
 * meanwhile (a save, an eviction of a kept block) must reach consumers after the announcement, not before it.
 */
public final class GatedSink implements EventSink {
    /** Held events beyond which the gate opens early (out of order, but no unbounded heap behind a slow Kafka). */
    static final int MAX_HELD = 100_000;
    private final EventSink next;
    private final int maxHeld;
    private java.util.ArrayDeque<BlockEvent> held = new java.util.ArrayDeque<>(); // guarded by this
    private volatile boolean open;

    public GatedSink(EventSink next) {
        this(next, MAX_HELD);
    }

    GatedSink(EventSink next, int maxHeld) {
        this.next = next;
        this.maxHeld = maxHeld;
    }

    @Override
    public void publish(BlockEvent e) {
        if (open) { // set only after the held events went out
            next.publish(e);
            return;
        }
        synchronized (this) {
            if (open) {
                next.publish(e);
            } else {
                held.add(e);
                if (held.size() >= maxHeld) {
                    java.util.logging.Logger.getLogger(GatedSink.class.getName()).warning(held.size() + " events held"
                            + " behind the announcement of the kept blocks: passing them on now, ahead of its rest");
                    open();
                }
            }
        }
    }

    /** Passes on what was held, in order; from now on events go straight through. */
    public void open() {
        open(() -> { });
    }

    /**
     * {@link #open()}, running {@code beforeEach} before each held event, outside the lock: it may wait for room in
     * a small spool, as the announcement itself did, while publishers go on adding behind the held ones.
     */
    public void open(Runnable beforeEach) {
        while (true) {
            beforeEach.run();
            synchronized (this) {
                if (open) {
                    return;
                }
                if (held.isEmpty()) {
                    held = null;
                    open = true;
                    return;
                }
                next.publish(held.pollFirst());
            }
        }
    }

    public boolean isOpen() {
        return open;
    }
}
