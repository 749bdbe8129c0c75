package dev.kvpool.api.hash;

/**
 * KVCM's block keys (bit-exact with Tair KVCM and RTP-LLM, spec §3.2.2): one running signed 64-bit hash over all
 * tokens, emitted after every full block. Key b therefore depends on the whole prefix and not on the block size
 * used to reach it; a trailing partial block gets no key.
 */
public final class KvcmHash {
    private KvcmHash() {
    }

    /** Continues the running hash {@code h} over {@code tokens[from, to)}. */
    public static long step(long h, long[] tokens, int from, int to) {
        for (int i = from; i < to; i++) {
            h ^= tokens[i] + 0x9E3779B97F4A7C15L + (h << 12) + (h >> 32); // arithmetic >>, wrapping +
        }
        return h;
    }

    public static long[] keys(long[] tokens, int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be > 0, got " + blockSize);
        }
        long[] keys = new long[tokens.length / blockSize];
        long h = 0;
        for (int b = 0; b < keys.length; b++) {
            h = step(h, tokens, b * blockSize, (b + 1) * blockSize);
            keys[b] = h;
        }
        return keys;
    }

    /** Lower-case hex of the key's unsigned value, no leading zeros (storage paths, §3.2.3). */
    public static String hex(long key) {
        return Long.toHexString(key);
    }
}
