package dev.kvpool.meta.registry;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;

/**
 * Which blocks go first when a group is over its water level. KVCM's ReclaimPolicy numbers 1-3 keep their
 * meaning (there LFU and TTL silently fall back to LRU; here each does what it says); 4 is KVPool's prefix-aware
 * LRU. Every policy ranks blocks by a score: lower goes first.
 */
public enum ReclaimPolicy {
    /** Least recently used, by last access: a hit in getCacheLocation counts, so does a write. */
    LRU(1),
    /** Least frequently used: the 4-bit logarithmic hit counter, decayed by idle time; ties by access time. */
    LFU(2),
    /** Oldest write first; with ttl_seconds set, blocks older than that are also expired below the water level. */
    TTL(3),
    /**
     * LRU that never evicts a block before the cached blocks extending it: prefix hits and writes touch the whole
     * prefix, so a prefix is never older than its extensions, and blocks with the same access second are evicted
     * all together or not at all (see {@link Reclaimer}).
     */
    PREFIX_LRU(4);

    public final int wire;
    /** The counter a block has before any hit, for ranking (about 7 hits on the logarithmic scale). */
    static final int LFU_INIT = 3;

    ReclaimPolicy(int wire) {
        this.wire = wire;
    }

    /** KVCM's enum (0 = unspecified = LRU) by number or name; KVPool's names too ("lru", "prefix_lru" ...). */
    public static ReclaimPolicy parse(String v) {
        String s = v.trim().toUpperCase(java.util.Locale.ROOT);
        if (s.isEmpty() || s.equals("0") || s.equals("POLICY_UNSPECIFIED")) {
            return LRU;
        }
        for (ReclaimPolicy p : values()) {
            if (s.equals(String.valueOf(p.wire)) || s.equals(p.name()) || s.equals("POLICY_" + p.name())) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown reclaim_policy '" + v + "' (expected LRU, LFU, TTL or PREFIX_LRU, or 0-4)");
    }

    /** Eviction score of a block at {@code nowSec}: lower is evicted first. */
    public long score(Block b, int nowSec, int lfuDecaySec) {
        return score(b.meta(), nowSec, lfuDecaySec);
    }

    public long score(long meta, int nowSec, int lfuDecaySec) {
        return switch (this) {
            case LRU, PREFIX_LRU -> Loc.accessSec(meta);
            case TTL -> Loc.writeSec(meta);
            case LFU -> {
                // Redis-style: a new block starts at LFU_INIT (else it would be the first victim before its first
                // hit could come), and one counter step decays per idle period, so old popularity fades
                int idle = Math.max(0, nowSec - Loc.accessSec(meta));
                int f = Math.max(0, Math.max(Loc.freq(meta), LFU_INIT) - (lfuDecaySec > 0 ? idle / lfuDecaySec : 0));
                yield ((long) f << 32) | (Loc.accessSec(meta) & 0xFFFFFFFFL);
            }
        };
    }
}
