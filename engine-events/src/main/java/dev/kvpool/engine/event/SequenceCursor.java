package dev.kvpool.engine.event;

/**
 * Where one engine publisher (one pod and DP rank) stands in its batch sequence — kvcm-engine-events.md §11.3. Pure
 * and not thread-safe: one per (pod, dp rank), driven by that stream's single consumer.
 *
 * <p>Sequence numbers are unsigned 64-bit big-endian counters on the wire, starting at 0 per publisher process; Java
 * longs hold the same bits and are compared unsigned. {@link #END_SEQ} (all FF) only ends a replay stream and is not a
 * batch number: {@link #offer} rejects it.
 *
 * <p>Drop-backs (decision): {@code seq == 0} after any applied batch other than 0 itself is a new engine epoch
 * ({@link Action#RESET}); so is any drop back by at least {@link #DEFAULT_DUPLICATE_WINDOW} (vLLM's default replay
 * {@code buffer_steps}) — an engine that restarted and whose first batches were lost at the high-water mark. A smaller
 * drop back is a {@link Action#DUPLICATE} (a batch seen both live and in a replay) and is ignored.
 *
 * <p>Use: {@code offer(seq)}; APPLY → apply, then {@code applied(seq)}; DUPLICATE → ignore; GAP → replay from
 * {@link #next()}, offering each replayed batch, then the live one (if the replay cannot fill the gap, mark the pod
 * incomplete, clear it and {@code applied(seq)} the live batch); RESET → clear the pod, apply, {@code applied(seq)}.
 */
public final class SequenceCursor {

    /** The replay stream's end marker: 8 bytes FF. */
    public static final long END_SEQ = -1L;
    public static final long DEFAULT_DUPLICATE_WINDOW = 10_000;

    public enum Action { APPLY, DUPLICATE, GAP, RESET }

    private final long duplicateWindow;
    private boolean started;
    private long last = -1;

    public SequenceCursor() {
        this(DEFAULT_DUPLICATE_WINDOW);
    }

    /** @param duplicateWindow drop backs shorter than this are duplicates, longer ones new epochs (≥ 1) */
    public SequenceCursor(long duplicateWindow) {
        if (duplicateWindow < 1) {
            throw new IllegalArgumentException("duplicateWindow must be >= 1, got " + duplicateWindow);
        }
        this.duplicateWindow = duplicateWindow;
    }

    /** What to do with the batch numbered {@code seq}; changes nothing (call {@link #applied} after applying). */
    public Action offer(long seq) {
        if (seq == END_SEQ) {
            throw new IllegalArgumentException("END_SEQ (0xFFFFFFFFFFFFFFFF) ends a replay; it is not a batch number");
        }
        if (!started || seq == last + 1) {
            return Action.APPLY;
        }
        int c = Long.compareUnsigned(seq, last);
        if (c > 0) {
            return Action.GAP;
        }
        if (seq == 0 && last != 0) {
            return Action.RESET;
        }
        // last - seq as unsigned; seq <= last here so no wrap.
        return Long.compareUnsigned(last - seq, duplicateWindow) >= 0 ? Action.RESET : Action.DUPLICATE;
    }

    /** {@code last + 1}: where a replay request starts after a GAP (0 before any batch). */
    public long next() {
        return started ? last + 1 : 0;
    }

    /** Advances (or, after a RESET or an unrecoverable gap, moves) the cursor to a batch just applied. */
    public void applied(long seq) {
        if (seq == END_SEQ) {
            throw new IllegalArgumentException("END_SEQ is not a batch number");
        }
        started = true;
        last = seq;
    }

    /** The last applied sequence number, -1 before any. */
    public long last() {
        return started ? last : -1;
    }

    /** Whether any batch has been applied. */
    public boolean started() {
        return started;
    }
}
