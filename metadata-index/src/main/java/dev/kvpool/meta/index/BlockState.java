package dev.kvpool.meta.index;

/**
 * The status of one replica location: the 3-bit field of its word A ({@link Loc}), with KVCM's wire names. What may
 * move a location from one status to another is {@link Transition}'s table; the stores change a status only through
 * it, and the Redis store's scripts are generated from it.
 *
 * <p>The stores keep the packed int, not this type (no object per block): {@link #of} is an array lookup, and the
 * predicates below test a bit mask indexed by the code.
 */
public enum BlockState {
    /**
     * No such location: what {@link Transition#START_WRITE} starts from and what a removing transition ends in.
     * Never stored: with status 0 a word A could be 0, which marks an empty slot of the embedded table.
     */
    NOT_FOUND(0, "CLS_NOT_FOUND", false, false),
    /**
     * KVCM's status of a location handed out but not yet being written. The stores never hold it (a start stores
     * WRITING whatever status its words carry); the table still lets a deletion take it, as the stores always did.
     */
    NEW(1, "CLS_NEW", false, false),
    /** Reserved by an open write session, whose finish serves or removes it; counts as a replica. */
    WRITING(2, "CLS_WRITING", true, false),
    /** Written and readable: the only status a query hands out. */
    SERVING(3, "CLS_SERVING", true, true),
    /** Taken out of service; the deleter frees its storage, then purges it from the index. */
    DELETING(4, "CLS_DELETING", false, false);

    /** Codes 5-7 fit the field but are no status. */
    private static final BlockState[] BY_CODE = new BlockState[8];
    private static final int REPLICA_MASK, SERVED_MASK;

    static {
        int replica = 0, served = 0;
        for (BlockState s : values()) {
            BY_CODE[s.code] = s;
            replica |= s.replica ? 1 << s.code : 0;
            served |= s.served ? 1 << s.code : 0;
        }
        REPLICA_MASK = replica;
        SERVED_MASK = served;
    }

    private final int code;
    private final String wireName;
    private final boolean replica;
    private final boolean served;

    BlockState(int code, String wireName, boolean replica, boolean served) {
        this.code = code;
        this.wireName = wireName;
        this.replica = replica;
        this.served = served;
    }

    /** The code in word A's status field (and in the journal, snapshots and Redis values): never renumber. */
    public int code() {
        return code;
    }

    /** KVCM's name ({@code CLS_SERVING} ...). */
    public String wireName() {
        return wireName;
    }

    /** The status of this code, or null for a code that is none (5-7, or outside the field). */
    public static BlockState of(int code) {
        return (code & ~7) == 0 ? BY_CODE[code] : null;
    }

    /** KVCM's name of a code; {@code CLS_UNKNOWN} for a code that is no status. */
    public static String wireName(int code) {
        BlockState s = of(code);
        return s == null ? "CLS_UNKNOWN" : s.wireName;
    }

    /** A replica that a start with minReplicas above 1 counts (on a usable storage): WRITING or SERVING. */
    public static boolean countsAsReplica(int code) {
        return (code & ~7) == 0 && (REPLICA_MASK >>> code & 1) != 0;
    }

    /** What readers see: the query path, and all that Redis' replica-local copy keeps. */
    public static boolean served(int code) {
        return (code & ~7) == 0 && (SERVED_MASK >>> code & 1) != 0;
    }
}
