package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.BlockMask;

/** A decoded BlockMask (§3.3): prefix offset, bool vector, or empty vector. */
public record Mask(int offset, boolean[] bools) {
    public static final Mask EMPTY = new Mask(-1, new boolean[0]);

    public static Mask of(BlockMask m) {
        if (m == null) {
            return EMPTY;
        }
        return switch (m.getInfoCase()) {
            case OFFSET -> new Mask(m.getOffset(), null);
            case BOOL_MASKS -> {
                boolean[] b = new boolean[m.getBoolMasks().getValuesCount()];
                for (int i = 0; i < b.length; i++) {
                    b[i] = m.getBoolMasks().getValues(i);
                }
                yield new Mask(-1, b);
            }
            default -> EMPTY;
        };
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

    /** The response form of StartWriteCache: an offset when the existing keys form a prefix, else bools. */
    public static BlockMask encode(boolean[] existing) {
        int k = 0;
        while (k < existing.length && existing[k]) {
            k++;
        }
        boolean prefix = true;
        for (int i = k; i < existing.length; i++) {
            if (existing[i]) {
                prefix = false;
                break;
            }
        }
        if (prefix) {
            return BlockMask.newBuilder().setOffset(k).build();
        }
        var bools = dev.kvpool.api.proto.meta.BoolMasksType.newBuilder();
        for (boolean e : existing) {
            bools.addValues(e);
        }
        return BlockMask.newBuilder().setBoolMasks(bools).build();
    }
}
