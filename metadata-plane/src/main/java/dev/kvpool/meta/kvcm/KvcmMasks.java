package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.meta.core.Mask;

/** The wire's BlockMask to and from the domain's {@link Mask}. */
public final class KvcmMasks {
    private KvcmMasks() {
    }

    /** A request's mask; absent (null) or unset is {@link Mask#EMPTY}. */
    public static Mask of(BlockMask m) {
        if (m == null) {
            return Mask.EMPTY;
        }
        return switch (m.getInfoCase()) {
            case OFFSET -> Mask.prefix(m.getOffset());
            case BOOL_MASKS -> {
                boolean[] b = new boolean[m.getBoolMasks().getValuesCount()];
                for (int i = 0; i < b.length; i++) {
                    b[i] = m.getBoolMasks().getValues(i);
                }
                yield Mask.of(b);
            }
            default -> Mask.EMPTY;
        };
    }

    /** An answer's mask: an offset, or the bool vector. */
    public static BlockMask proto(Mask m) {
        if (m.bools() == null) {
            return BlockMask.newBuilder().setOffset(m.offset()).build();
        }
        var bools = BoolMasksType.newBuilder();
        for (boolean e : m.bools()) {
            bools.addValues(e);
        }
        return BlockMask.newBuilder().setBoolMasks(bools).build();
    }
}
