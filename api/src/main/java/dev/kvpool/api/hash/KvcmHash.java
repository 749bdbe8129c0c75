package dev.kvpool.api.hash;

/**
 * KVCM's block keys (spec §3.2.2, bit-exact with Tair KVCM and RTP-LLM): one running signed 64-bit hash over
 * all tokens, emitted after every full block. Key b is the state after (b+1)·blockSize tokens, so it depends on
 * the whole prefix and not on the block size used to get there.
 */
public final class KvcmHash {

    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private KvcmHash() {
    }

    /** Continues the running hash {@code h} (0 at the start of a sequence) over {@code tokens[from, to)}. */
    public static long step(long h, long[] tokens, int from, int to) {
        for (int i = from; i < to; i++) {
            // arithmetic >> on purpose; the sum wraps mod 2^64 before the xor
            h ^= tokens[i] + GOLDEN + (h << 12) + (h >> 32);
        }
        return h;
    }

    /** One key per full block; a trailing partial block is dropped. */
    public static long[] keys(long[] tokens, int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be > 0, was " + blockSize);
        }
        long[] keys = new long[tokens.length / blockSize];
        long h = 0;
        for (int b = 0; b < keys.length; b++) {
            h = step(h, tokens, b * blockSize, (b + 1) * blockSize);
            keys[b] = h;
        }
        return keys;
    }

    /** The form used in storage paths (§3.8): lower-case hex of the unsigned value, no leading zeros. */
    public static String hex(long key) {
        return Long.toHexString(key);
    }
}
