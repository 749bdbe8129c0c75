package dev.kvpool.meta.engine.scores;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.testing.MutableClock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** Totals and the per-minute series, on a clock the test moves. */
class RouterStatsTest {
    @Test
    void ratesPerMinuteOverTheLastHour() {
        MutableClock clock = new MutableClock(Instant.parse("2026-11-27T10:00:30Z"));
        RouterStats s = new RouterStats(clock);
        s.record("m", 10, 8, 4.0, 2);
        s.record("m", 10, 6, 2.0, 0);
        clock.advance(Duration.ofMinutes(2));
        s.record("m", 20, 20, 10.0, 20);
        RouterStats.Snapshot r = s.snapshot("m");
        assertEquals(3, r.queries());
        assertEquals(40, r.promptBlocks());
        assertEquals(34, r.routedHitBlocks());
        assertEquals(34 / 40.0, r.routedHitRate(), 1e-12);
        assertEquals(16 / 40.0, r.randomHitRate(), 1e-12);
        assertEquals(22 / 40.0, r.poolHitRate(), 1e-12);
        assertEquals(RouterStats.MINUTES, r.series().size());
        RouterStats.Minute last = r.series().get(59), first = r.series().get(57), empty = r.series().get(58);
        assertEquals(Instant.parse("2026-11-27T10:02:00Z"), last.minute());
        assertEquals(1, last.queries());
        assertEquals(1.0, last.routedHitRate());
        assertEquals(Instant.parse("2026-11-27T10:00:00Z"), first.minute());
        assertEquals(2, first.queries());
        assertEquals(0.7, first.routedHitRate(), 1e-12);
        assertEquals(0.3, first.randomHitRate(), 1e-12);
        assertEquals(0, empty.queries());
        // an hour later the old minutes have left the series (their slots are reused), the totals stay
        clock.advance(Duration.ofMinutes(60));
        s.record("m", 10, 0, 0, 0);
        r = s.snapshot("m");
        assertEquals(1, r.series().stream().mapToLong(RouterStats.Minute::queries).sum());
        assertEquals(4, r.queries());
        assertEquals(0, s.snapshot("other").queries());
    }
}
