package dev.kvpool.meta.index;

import static dev.kvpool.meta.index.BlockState.DELETING;
import static dev.kvpool.meta.index.BlockState.NEW;
import static dev.kvpool.meta.index.BlockState.NOT_FOUND;
import static dev.kvpool.meta.index.BlockState.SERVING;
import static dev.kvpool.meta.index.BlockState.WRITING;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The codes and the table, written out: they are on the wire (journal, snapshots, Redis values, KVCM's names), so a
 * change here must be a deliberate change of this test too. {@code IndexStoreContractTest} checks that every store
 * does what the table says.
 */
class BlockStateTest {

    @Test
    void codesAndWireNamesAreKvcms() {
        assertEquals(Map.of(NOT_FOUND, 0, NEW, 1, WRITING, 2, SERVING, 3, DELETING, 4),
                Map.of(NOT_FOUND, NOT_FOUND.code(), NEW, NEW.code(), WRITING, WRITING.code(), SERVING, SERVING.code(),
                        DELETING, DELETING.code()));
        assertEquals(5, BlockState.values().length);
        assertEquals(1, Loc.NEW);
        assertEquals(2, Loc.WRITING);
        assertEquals(3, Loc.SERVING);
        assertEquals(4, Loc.DELETING);
        String[] names = {"CLS_NOT_FOUND", "CLS_NEW", "CLS_WRITING", "CLS_SERVING", "CLS_DELETING"};
        for (int c = 0; c < names.length; c++) {
            assertSame(BlockState.values()[c], BlockState.of(c));
            assertEquals(names[c], BlockState.of(c).wireName());
            assertEquals(names[c], Loc.statusName(c));
        }
        for (int c : new int[] {5, 6, 7, 8, -1, Integer.MIN_VALUE}) {
            assertNull(BlockState.of(c));
            assertEquals("CLS_UNKNOWN", Loc.statusName(c));
        }
    }

    @Test
    void onlyWritingAndServingCountAsReplicasAndOnlyServingIsServed() {
        for (int c = -1; c <= 8; c++) {
            assertEquals(c == 2 || c == 3, BlockState.countsAsReplica(c), "replica " + c);
            assertEquals(c == 3, BlockState.served(c), "served " + c);
        }
    }

    @Test
    void theTableIsWhatTheStoresDo() {
        Map<Transition, Set<BlockState>> from = Map.of(
                Transition.START_WRITE, EnumSet.of(NOT_FOUND),
                Transition.FINISH_OK, EnumSet.of(WRITING),
                Transition.FINISH_FAILED, EnumSet.of(WRITING),
                Transition.MARK_DELETING, EnumSet.of(NEW, WRITING, SERVING),
                Transition.MARK_DELETING_SETTLED, EnumSet.of(NEW, SERVING),
                Transition.PURGE, EnumSet.of(DELETING));
        Map<Transition, BlockState> to = Map.of(
                Transition.START_WRITE, WRITING,
                Transition.FINISH_OK, SERVING,
                Transition.FINISH_FAILED, NOT_FOUND,
                Transition.MARK_DELETING, DELETING,
                Transition.MARK_DELETING_SETTLED, DELETING,
                Transition.PURGE, NOT_FOUND);
        assertEquals(from.keySet(), EnumSet.allOf(Transition.class));
        for (Transition t : Transition.values()) {
            assertEquals(from.get(t), t.from(), t + " from");
            assertSame(to.get(t), t.to(), t + " to");
            assertEquals(to.get(t) == NOT_FOUND, t.removes(), t + " removes");
            for (BlockState s : BlockState.values()) {
                assertEquals(from.get(t).contains(s), t.allows(s), t + " " + s);
                assertEquals(from.get(t).contains(s), t.allows(s.code()), t + " code of " + s);
            }
            for (int c : new int[] {5, 6, 7, 8, -1, 64 + 2}) {
                assertFalse(t.allows(c), t + " code " + c);
            }
        }
        assertSame(Transition.MARK_DELETING, Transition.markDeleting(true));
        assertSame(Transition.MARK_DELETING_SETTLED, Transition.markDeleting(false));
    }

    @Test
    void applyChangesOnlyTheStatusField() {
        long a = Loc.a(Loc.ID_MASK, Loc.NEW, Loc.MAX_STORAGE, Loc.MAX_SPEC_GROUP);
        long b = Loc.a(12_345, Loc.WRITING, 7, 3);
        for (Transition t : Transition.values()) {
            for (long w : new long[] {a, b}) {
                long after = t.apply(w);
                if (t.removes()) {
                    assertEquals(w, after, t + " hands the word back as it was");
                } else {
                    assertEquals(t.to().code(), Loc.status(after), t.toString());
                    assertEquals(Loc.id(w), Loc.id(after));
                    assertEquals(Loc.storage(w), Loc.storage(after));
                    assertEquals(Loc.specGroup(w), Loc.specGroup(after));
                }
            }
        }
    }
}
