package dev.kvpool.engine.event;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.engine.event.SequenceCursor.Action;
import org.junit.jupiter.api.Test;

class SequenceCursorTest {

    @Test
    void firstEverSeenIsAppliedWhateverItsNumber() {
        SequenceCursor c = new SequenceCursor();
        assertEquals(-1, c.last());
        assertEquals(0, c.next());
        assertFalse(c.started());
        assertEquals(Action.APPLY, c.offer(42));
        assertEquals(-1, c.last(), "offer changes nothing");
        c.applied(42);
        assertEquals(42, c.last());
        assertEquals(43, c.next());
    }

    @Test
    void inOrderAppliesGapAsksForReplayFromNext() {
        SequenceCursor c = new SequenceCursor();
        c.applied(0);
        assertEquals(Action.APPLY, c.offer(1));
        c.applied(1);
        assertEquals(Action.GAP, c.offer(5));
        assertEquals(2, c.next());
        // replay 2..4, then the live 5
        for (long s = 2; s <= 5; s++) {
            assertEquals(Action.APPLY, c.offer(s));
            c.applied(s);
        }
        assertEquals(5, c.last());
    }

    @Test
    void smallDropBackIsDuplicate() {
        SequenceCursor c = new SequenceCursor();
        c.applied(100);
        assertEquals(Action.DUPLICATE, c.offer(100));
        assertEquals(Action.DUPLICATE, c.offer(99));
        assertEquals(Action.DUPLICATE, c.offer(1));
    }

    @Test
    void dropToZeroAfterPositiveCursorIsNewEpoch() {
        SequenceCursor c = new SequenceCursor();
        c.applied(7);
        assertEquals(Action.RESET, c.offer(0));
        c.applied(0);
        assertEquals(0, c.last());
        assertEquals(Action.APPLY, c.offer(1));
    }

    @Test
    void zeroAfterZeroIsDuplicate() {
        SequenceCursor c = new SequenceCursor();
        c.applied(0);
        assertEquals(Action.DUPLICATE, c.offer(0));
    }

    @Test
    void dropBackBeyondTheWindowIsNewEpoch() {
        SequenceCursor c = new SequenceCursor(10);
        c.applied(100);
        assertEquals(Action.DUPLICATE, c.offer(91));
        assertEquals(Action.RESET, c.offer(90));
        assertEquals(Action.RESET, c.offer(3));
        assertEquals(SequenceCursor.DEFAULT_DUPLICATE_WINDOW, 10_000);
        SequenceCursor d = new SequenceCursor();
        d.applied(20_000);
        assertEquals(Action.DUPLICATE, d.offer(10_001));
        assertEquals(Action.RESET, d.offer(10_000));
    }

    @Test
    void unsignedNumbersAboveTwoToThe63() {
        SequenceCursor c = new SequenceCursor();
        long big = Long.MIN_VALUE; // 2^63 unsigned
        c.applied(big - 1); // 2^63 - 1
        assertEquals(Action.APPLY, c.offer(big));
        c.applied(big);
        assertEquals(Action.GAP, c.offer(big + 5));
        assertEquals(Action.DUPLICATE, c.offer(big - 3));
        assertEquals(Action.RESET, c.offer(0));
        assertEquals(big + 1, c.next());
        c.applied(-2); // 2^64 - 2, the largest batch number
        assertEquals(Action.DUPLICATE, c.offer(-3));
        assertEquals(Action.RESET, c.offer(5), "a drop of ~2^64 is far beyond the window");
    }

    @Test
    void endSeqIsNotABatchNumber() {
        SequenceCursor c = new SequenceCursor();
        assertThrows(IllegalArgumentException.class, () -> c.offer(SequenceCursor.END_SEQ));
        assertThrows(IllegalArgumentException.class, () -> c.applied(SequenceCursor.END_SEQ));
        assertThrows(IllegalArgumentException.class, () -> new SequenceCursor(0));
        assertTrue(c.offer(0) == Action.APPLY);
    }
}
