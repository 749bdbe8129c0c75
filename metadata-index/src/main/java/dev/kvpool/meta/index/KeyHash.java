package dev.kvpool.meta.index;

/**
 * Spreads block keys over shards and table slots. Keys can be small sequential numbers (Mooncake hash ids) or
 * already-random hashes; the finalizer of MurmurHash3 makes both uniform. Shards take the high bits, table slots
 * the low bits, so the two choices stay independent.
 */
public final class KeyHash {
    private KeyHash() {
    }

    public static long mix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb9fe1a85ec53L;
        k ^= k >>> 33;
        return k;
    }

    /** Shard of a key among 2^(64 - shift) shards; {@code shift} = 64 - log2(shards). */
    public static int shard(long key, int shift) {
        return shift == 64 ? 0 : (int) (mix(key) >>> shift);
    }
}
