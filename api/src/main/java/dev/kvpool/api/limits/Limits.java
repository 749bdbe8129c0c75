package dev.kvpool.api.limits;

/**
 * The documented bounds of sizes and counts a client declares (docs/security.md, "Limits"). Every entry refuses a
 * value beyond them with a 4xx naming the field; within them, the products and sums that quota accounting forms
 * fit a 64-bit long with room to spare (2^30 B × 1,024 specs × 2^20 keys = 2^60 < 2^63), and where such values
 * accumulate over time (usage) the sums are overflow-checked as well.
 */
public final class Limits {
    private Limits() {
    }

    /** Bytes of one location spec (one TP rank's share of one block): 1 GiB. KVCM accepts any int64. */
    public static final long MAX_SPEC_BYTES = 1L << 30;
    /** Location specs of one instance (one per TP × PP rank; KVCM connectors register tp_size of them). */
    public static final int MAX_SPECS = 1024;
    /** Block keys or locations one call may name (a 1 M-token prompt in 16-token blocks is 62,500). */
    public static final int MAX_KEYS_PER_CALL = 1 << 20;
    /** Token ids one call may carry (16 M: a 64 MiB body holds fewer). */
    public static final int MAX_TOKENS_PER_CALL = 1 << 24;
    /** Tokens of one block. */
    public static final int MAX_BLOCK_TOKENS = 1 << 20;
    /** A quota or a water level in bytes: 1 EiB. */
    public static final long MAX_QUOTA_BYTES = 1L << 60;
    /** Keys one instance's index may be configured to hold (meta_indexer_config.max_key_count). */
    public static final long MAX_KEY_COUNT = 1L << 40;
    /** Instances one group may be configured to hold. */
    public static final int MAX_INSTANCES_PER_GROUP = 1 << 20;
    /** Characters of opaque client text: trace ids, model and dtype names, lora names. */
    public static final int MAX_TEXT = 1024;
    /** Characters of the opaque blobs KVCM passes through: user_data, model_deployment.extra. */
    public static final int MAX_BLOB = 64 * 1024;

    /** Null when {@code v} is in [min, max], else why not. */
    public static String range(long v, long min, long max) {
        return v < min || v > max ? "must be between " + min + " and " + max + ", got " + v : null;
    }
}
