package dev.kvpool.agent.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PlacementTest {
    @Test
    void picksInProportionToBandwidth() {
        Placement p = new Placement(new double[] {100, 200, 300});
        int[] n = new int[3];
        for (int i = 0; i < 600; i++) {
            n[p.next(d -> true)]++;
        }
        assertEquals(100, n[0]);
        assertEquals(200, n[1]);
        assertEquals(300, n[2]);
    }

    @Test
    void anyWindowIsWithinOneOfItsShare() {
        Placement p = new Placement(new double[] {1, 3});
        int[] n = new int[2];
        for (int i = 1; i <= 40; i++) {
            n[p.next(d -> true)]++;
            assertTrue(Math.abs(n[1] - i * 0.75) <= 1.0, "after " + i + ": " + n[1]);
        }
    }

    @Test
    void skipsFullDevices() {
        Placement p = new Placement(new double[] {1, 1, 1});
        for (int i = 0; i < 10; i++) {
            assertEquals(2, p.next(d -> d == 2));
        }
        assertEquals(-1, p.next(d -> false));
    }
}
