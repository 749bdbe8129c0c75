package dev.kvpool.meta.index;

import static dev.kvpool.meta.index.BlockState.DELETING;
import static dev.kvpool.meta.index.BlockState.NEW;
import static dev.kvpool.meta.index.BlockState.NOT_FOUND;
import static dev.kvpool.meta.index.BlockState.SERVING;
import static dev.kvpool.meta.index.BlockState.WRITING;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * The block state machine: every way a store changes the status of one location, with the statuses it applies
 * to. From any other status the operation leaves the location as it is (a refusal, never an error: a late finish,
 * a second purge and the like are normal under races). Both Java stores decide through {@link #allows} and move a
 * word through {@link #apply}; the Redis store's finish script is generated from {@link #FINISH_OK} and
 * {@link #FINISH_FAILED}; {@code IndexStoreContractTest} runs every row on every store.
 *
 * <p>A transition to {@link BlockState#NOT_FOUND} removes the location (and the key with its last one); one from
 * it adds a location.
 */
public enum Transition {
    /**
     * {@link InstanceIndex#startWrite}: a location is added as WRITING to a key that lacks replicas (with
     * minReplicas ≤ 1: to a key with none at all, in any status).
     */
    START_WRITE(WRITING, NOT_FOUND),
    /** {@link InstanceIndex#finishWrite}, the location's write succeeded: the session's location is served. */
    FINISH_OK(SERVING, WRITING),
    /**
     * {@link InstanceIndex#finishWrite}, failed (also a mask that does not fit, or the session's expiry): the
     * location is removed and handed back for release. A location no longer WRITING is not the session's anymore.
     */
    FINISH_FAILED(NOT_FOUND, WRITING),
    /** {@link InstanceIndex#markDeleting} (eviction, removal, trim): readers stop seeing the location at once. */
    MARK_DELETING(DELETING, NEW, WRITING, SERVING),
    /**
     * {@link InstanceIndex#markDeleting} with {@code writing} false: as {@link #MARK_DELETING}, except that a
     * WRITING location stays with the session in flight, which finishes or expires it itself.
     */
    MARK_DELETING_SETTLED(DELETING, NEW, SERVING),
    /** {@link InstanceIndex#purge}: the deleter freed the location's storage; it leaves the index. */
    PURGE(NOT_FOUND, DELETING);

    private final BlockState to;
    private final Set<BlockState> from;
    private final int fromMask;
    private final int toCode;
    private final boolean removes;

    Transition(BlockState to, BlockState first, BlockState... rest) {
        this.to = to;
        EnumSet<BlockState> set = EnumSet.of(first, rest);
        this.from = Collections.unmodifiableSet(set);
        int mask = 0;
        for (BlockState s : set) {
            mask |= 1 << s.code();
        }
        this.fromMask = mask;
        this.toCode = to.code();
        this.removes = to == NOT_FOUND;
    }

    /** The status a location ends in; {@link BlockState#NOT_FOUND}: it is removed. */
    public BlockState to() {
        return to;
    }

    public Set<BlockState> from() {
        return from;
    }

    /** True when this transition applies to a location of status {@code code} ({@link Loc#status}). */
    public boolean allows(int code) {
        return (code & ~7) == 0 && (fromMask >>> code & 1) != 0;
    }

    public boolean allows(BlockState s) {
        return from.contains(s);
    }

    /** True when the location leaves the index. */
    public boolean removes() {
        return removes;
    }

    /**
     * Word A after this transition; the caller checked {@link #allows} on the status the index holds (for
     * {@link #START_WRITE}: that the location is not there yet; the word's own status bits do not matter). A
     * removing transition returns the word as the location had it, for the caller to release.
     */
    public long apply(long a) {
        return removes ? a : Loc.withStatus(a, toCode);
    }

    /** The deletion markDeleting runs: {@link #MARK_DELETING}, or {@link #MARK_DELETING_SETTLED} when not {@code writing}. */
    public static Transition markDeleting(boolean writing) {
        return writing ? MARK_DELETING : MARK_DELETING_SETTLED;
    }
}
