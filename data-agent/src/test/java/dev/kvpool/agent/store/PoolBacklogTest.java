package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

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
}
