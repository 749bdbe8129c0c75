package dev.kvpool.agent.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SpoolLogTest {
    @TempDir
    Path dir;

    static byte[] value(long seq) {
        return ("{\"batch\":" + seq + ",\"pad\":\"" + "x".repeat((int) (seq % 7) * 10) + "\"}").getBytes(StandardCharsets.UTF_8);
    }

    static List<Long> seqs(List<SpoolLog.Batch> batches) {
        return batches.stream().map(SpoolLog.Batch::seq).toList();
    }

    static List<Path> segments(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.filter(p -> p.toString().endsWith(".seg")).sorted().toList();
        }
    }

    @Test
    void batchesNotDoneComeBackInOrderWithTheirBytes() {
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(), log.recovered());
            for (long s = 0; s < 10; s++) {
                log.append(s, 1000 + s, value(s));
            }
            log.done(4);
        }
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(5L, 6L, 7L, 8L, 9L), seqs(log.recovered()));
            for (SpoolLog.Batch b : log.recovered()) {
                assertArrayEquals(value(b.seq()), b.value());
                assertEquals(1000 + b.seq(), b.tsMs());
            }
            log.append(10, 0, value(10)); // a new run appends to a new segment
            log.done(7);
        }
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(8L, 9L, 10L), seqs(log.recovered()));
        }
    }

    @Test
    void segmentsRollAndGoOnceDoneAndAnEmptyLogLeavesNoSegment() throws IOException {
        try (SpoolLog log = SpoolLog.open(dir, 256)) {
            for (long s = 0; s < 40; s++) {
                log.append(s, 0, value(s));
            }
            int all = log.segmentCount();
            assertTrue(all >= 8, "rolled at 256 bytes: " + all);
            long before = log.bytes();
            log.done(19);
            assertTrue(log.segmentCount() < all && log.bytes() < before, log.segmentCount() + " segments, " + log.bytes());
            assertEquals(log.segmentCount(), segments(dir).size(), "done segments are deleted from the disk");
            log.done(39);
            assertEquals(0, log.bytes(), "the active segment is emptied in place when everything is done");
            assertEquals(1, segments(dir).size());
            log.append(40, 0, value(40));
            log.done(40);
        }
        assertEquals(List.of(), segments(dir), "nothing left to send: no segment");
        try (SpoolLog log = SpoolLog.open(dir, 256)) {
            assertEquals(List.of(), log.recovered());
        }
    }

    @Test
    void aTornOrDamagedTailEndsTheSegmentAndTheRestStillComesBack() throws IOException {
        try (SpoolLog log = SpoolLog.open(dir)) {
            for (long s = 0; s < 6; s++) {
                log.append(s, 0, value(s));
            }
        }
        Path seg = segments(dir).getFirst();
        long size = Files.size(seg);
        try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.WRITE)) {
            ch.truncate(size - 3); // the last append was cut short by a crash
        }
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(0L, 1L, 2L, 3L, 4L), seqs(log.recovered()));
        }
        byte[] bytes = Files.readAllBytes(seg);
        int third = 2 * SpoolLog.HEADER + value(0).length + value(1).length + SpoolLog.HEADER; // batch 2's value
        bytes[third] ^= 0x40; // one flipped bit
        Files.write(seg, bytes);
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(0L, 1L), seqs(log.recovered()), "a batch failing its CRC is never sent");
        }
    }

    @Test
    void aSecondPublisherOnOneSpoolIsRefused() {
        try (SpoolLog log = SpoolLog.open(dir)) {
            log.append(0, 0, value(0));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SpoolLog.open(dir));
            assertTrue(e.getMessage().contains("in use"), e.getMessage());
        }
        try (SpoolLog log = SpoolLog.open(dir)) {
            assertEquals(List.of(0L), seqs(log.recovered()));
        }
    }
}
