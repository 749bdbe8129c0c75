package dev.kvpool.meta.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    @Test
    void startsAtInitialDoublesAndStopsAtMax() {
        Backoff b = Backoff.of(Duration.ofMillis(100), Duration.ofSeconds(5));
        long w = 0;
        StringBuilder seen = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            w = b.after(w);
            seen.append(w).append(' ');
        }
        // the reclaimer's sequence before the shared helper: min(5000, max(100, w * 2))
        assertEquals("100 200 400 800 1600 3200 5000 5000 ", seen.toString());
    }

    @Test
    void aWaitNotOnTheScaleIsDoubledIntoIt() {
        Backoff b = new Backoff(2000, 30_000);
        assertEquals(4000, b.after(2000)); // the resync chain: 2 s first, then 4 s, ...
        assertEquals(30_000, b.after(20_000));
        assertEquals(2000, b.after(500));
    }

    @Test
    void refusesAnEmptyRange() {
        assertThrows(IllegalArgumentException.class, () -> new Backoff(0, 10));
        assertThrows(IllegalArgumentException.class, () -> new Backoff(10, 5));
    }
}
