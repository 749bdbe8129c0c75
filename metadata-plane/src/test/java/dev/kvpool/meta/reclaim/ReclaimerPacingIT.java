package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.support.RedisGroup;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import dev.kvpool.meta.write.WritePath;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** kvpool.meta.reclaim.duty-cycle: how long the reclaimer pauses after a busy round, and what it accepts. */
class ReclaimerPacingIT {
    @Test
    void aBusyRoundIsFollowedByAPauseThatKeepsTheShare() {
        assertEquals(0, Reclaimer.pauseMs(40, 1.0), "1: back to back, as before");
        assertEquals(40, Reclaimer.pauseMs(40, 0.5), "half the time: a pause as long as the round");
        assertEquals(120, Reclaimer.pauseMs(40, 0.25));
        assertEquals(3, Reclaimer.pauseMs(0.75, 0.2), "sub-millisecond rounds still pause");
        assertEquals(0, Reclaimer.pauseMs(0, 0.5), "a round that took no time needs no pause");
        assertEquals(10_000, Reclaimer.pauseMs(60_000, 0.1), "never more than 10 s at once");
        // over many rounds the work is the asked share of the time
        double work = 0, pause = 0;
        for (int i = 1; i <= 1000; i++) {
            double spent = 1 + i % 37;
            work += spent;
            pause += Reclaimer.pauseMs(spent, 0.3);
        }
        double share = work / (work + pause);
        assertTrue(Math.abs(share - 0.3) < 0.01, "share " + share);
    }

    /** Near a hard limit the duty cycle gives way: a paused reclaimer there would let writes be refused. */
    @Test
    void aGroupAt95PercentOfItsQuotaIsUrgent(@TempDir Path dir) throws Exception {
        try (RedisGroup rg = new RedisGroup(dir, 10_000, null, o -> o);
             Deletions deletions = new Deletions(rg.registry, rg.ledger)) {
            WritePath write = new WritePath(rg.registry, rg.ledger, deletions, new WritePath.Settings(30, 3600));
            Reclaimer r = new Reclaimer(rg.registry, rg.ledger, deletions,
                    new Recovery(rg.registry, rg.ledger, deletions), () -> true, (i, p, re, k, b, y) -> { },
                    new Reclaimer.Settings(262_144, 4096, 10));
            GroupConfig g = rg.registry.group("g");
            rg.save(write, rg.inst, 1, 10, 9); // 9 blocks of 1,000 bytes: 90 % of the quota
            assertEquals(9000, rg.ledger.usage("g").total());
            assertFalse(r.nearHardLimit(g), "90 %: the duty cycle applies");
            rg.save(write, rg.inst, 10, 11, 1);
            assertTrue(r.nearHardLimit(g), "100 %: eviction runs flat out");
        }
    }

    @Test
    void aShareOutsideZeroToOneIsRefusedByName() {
        Reclaimer r = new Reclaimer(null, null, null, null, () -> false, (i, p, re, k, b, y) -> { },
                new Reclaimer.Settings(262_144, 4096, 10));
        for (double bad : new double[] {0, -0.5, 1.5, Double.NaN}) {
            var e = assertThrows(IllegalArgumentException.class, () -> r.dutyCycle(bad));
            assertTrue(e.getMessage().contains("kvpool.meta.reclaim.duty-cycle"), e.getMessage());
        }
        r.dutyCycle(0.5);
        r.dutyCycle(1);
    }
}
