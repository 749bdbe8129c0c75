package dev.kvpool.meta.core;

/**
 * Which blocks of a call a mask covers (§3.3): a prefix of {@code offset} blocks, or a bool per block, or nothing
 * ({@link #EMPTY}). The KVCM adapters convert it from and to the wire's BlockMask.
 */
public record Mask(int offset, boolean[] bools) {
    public static final Mask EMPTY = new Mask(-1, new boolean[0]);

    /** The first {@code n} blocks. */
    public static Mask prefix(int n) {
        return new Mask(n, null);
    }

    /** Block i is masked when {@code bools[i]}. */
    public static Mask of(boolean[] bools) {
        return new Mask(-1, bools);
    }

    /**
     * The compact form of the blocks that exist already (StartWriteCache's answer): a prefix when they form one,
     * else the bools themselves.
     */
    public static Mask existing(boolean[] existing) {
        int k = 0;
        while (k < existing.length && existing[k]) {
            k++;
        }
        for (int i = k; i < existing.length; i++) {
            if (existing[i]) {
                return of(existing);
            }
        }
        return prefix(k);
    }

    public boolean masked(int i) {
        return bools == null ? i < offset : i < bools.length && bools[i];
    }

    public boolean valid(int n) {
        return bools == null ? offset >= 0 && offset <= n : bools.length == n;
    }

    public String describe() {
        return bools == null ? "offset " + offset : "bool mask of length " + bools.length;
    }
}
