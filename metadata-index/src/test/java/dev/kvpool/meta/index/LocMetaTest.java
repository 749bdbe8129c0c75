package dev.kvpool.meta.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LocMetaTest {
    private static final int NOW = 1_763_800_000;

    @Test
    void fieldsRoundTrip() {
        long m = Loc.meta(NOW, NOW + 77, 9);
        assertEquals(NOW, Loc.writeSec(m));
        assertEquals(NOW + 77, Loc.accessSec(m));
        assertEquals(9, Loc.freq(m));
        assertEquals(Loc.MAX_FREQ, Loc.freq(Loc.meta(NOW, NOW, 99)), "counter saturates");
        assertEquals(Loc.EPOCH, Loc.writeSec(Loc.meta(5, 5)), "times before 2020 clamp to the epoch");
        long r = Loc.rewritten(m, NOW + 100);
        assertEquals(NOW + 100, Loc.writeSec(r));
        assertEquals(NOW + 77, Loc.accessSec(r));
        assertEquals(9, Loc.freq(r));
    }

    @Test
    void counterIsAboutLog2OfHits() {
        var rnd = new SplittableRandom(7);
        double sum = 0;
        for (int trial = 0; trial < 200; trial++) {
            long m = Loc.meta(NOW, NOW);
            for (int i = 0; i < 1000; i++) {
                m = Loc.touched(m, NOW + 1, rnd);
            }
            sum += Loc.freq(m);
        }
        double mean = sum / 200;
        assertTrue(mean > 8.5 && mean < 11, "mean counter after 1000 hits: " + mean);
        long once = Loc.touched(Loc.meta(NOW, NOW), NOW + 3, rnd);
        assertEquals(1, Loc.freq(once), "the first hit always counts");
        assertEquals(NOW + 3, Loc.accessSec(once));
    }
}
