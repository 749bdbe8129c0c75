package dev.kvpool.meta.index;

/** Edits of a block's packed replica array (a0, b0, a1, b1, ...), shared by the stores' read-modify-write code. */
public final class LocArrays {
    private LocArrays() {
    }

    public static long[] with(long[] locs, long a, long b) {
        long[] out = java.util.Arrays.copyOf(locs, locs.length + 2);
        out[locs.length] = a;
        out[locs.length + 1] = b;
        return out;
    }

    /** Without replica {@code idx}. */
    public static long[] without(long[] locs, int idx) {
        long[] out = new long[locs.length - 2];
        System.arraycopy(locs, 0, out, 0, idx * 2);
        System.arraycopy(locs, idx * 2 + 2, out, idx * 2, locs.length - idx * 2 - 2);
        return out;
    }

    /** Replica index of the location with this id, or -1. */
    public static int indexOfId(long[] locs, long id) {
        for (int i = 0; i < locs.length; i += 2) {
            if (Loc.id(locs[i]) == id) {
                return i >> 1;
            }
        }
        return -1;
    }
}
