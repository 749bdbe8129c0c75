package dev.kvpool.meta.index;

/**
 * One replica location of a block, packed into two longs so the index keeps no object per block.
 *
 * <p>Word A: bits 0-41 location id (8 base-36 chars), 42-44 status, 45-55 storage number (as registered with
 * the service), 56-63 spec group (0 = every registered spec, g+1 = the instance's spec group g).
 * Word B: the storage address, opaque to the index (for slot files: file number << 24 | slot).
 */
public final class Loc {
    /** {@link BlockState}'s codes, for code that compares packed words; statuses change only by {@link Transition}. */
    public static final int NEW = BlockState.NEW.code(), WRITING = BlockState.WRITING.code(),
            SERVING = BlockState.SERVING.code(), DELETING = BlockState.DELETING.code();

    public static final long ID_MASK = (1L << 42) - 1;
    public static final int MAX_STORAGE = (1 << 11) - 1;
    public static final int MAX_SPEC_GROUP = (1 << 8) - 1;

    private Loc() {
    }

    public static long a(long id, int status, int storage, int specGroup) {
        if ((id & ~ID_MASK) != 0 || status < 0 || status > 7 || storage < 0 || storage > MAX_STORAGE
                || specGroup < 0 || specGroup > MAX_SPEC_GROUP) {
            throw new IllegalArgumentException("location field out of range: id=" + id + " status=" + status
                    + " storage=" + storage + " specGroup=" + specGroup);
        }
        return id | ((long) status << 42) | ((long) storage << 45) | ((long) specGroup << 56);
    }

    public static long id(long a) {
        return a & ID_MASK;
    }

    public static int status(long a) {
        return (int) (a >>> 42) & 7;
    }

    public static int storage(long a) {
        return (int) (a >>> 45) & MAX_STORAGE;
    }

    public static int specGroup(long a) {
        return (int) (a >>> 56) & MAX_SPEC_GROUP;
    }

    public static long withStatus(long a, int status) {
        return (a & ~(7L << 42)) | ((long) status << 42);
    }

    public static String statusName(int status) {
        return BlockState.wireName(status);
    }

    /** The 8-character [a-z0-9] id KVCM prints for a location. */
    public static String idString(long a) {
        long v = id(a);
        char[] c = new char[8];
        for (int i = 7; i >= 0; i--) {
            c[i] = Character.forDigit((int) (v % 36), 36);
            v /= 36;
        }
        return new String(c);
    }

    /** A fresh random id in [0, 36^8). */
    public static long randomId(java.util.random.RandomGenerator r) {
        return r.nextLong(2_821_109_907_456L);
    }

    /** Times in the meta word count seconds from 2020-01-01 (30 bits each: good until 2054). */
    public static final int EPOCH = 1_577_836_800;
    private static final long T_MASK = (1L << 30) - 1;
    public static final int MAX_FREQ = 15;

    /**
     * Meta word of a block: write time (bits 34-63), last access time (bits 4-33) and a 4-bit logarithmic hit
     * counter for LFU (bits 0-3). Four bits are what Caffeine's TinyLFU keeps per entry too: with the 1/2^c
     * increment of {@link #touched} the counter is about log2(hits + 1), which separates 0, 1, 3, 7 ... hits.
     */
    public static long meta(int writeSec, int accessSec) {
        return meta(writeSec, accessSec, 0);
    }

    public static long meta(int writeSec, int accessSec, int freq) {
        return (rel(writeSec) << 34) | (rel(accessSec) << 4) | Math.clamp(freq, 0, MAX_FREQ);
    }

    private static long rel(int sec) {
        return Math.clamp((long) sec - EPOCH, 0, T_MASK);
    }

    public static int writeSec(long meta) {
        return (int) ((meta >>> 34) + EPOCH);
    }

    public static int accessSec(long meta) {
        return (int) (((meta >>> 4) & T_MASK) + EPOCH);
    }

    public static int freq(long meta) {
        return (int) (meta & MAX_FREQ);
    }

    /** A read hit: access time becomes {@code nowSec}; the counter grows by one with probability 1/2^counter. */
    public static long touched(long meta, int nowSec, java.util.random.RandomGenerator random) {
        int f = freq(meta);
        if (f < MAX_FREQ && (f == 0 || random.nextInt(1 << f) == 0)) {
            f++;
        }
        return meta(writeSec(meta), nowSec, f);
    }

    /** The same block rewritten at {@code nowSec}: keeps its access history. */
    public static long rewritten(long meta, int nowSec) {
        return meta(nowSec, accessSec(meta), freq(meta));
    }
}
