package dev.kvpool.agent.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The per-device record of what each slot holds: kept, invalidated, discarded when it cannot be trusted. */
class SlotTableTest {
    static final String ID = "instance=a spec=tp0 model=m block_tokens=16 block_bytes=65536";

    @TempDir
    Path dir;

    Path file() {
        return dir.resolve("kvpool-slots.idx");
    }

    @Test
    void theRadixSortOrdersByRecencyStablyOverTheWholeRange() {
        java.util.Random r = new java.util.Random(7);
        int n = 100_000;
        long[] seqs = new long[n], slots = new long[n];
        for (int i = 0; i < n; i++) {
            seqs[i] = i % 3 == 0 ? r.nextLong() >>> 2 : r.nextInt(1000); // up to 2^62 (the stamp's range), many ties
            slots[i] = i;
        }
        long[] sorted = SlotTable.sortBy(seqs.clone(), slots.clone());
        Long[] want = new Long[n];
        for (int i = 0; i < n; i++) {
            want[i] = (long) i;
        }
        java.util.Arrays.sort(want, java.util.Comparator.comparingLong(i -> seqs[(int) (long) i])); // stable
        for (int i = 0; i < n; i++) {
            assertEquals(want[i], sorted[i], "position " + i);
        }
    }

    @Test
    void recordsOutliveTheTableOldestFirstAndClearedSlotsAreFree() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 100, 65536, ID)) {
            assertEquals("new", t.opened());
            t.set(7, 1007L, 0xabc, 3);
            t.set(2, 1002L, 0xdef, 1);
            t.set(9, 1009L, -5, 2);
            t.touch(2, 10); // used last: most recent
            t.set(4, 1004L, 1, 4);
            t.clear(4);
            assertTrue(t.used(7));
            assertFalse(t.used(4));
        }
        try (SlotTable t = SlotTable.open(file(), 100, 65536, ID)) {
            assertEquals(List.of(new SlotTable.Block(9, 1009L, -5, 2), new SlotTable.Block(7, 1007L, 0xabc, 3),
                    new SlotTable.Block(2, 1002L, 0xdef, 10)), t.recovered());
            assertTrue(t.opened().startsWith("3 blocks kept after a clean stop"), t.opened());
        }
    }

    @Test
    void aParentIsKeptWithItsBlockAndATouchKeepsIt() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 10, 65536, ID)) {
            t.set(1, 21L, 5, 1, 20L);
            t.set(2, 22L, 6, 2, -7L);
            t.set(3, 23L, 7, 3, null);
            t.touch(1, 9);
        }
        try (SlotTable t = SlotTable.open(file(), 10, 65536, ID)) {
            assertEquals(List.of(new SlotTable.Block(2, 22L, 6, 2, -7L), new SlotTable.Block(3, 23L, 7, 3, null),
                    new SlotTable.Block(1, 21L, 5, 9, 20L)), t.recovered());
        }
    }

    @Test
    void anotherIdentityOrSlotSizeStartsEmpty() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 10, 65536, ID)) {
            t.set(1, 11L, 1, 1);
        }
        try (SlotTable t = SlotTable.open(file(), 10, 65536, ID.replace("tp0", "tp1"))) {
            assertEquals(List.of(), t.recovered(), "the same key names another rank's bytes");
            assertTrue(t.opened().contains("started empty"), t.opened());
            t.set(1, 11L, 1, 1);
        }
        try (SlotTable t = SlotTable.open(file(), 10, 131072, ID.replace("tp0", "tp1"))) {
            assertEquals(List.of(), t.recovered());
            assertTrue(t.opened().contains("65536-byte slots"), t.opened());
        }
        Files.write(file(), new byte[] {1, 2, 3});
        try (SlotTable t = SlotTable.open(file(), 10, 65536, ID)) {
            assertEquals(List.of(), t.recovered());
            assertTrue(t.opened().contains("too short"), t.opened());
        }
    }

    @Test
    void fewerSlotsKeepTheRecordsThatStillFit() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 10, 4096, ID)) {
            t.set(1, 11L, 1, 1);
            t.set(8, 18L, 8, 2);
        }
        try (SlotTable t = SlotTable.open(file(), 5, 4096, ID)) {
            assertEquals(List.of(new SlotTable.Block(1, 11L, 1, 1)), t.recovered());
            assertTrue(t.opened().contains("slots beyond 5 dropped"), t.opened());
        }
        try (SlotTable t = SlotTable.open(file(), 20, 4096, ID)) { // grown again: slot 8 was dropped for good
            assertEquals(List.of(new SlotTable.Block(1, 11L, 1, 1)), t.recovered());
            t.set(19, 29L, 9, 3);
        }
        assertEquals(SlotTable.HEADER + 20L * SlotTable.RECORD, Files.size(file()));
    }

    @Test
    void aTornOrMovedRecordIsNoBlock() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 10, 4096, ID)) {
            t.set(1, 11L, 1, 1);
            t.set(2, 12L, 2, 2);
        }
        try (RandomAccessFile f = new RandomAccessFile(file().toFile(), "rw")) {
            f.seek(SlotTable.HEADER + 1L * SlotTable.RECORD); // slot 1's key changed under its check: torn
            f.write(new byte[] {9, 9});
            byte[] rec = new byte[SlotTable.RECORD]; // slot 2's record copied to slot 6: its check names slot 2
            f.seek(SlotTable.HEADER + 2L * SlotTable.RECORD);
            f.readFully(rec);
            f.seek(SlotTable.HEADER + 6L * SlotTable.RECORD);
            f.write(rec);
        }
        try (SlotTable t = SlotTable.open(file(), 10, 4096, ID)) {
            assertEquals(List.of(new SlotTable.Block(2, 12L, 2, 2)), t.recovered());
            assertFalse(t.used(1), "freed at open");
            assertFalse(t.used(6));
        }
    }

    @Test
    void aSecondOpenOfTheSameDirectoryIsRefused() throws IOException {
        try (SlotTable t = SlotTable.open(file(), 10, 4096, ID)) {
            IOException e = assertThrows(IOException.class, () -> SlotTable.open(file(), 10, 4096, ID));
            assertTrue(e.getMessage().contains("in use by another agent"), e.getMessage());
        }
        SlotTable.open(file(), 10, 4096, ID).close(); // released on close
    }
}
