package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.slots.SlotAllocator;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** File-slot allocation in a real Redis (127.0.0.1:6379, or -Dkvpool.test.redis) behaves as the in-process allocator does. */
class RedisSlotsIT {
    private static Vertx vertx;
    private static Redis redis;
    private final String prefix = "kvp-slots-" + UUID.randomUUID().toString().substring(0, 8) + ":";

    @BeforeAll
    static void connect() {
        vertx = Vertx.vertx();
        redis = Redis.createClient(vertx, TestRedis.URI);
    }

    @AfterAll
    static void close() throws Exception {
        redis.close();
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private RedisSlots slots(int perFile) {
        return new RedisSlots(redis, prefix, "inst", 1, perFile, Duration.ofSeconds(5));
    }

    private static long at(long file, int slot) {
        return SlotAllocator.address(file, slot);
    }

    @AfterEach
    void cleanup() throws Exception {
        var keys = redis.send(Request.cmd(Command.KEYS).arg(prefix + "*")).toCompletionStage().toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        for (var k : keys) {
            redis.send(Request.cmd(Command.DEL).arg(k.toString())).toCompletionStage().toCompletableFuture()
                    .get(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void freshSlotsFillFilesInOrderAcrossFileBoundaries() throws Exception {
        RedisSlots s = slots(4);
        assertArrayEquals(new long[] {at(0, 0), at(0, 1), at(0, 2)}, s.allocate(3));
        assertArrayEquals(new long[] {at(0, 3), at(1, 0), at(1, 1), at(1, 2), at(1, 3), at(2, 0)}, s.allocate(6));
        assertArrayEquals(new long[0], s.allocate(0));
        assertEquals(9, s.usedSlots());
        assertEquals(3, s.files());
    }

    @Test
    void perFileCountsStayExactUnderMixedAllocationsAndFrees() throws Exception {
        // fresh ranges that start mid-file, at a file's first slot and after reused slots, mixed with frees: every
        // file's counter must equal the slots of it that are handed out (files() and usedSlots() read them)
        RedisSlots s = slots(4);
        java.util.Random rnd = new java.util.Random(7);
        java.util.List<Long> held = new java.util.ArrayList<>();
        for (int step = 0; step < 300; step++) {
            if (held.isEmpty() || rnd.nextInt(3) > 0) {
                for (long a : s.allocate(1 + rnd.nextInt(11))) {
                    assertFalse(held.contains(a), "slot handed out twice: " + a);
                    held.add(a);
                }
            } else {
                int n = 1 + rnd.nextInt(Math.min(6, held.size()));
                long[] f = new long[n];
                for (int i = 0; i < n; i++) {
                    f[i] = held.remove(rnd.nextInt(held.size()));
                }
                s.freeAll(f);
            }
            assertEquals(held.size(), s.usedSlots(), "used slots after step " + step);
            assertEquals(held.stream().map(SlotAllocator::file).distinct().count(), s.files(), "files after step " + step);
        }
    }

    @Test
    void freedSlotsComeBackBeforeFreshOnes() throws Exception {
        RedisSlots s = slots(4);
        s.allocate(8);
        assertFalse(s.free(at(0, 2)));
        assertFalse(s.free(at(1, 1)));
        assertFalse(s.free(at(1, 1)), "a slot freed twice counts once");
        long[] again = s.allocate(3);
        assertEquals(Set.of(at(0, 2), at(1, 1)), Set.of(again[0], again[1]));
        assertEquals(at(2, 0), again[2]);
        assertEquals(9, s.usedSlots());
    }

    @Test
    void noSlotOfAnEmptiedFileIsHandedOutAgain() throws Exception {
        RedisSlots s = slots(4);
        long[] a = s.allocate(6); // file 0 full, file 1 half
        for (int i = 0; i < 3; i++) {
            assertFalse(s.free(a[i]));
        }
        assertTrue(s.free(a[3]), "the last slot of file 0 left: the caller deletes the file");
        // file 1, the one being filled, empties too
        assertFalse(s.free(a[4]));
        assertTrue(s.free(a[5]));
        assertEquals(0, s.usedSlots());
        assertEquals(0, s.files());
        long[] next = s.allocate(10);
        Set<Long> files = new HashSet<>();
        Arrays.stream(next).forEach(x -> files.add(SlotAllocator.file(x)));
        assertFalse(files.contains(0L), "file 0 may be deleted at any moment");
        assertFalse(files.contains(1L), "file 1 too");
        assertEquals(at(2, 0), next[0]);
        assertEquals(10, Arrays.stream(next).distinct().count());
    }

    @Test
    void aBatchFreeReportsEachEmptiedFileOnceAndMatchesSingleFrees() throws Exception {
        RedisSlots s = slots(4);
        long[] a = s.allocate(10); // files 0 and 1 full, file 2 half
        // file 0 whole, file 1 but one slot, file 2 whole (the file being filled), and a slot twice
        long[] batch = {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[8], a[9], a[2]};
        long[] emptied = s.freeAll(batch);
        assertEquals(Set.of(a[3], a[9]), Set.of(Arrays.stream(emptied).boxed().toArray(Long[]::new)),
                "the frees that emptied files 0 and 2");
        assertEquals(1, s.usedSlots());
        assertEquals(1, s.files());
        assertArrayEquals(new long[0], s.freeAll(new long[] {a[0], a[9]}), "already free");
        assertArrayEquals(new long[] {a[7]}, s.freeAll(new long[] {a[7]}));
        long[] next = s.allocate(5);
        for (long x : next) {
            assertTrue(SlotAllocator.file(x) >= 3, "no slot of a deleted file: " + x);
        }
        // a batch larger than one script call
        RedisSlots big = new RedisSlots(redis, prefix + "big:", "inst", 1, 10_000, Duration.ofSeconds(5));
        long[] many = big.allocate(9_000);
        assertArrayEquals(new long[0], big.freeAll(Arrays.copyOf(many, 8_999)));
        assertEquals(1, big.usedSlots());
        assertArrayEquals(new long[] {many[8_999]}, big.freeAll(new long[] {many[8_999]}));
    }

    @Test
    void rebuildKeepsExactlyTheUsedSlots() throws Exception {
        RedisSlots s = slots(4);
        s.allocate(3);
        s.rebuild(new long[] {at(0, 1), at(1, 2)});
        assertEquals(2, s.usedSlots());
        assertEquals(2, s.files());
        long[] got = s.allocate(5);
        Set<Long> set = new HashSet<>();
        Arrays.stream(got).forEach(set::add);
        assertEquals(5, set.size());
        assertFalse(set.contains(at(0, 1)));
        assertFalse(set.contains(at(1, 2)));
        assertTrue(set.containsAll(Set.of(at(0, 0), at(0, 2), at(0, 3), at(1, 0), at(1, 1))));
        assertNotEquals(0, s.usedSlots());
    }

    @Test
    void rebuildFromManyUnsortedAddressesSendsThemInPieces() throws Exception {
        RedisSlots s = slots(4);
        int files = 5_000; // more files and free slots than one command carries
        long[] used = new long[files + 1];
        for (int f = 0; f < files; f++) {
            used[f] = at(files - 1 - f, f % 4); // newest file first: unsorted
        }
        used[files] = used[0]; // an address twice counts once
        s.rebuild(used);
        assertEquals(files, s.usedSlots());
        assertEquals(files, s.files());
        Set<Long> taken = new HashSet<>();
        Arrays.stream(used).forEach(taken::add);
        long[] got = s.allocate(3 * files); // exactly the free slots below the highest used one
        Set<Long> free = new HashSet<>();
        for (long a : got) {
            assertFalse(taken.contains(a), "a used slot handed out: " + a);
            assertTrue(SlotAllocator.file(a) < files, "a new file before the free slots ran out: " + a);
            free.add(a);
        }
        assertEquals(3 * files, free.size());
        assertEquals(files, SlotAllocator.file(s.allocate(1)[0]), "then a new file");
    }

    @Test
    void liveFilesAndAFrontierThatOnlyMovesForward() throws Exception {
        RedisSlots s = slots(4);
        long[] a = s.allocate(12); // files 0, 1, 2
        assertArrayEquals(new boolean[] {true, true, true, false}, s.live(new long[] {0, 1, 2, 3}));
        assertArrayEquals(new long[] {a[7]}, s.freeAll(Arrays.copyOfRange(a, 4, 8)));
        assertArrayEquals(new boolean[] {true, false, true}, s.live(new long[] {0, 1, 2}));
        assertArrayEquals(new boolean[0], s.live(new long[0]));
        s.openFilesFrom(9);
        s.openFilesFrom(5); // never back
        for (long x : s.allocate(5)) {
            assertTrue(SlotAllocator.file(x) >= 9, "file " + SlotAllocator.file(x));
        }
        assertArrayEquals(new boolean[] {false, true, true}, s.live(new long[] {1, 9, 10}));
    }

    /** A file with no used slot at a rebuild was emptied (and deleted, or left to the storage sweep). */
    @Test
    void rebuildHandsOutNoSlotOfAFileThatHoldsNothing() throws Exception {
        RedisSlots s = slots(4);
        s.rebuild(new long[] {at(0, 0), at(3, 1)}); // files 1 and 2 hold nothing
        assertArrayEquals(new boolean[] {true, false, false, true}, s.live(new long[] {0, 1, 2, 3}));
        Set<Long> files = new HashSet<>();
        for (long x : s.allocate(8)) {
            files.add(SlotAllocator.file(x));
        }
        assertEquals(Set.of(0L, 3L, 4L), files, "free slots of files 0 and 3 (3 + 1), then file 4");
    }
}
