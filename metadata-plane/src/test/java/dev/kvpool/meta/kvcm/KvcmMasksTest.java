package dev.kvpool.meta.kvcm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.meta.core.Mask;
import java.util.List;
import org.junit.jupiter.api.Test;

/** §3.3 BlockMask decoding into the domain's Mask, and the StartWriteCache response mask. */
class KvcmMasksTest {
    private static BlockMask bools(Boolean... v) {
        return BlockMask.newBuilder().setBoolMasks(BoolMasksType.newBuilder().addAllValues(List.of(v))).build();
    }

    @Test
    void offsetMask() {
        Mask m = KvcmMasks.of(BlockMask.newBuilder().setOffset(2).build());
        assertTrue(m.masked(0));
        assertTrue(m.masked(1));
        assertFalse(m.masked(2));
        assertTrue(m.valid(2));
        assertTrue(m.valid(5));
        assertFalse(m.valid(1));
        Mask zero = KvcmMasks.of(BlockMask.newBuilder().setOffset(0).build());
        assertFalse(zero.masked(0));
        assertTrue(zero.valid(0));
        assertTrue(zero.valid(3));
    }

    @Test
    void negativeOffsetIsInvalidAndMasksNothing() {
        Mask m = KvcmMasks.of(BlockMask.newBuilder().setOffset(-1).build());
        assertFalse(m.valid(0));
        assertFalse(m.valid(10));
        assertFalse(m.masked(0));
    }

    @Test
    void boolMask() {
        Mask m = KvcmMasks.of(bools(true, false, true));
        assertEquals(List.of(true, false, true, false), List.of(m.masked(0), m.masked(1), m.masked(2), m.masked(3)));
        assertTrue(m.valid(3));
        assertFalse(m.valid(2));
        assertFalse(m.valid(4));
    }

    @Test
    void absentOrEmptyMaskIsAnEmptyVector() {
        for (Mask m : List.of(KvcmMasks.of(null), KvcmMasks.of(BlockMask.getDefaultInstance()), KvcmMasks.of(bools()))) {
            assertFalse(m.masked(0));
            assertTrue(m.valid(0));
            assertFalse(m.valid(1), "an empty vector fits only 0 locations");
        }
    }

    @Test
    void encodeUsesAnOffsetForAnExistingPrefix() {
        assertEquals(BlockMask.newBuilder().setOffset(0).build(), KvcmMasks.proto(Mask.existing(new boolean[] {false, false})));
        assertEquals(BlockMask.newBuilder().setOffset(2).build(), KvcmMasks.proto(Mask.existing(new boolean[] {true, true, false})));
        assertEquals(BlockMask.newBuilder().setOffset(3).build(), KvcmMasks.proto(Mask.existing(new boolean[] {true, true, true})));
        assertEquals(BlockMask.newBuilder().setOffset(0).build(), KvcmMasks.proto(Mask.existing(new boolean[0])));
        BlockMask b = KvcmMasks.proto(Mask.existing(new boolean[] {false, true, false, true, false}));
        assertEquals(bools(false, true, false, true, false), b);
        assertEquals(BlockMask.InfoCase.BOOL_MASKS, b.getInfoCase());
        // decoding what was encoded gives the flags back
        Mask back = KvcmMasks.of(b);
        assertEquals(List.of(false, true, false, true, false),
                List.of(back.masked(0), back.masked(1), back.masked(2), back.masked(3), back.masked(4)));
    }
}
