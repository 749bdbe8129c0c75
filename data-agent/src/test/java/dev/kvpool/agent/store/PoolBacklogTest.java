package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.agent.io.SpoolLog;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PoolBacklogTest {
    @Test
    void oldestFirstWithParentsAcrossGrowthAndWrapAround() {
        PoolBacklog b = new PoolBacklog(5000);
        long[] k = new long[3000];
        Long[] p = new Long[3000];
        for (int i = 0; i < k.length; i++) {
            k[i] = i;
            p[i] = i % 3 == 0 ? null : Long.valueOf(i - 1);
        }
        b.add(k, p); // grows 1024 -> 2048 -> 4096
        long[] got = new long[2500];
        Long[] gotP = new Long[2500];
        assertEquals(2500, b.take(got, gotP));
        assertArrayEquals(Arrays.copyOf(k, 2500), got);
        assertArrayEquals(Arrays.copyOf(p, 2500), gotP);
        b.add(new long[] {7000, 7001, 7002}, new Long[] {null, 7000L, 7001L});
        assertEquals(503, b.size());
        assertEquals(3003, b.owed(), "taken and not settled still owed");
        b.settled(2500);
        assertEquals(503, b.owed());
        long[] rest = new long[600];
        Long[] restP = new Long[600];
        assertEquals(503, b.take(rest, restP));
        assertEquals(2500, rest[0]);
        assertEquals(7002, rest[502]);
        assertEquals(7001L, restP[502]);
        assertEquals(0, b.dropped());
    }

    @Test
    void whenFullTheOldestGoAndAreCounted() {
        PoolBacklog b = new PoolBacklog(4);
        b.add(new long[] {1, 2, 3, 4, 5, 6}, null);
        assertEquals(2, b.dropped());
        long[] k = new long[4];
        Long[] p = new Long[4];
        assertEquals(2, b.take(Arrays.copyOf(k, 2), Arrays.copyOf(p, 2)));
        assertEquals(2, b.size());
    }

    @Test
    void aFailedBatchGoesBackInFrontInItsOrder() {
        PoolBacklog b = new PoolBacklog(6);
        b.add(new long[] {1, 2, 3, 4}, new Long[] {null, 1L, 2L, 3L});
        long[] k = new long[3];
        Long[] p = new Long[3];
        assertEquals(3, b.take(k, p));
        b.add(new long[] {5, 6}, new Long[] {4L, 5L}); // newer saves meanwhile
        b.putBack(k, p, 3, 3);
        assertEquals(6, b.size());
        long[] all = new long[6];
        Long[] allP = new Long[6];
        b.take(all, allP);
        assertArrayEquals(new long[] {1, 2, 3, 4, 5, 6}, all);
        assertArrayEquals(new Long[] {null, 1L, 2L, 3L, 4L, 5L}, allP);
        // full: a batch put back keeps only what fits, its newest blocks, and counts the rest
        b.add(new long[] {10, 11, 12, 13, 14}, null);
        b.putBack(new long[] {1, 2, 3}, new Long[3], 3, 0);
        assertEquals(6, b.size());
        assertEquals(2, b.dropped());
        long[] after = new long[6];
        b.take(after, new Long[6]);
        assertArrayEquals(new long[] {3, 10, 11, 12, 13, 14}, after);
    }

    @TempDir
    Path dir;

    @Test
    void whatIsOwedOutlivesAStopAndAKill() throws IOException {
        Path live = dir.resolve("live"), killed = dir.resolve("killed");
        PoolBacklog b = new PoolBacklog(100, SpoolLog.open(live, 256, "backlog"));
        assertEquals(0, b.keptFromLastRun());
        long[] k = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        Long[] p = {null, 1L, 2L, 3L, null, 5L, 6L, 7L, 8L, 9L};
        b.add(k, p);
        long[] got = new long[4];
        Long[] gotP = new Long[4];
        assertEquals(4, b.take(got, gotP));
        b.settled(4); // written: done
        b.add(new long[] {11, 12, 13}, new Long[] {10L, 11L, 12L});
        long[] two = new long[2];
        assertEquals(2, b.take(two, new Long[2])); // 5 and 6 are being written when the agent dies
        copy(live, killed); // what a kill -9 leaves: the files as they are, no close
        b.close(); // a clean stop keeps the same
        for (Path d : new Path[] {live, killed}) {
            try (SpoolLog log = SpoolLog.open(d, 256, "backlog")) {
                PoolBacklog again = new PoolBacklog(100, log);
                assertEquals(9, again.keptFromLastRun(), d.toString());
                long[] all = new long[20];
                Long[] allP = new Long[20];
                assertEquals(9, again.take(all, allP));
                assertArrayEquals(new long[] {5, 6, 7, 8, 9, 10, 11, 12, 13}, Arrays.copyOf(all, 9));
                assertArrayEquals(new Long[] {null, 5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L}, Arrays.copyOf(allP, 9));
                // 5 and 7 left the local tiers (no longer owed), the rest failed again: back with their seqs
                again.putBack(new long[] {6, 8, 9, 10, 11, 12, 13}, new Long[] {5L, 7L, 8L, 9L, 10L, 11L, 12L}, 7, 9);
                again.add(new long[] {14}, new Long[] {13L});
            }
            try (SpoolLog log = SpoolLog.open(d, 256, "backlog")) {
                PoolBacklog again = new PoolBacklog(100, log);
                long[] all = new long[20];
                // the log keeps what is done only up to the oldest still owed: 7, between 6 and 8, comes back (the
                // writer finds it gone again; a block written twice would be skipped by the plane anyway)
                assertEquals(9, again.take(all, new Long[20]));
                assertArrayEquals(new long[] {6, 7, 8, 9, 10, 11, 12, 13, 14}, Arrays.copyOf(all, 9));
                again.settled(9);
                assertEquals(0, log.bytes(), "all written: the log is empty");
            }
            try (SpoolLog log = SpoolLog.open(d, 256, "backlog")) {
                assertEquals(0, new PoolBacklog(100, log).keptFromLastRun());
            }
        }
    }

    @Test
    void entriesDroppedWhenFullAreNotOwedAfterARestart() {
        Path d = dir.resolve("full");
        PoolBacklog b = new PoolBacklog(4, SpoolLog.open(d, 256, "backlog"));
        b.add(new long[] {1, 2, 3, 4, 5, 6}, null);
        assertEquals(2, b.dropped());
        b.close();
        try (SpoolLog log = SpoolLog.open(d, 256, "backlog")) {
            PoolBacklog again = new PoolBacklog(4, log);
            long[] all = new long[8];
            assertEquals(4, again.take(all, new Long[8]));
            assertArrayEquals(new long[] {3, 4, 5, 6}, Arrays.copyOf(all, 4));
            assertEquals(0, again.dropped());
        }
    }

    @Test
    void aLogThatCannotBeWrittenLeavesTheBacklogInMemory() throws IOException {
        Path d = dir.resolve("lost");
        SpoolLog log = SpoolLog.open(d, 64, "backlog"); // tiny segments: the next add opens a new file
        PoolBacklog b = new PoolBacklog(100, log);
        b.add(new long[] {1, 2, 3, 4, 5}, null);
        try (Stream<Path> files = Files.walk(d)) { // the disk goes away under it
            for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(f);
            }
        }
        Files.writeString(d, "not a directory");
        b.add(new long[] {6, 7}, null); // the log cannot take it: still owed, no exception to the saver
        assertEquals(7, b.owed());
        long[] all = new long[10];
        assertEquals(7, b.take(all, new Long[10]));
        b.settled(7);
        assertEquals(0, b.owed());
        b.close();
    }

    private static void copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, to.resolve(f.getFileName()));
            }
        }
    }
}
