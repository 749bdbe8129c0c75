package dev.kvpool.meta.slots;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SlotAllocatorTest {
    private static long at(long file, int slot) {
        return SlotAllocator.address(file, slot);
    }

    @Test
    void addressesPackFileAndSlot() {
        long a = at(0x1234, 77);
        assertEquals(0x1234, SlotAllocator.file(a));
        assertEquals(77, SlotAllocator.slot(a));
        assertEquals(0, at(0, 0));
    }

    @Test
    void fillsTheLowestFileFirstInConsecutiveSlots() {
        SlotAllocator s = new SlotAllocator(4);
        assertArrayEquals(new long[] {at(0, 0), at(0, 1), at(0, 2)}, s.allocate(3));
        assertArrayEquals(new long[] {at(0, 3), at(1, 0), at(1, 1)}, s.allocate(3));
        assertEquals(6, s.usedSlots());
        assertEquals(2, s.files());
        assertArrayEquals(new long[0], s.allocate(0));
    }

    @Test
    void filesBelowTheFrontierWithoutAUsedSlotNeverComeBack() {
        SlotAllocator s = new SlotAllocator(4);
        long[] a = s.allocate(12); // files 0, 1, 2
        assertArrayEquals(new boolean[] {true, true, true, false}, s.live(new long[] {0, 1, 2, 3}));
        for (int i = 4; i < 8; i++) {
            s.free(a[i]); // file 1 empties
        }
        assertArrayEquals(new boolean[] {true, false, true}, s.live(new long[] {0, 1, 2}));
        s.openFilesFrom(9);
        s.openFilesFrom(5); // never back
        long[] next = s.allocate(5);
        for (long x : next) {
            assertTrue(SlotAllocator.file(x) >= 9, "file " + SlotAllocator.file(x));
        }
        s.rebuild(new long[] {at(0, 0), at(4, 1)}); // files 1 to 3 hold nothing: not reopened
        for (long x : s.allocate(10)) {
            long f = SlotAllocator.file(x);
            assertTrue(f == 0 || f == 4 || f >= 5, "file " + f);
        }
    }

    @Test
    void freedSlotsAreReusedBeforeANewFileOpens() {
        SlotAllocator s = new SlotAllocator(4);
        s.allocate(8); // files 0 and 1 full
        assertFalse(s.free(at(0, 2)));
        assertFalse(s.free(at(1, 1)));
        assertArrayEquals(new long[] {at(0, 2), at(1, 1), at(2, 0)}, s.allocate(3));
    }

    @Test
    void freeReportsAnEmptiedFileAndItsNumberIsNotReused() {
        SlotAllocator s = new SlotAllocator(2);
        long[] a = s.allocate(2);
        assertFalse(s.free(a[0]));
        assertTrue(s.free(a[1]), "the last block of file 0 left");
        assertEquals(0, s.files());
        // a pending delete of file 0 can never hit a block written later
        assertEquals(1, SlotAllocator.file(s.allocate(1)[0]));
    }

    @Test
    void freeOfAnUnknownOrFreeSlotIsIgnored() {
        SlotAllocator s = new SlotAllocator(8);
        assertFalse(s.free(at(5, 1)));
        long a = s.allocate(1)[0];
        assertTrue(s.free(a));
        assertFalse(s.free(a));
        assertFalse(s.free(at(0, 9)), "a slot beyond key_count_per_file");
        assertEquals(0, s.usedSlots());
    }

    @Test
    void oneSlotPerFile() {
        SlotAllocator s = new SlotAllocator(1);
        assertArrayEquals(new long[] {at(0, 0), at(1, 0), at(2, 0)}, s.allocate(3));
        assertTrue(s.free(at(1, 0)));
        assertEquals(3, SlotAllocator.file(s.allocate(1)[0]));
    }

    @Test
    void markUsedRebuildsTheMap() {
        SlotAllocator s = new SlotAllocator(4);
        s.markUsed(at(3, 1));
        s.markUsed(at(3, 1)); // twice is once
        s.markUsed(at(0, 0));
        s.markUsed(at(9, 20)); // written under a larger key_count_per_file: ignored
        assertEquals(2, s.usedSlots());
        long[] next = s.allocate(4);
        assertArrayEquals(new long[] {at(0, 1), at(0, 2), at(0, 3), at(3, 0)}, next);
        assertEquals(4, SlotAllocator.file(s.allocate(3)[2]) - 0, "new files after the highest seen");
    }

    @Test
    void neverHandsOutALiveSlotTwice() {
        SlotAllocator s = new SlotAllocator(8);
        Random r = new Random(7);
        Set<Long> live = new HashSet<>();
        for (int round = 0; round < 2_000; round++) {
            if (live.isEmpty() || r.nextInt(3) > 0) {
                for (long a : s.allocate(1 + r.nextInt(5))) {
                    assertTrue(live.add(a), "slot handed out twice");
                }
            } else {
                Long victim = live.iterator().next();
                live.remove(victim);
                s.free(victim);
            }
            assertEquals(live.size(), s.usedSlots());
        }
    }

    /** The bulk rebuild (sort, one pass) ends where marking each address one by one ends, duplicates included. */
    @Test
    void rebuildMatchesMarkingEachAddress() {
        Random r = new Random(11);
        for (int round = 0; round < 20; round++) {
            int perFile = 1 + r.nextInt(70);
            long[] addrs = new long[r.nextInt(5_000)];
            for (int i = 0; i < addrs.length; i++) {
                // slots up to perFile + 3: a few written under a larger key_count_per_file, which are never reused
                // files dense (most rounds) or sparse (every fourth: numbers far beyond the count of addresses)
                long file = round % 4 == 3 ? r.nextInt(300) * 1_000_003L : r.nextInt(300);
                addrs[i] = at(file, r.nextInt(perFile + 3));
            }
            SlotAllocator bulk = new SlotAllocator(perFile), oneByOne = new SlotAllocator(perFile);
            bulk.allocate(17); // state from before the rebuild is dropped
            for (long a : addrs) {
                oneByOne.markUsed(a);
            }
            bulk.rebuild(addrs.clone());
            assertEquals(oneByOne.usedSlots(), bulk.usedSlots());
            assertEquals(oneByOne.files(), bulk.files());
            long[] files = new long[310];
            for (int f = 0; f < files.length; f++) {
                files[f] = round % 4 == 3 ? f * 1_000_003L : f;
            }
            assertArrayEquals(oneByOne.live(files), bulk.live(files));
            assertArrayEquals(oneByOne.allocate(500), bulk.allocate(500), "the same slots handed out next");
        }
    }

    @Test
    void rejectsBadSizes() {
        assertThrows(IllegalArgumentException.class, () -> new SlotAllocator(0));
        assertThrows(IllegalArgumentException.class, () -> new SlotAllocator(SlotAllocator.MAX_SLOTS + 1));
    }
}
