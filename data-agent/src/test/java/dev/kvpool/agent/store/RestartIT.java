package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.pool.KeptOrder;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.pool.SlotTable;
import dev.kvpool.agent.tier.FileDevice;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** NVMe blocks outlive the agent process: a clean stop, a kill -9 under a write load, and what must not be kept. */
class RestartIT {
    static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    static AgentSetup.Settings settings(Path dir, String instance) {
        return AgentSetup.Settings.defaults(dir).withBlock(BLOCK, 1, 16L << 20)
                .withNvme(List.of(dir.resolve("nvme0")), 1024L * BLOCK)
                .withInstance(instance);
    }

    /** Bytes that depend on the key alone, so a block read back can be checked without the writer's memory. */
    static void fill(MemorySegment m, long key) {
        for (long o = 0; o < m.byteSize(); o += 8) {
            m.set(ValueLayout.JAVA_LONG, o, key * 0x9E3779B97F4A7C15L ^ o);
        }
    }

    @Test
    void blocksOnNvmeSurviveAKillUnderAWriteLoadAndNothingHalfWrittenComesBack() throws Exception {
        int first = 400;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                System.getProperty("java.class.path"), SavingAgent.class.getName(), dir.toString(),
                Integer.toString(first)).redirectErrorStream(true).start();
        List<String> out = new ArrayList<>();
        Thread.ofVirtual().start(() -> { // a child that hangs must not hang the build
            try {
                if (!p.waitFor(120, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            } catch (InterruptedException ignored) {
                p.destroyForcibly();
            }
        });
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                out.add(line);
                if (line.startsWith("SAVED ")) {
                    break;
                }
            }
            assertTrue(out.getLast().startsWith("SAVED "), "the child saved its first blocks: " + out);
            Thread.sleep(400); // the write load runs
            p.destroyForcibly(); // SIGKILL: no shutdown hook, no clean close of the slot table
            assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        } finally {
            p.destroyForcibly();
        }
        assertEquals(137, p.exitValue(), "killed by SIGKILL");

        List<BlockEvent> events = new CopyOnWriteArrayList<>();
        try (BlockStore store = AgentSetup.build(settings(dir, "inst-a"), events::add).store();
             Arena a = Arena.ofShared()) {
            PooledTier nvme = store.nvme();
            // what it kept is what it announces: one stored/disk event per kept block
            store.keptAnnounced().get(60, TimeUnit.SECONDS);
            long[] kept = events.stream().filter(e -> e.eventType().equals("stored") && "disk".equals(e.medium()))
                    .flatMapToLong(e -> Arrays.stream(e.blockHashes())).toArray();
            assertEquals(kept.length, nvme.keptAtStart().get("nvme0"), "the status's count");
            assertTrue(kept.length >= first, "at least the blocks saved before the load: " + kept.length);
            assertEquals(nvme.capacity(), nvme.size() + nvme.freeSlots(), "every slot held or free: none leaked");
            Set<Long> keys = new HashSet<>();
            for (long k : kept) {
                keys.add(k);
            }
            for (long k = 0; k < first; k++) {
                assertTrue(keys.contains(k), "block " + k + " was on NVMe before the kill; kept "
                        + kept.length + " from " + Arrays.stream(kept).min().orElse(-1) + " to "
                        + Arrays.stream(kept).max().orElse(-1) + "; child said " + out);
            }
            // every kept block reads back whole and right (the bandwidth probe at start wrote only free slots)
            MemorySegment[] dst = TestBlocks.empty(a, kept.length, BLOCK);
            BlockStore.LoadResult r = store.load(kept, dst);
            MemorySegment want = a.allocate(BLOCK, 4096);
            for (int i = 0; i < kept.length; i++) {
                assertTrue(r.found()[i], "kept block " + kept[i] + " loads");
                assertEquals("nvme", r.tier()[i]);
                fill(want, kept[i]);
                assertEquals(-1, dst[i].mismatch(want), "block " + kept[i] + " has its own bytes");
            }
            assertEquals(0, nvme.checksumFailures(), "no record pointed at bytes a write had not finished");
            // consumers learn that the agent restarted, then what it kept (announced from a thread of its own while
            // the store served the load above), then what happened meanwhile
            store.keptAnnounced().get(30, TimeUnit.SECONDS);
            assertEquals(BlockEvent.ALL_CLEARED, events.getFirst().eventType());
            int lastKept = -1, firstOnboarded = -1;
            for (int i = 0; i < events.size(); i++) {
                BlockEvent e = events.get(i);
                if (e.eventType().equals(BlockEvent.STORED) && BlockEvent.DISK.equals(e.medium())) {
                    lastKept = i;
                } else if (e.eventType().equals(BlockEvent.ONBOARDED) && firstOnboarded < 0) {
                    firstOnboarded = i;
                }
            }
            assertTrue(firstOnboarded > lastKept, "the load's onboarded events come after the announcement: "
                    + firstOnboarded + " vs " + lastKept);
            List<Long> announced = new ArrayList<>();
            for (BlockEvent e : events.subList(1, events.size())) {
                if (e.eventType().equals(BlockEvent.STORED) && BlockEvent.DISK.equals(e.medium())) {
                    assertEquals("nvme0", e.storageLocation());
                    // a chain as saved: each block extends the one before it, the first its recorded parent
                    long[] h = e.blockHashes();
                    assertEquals(h[0] == 0 ? null : Long.valueOf(h[0] - 1), e.parentBlockHash(), "parent of " + h[0]);
                    for (int i = 0; i < h.length; i++) {
                        assertEquals(h[0] + i, h[i], "one event is one chain");
                        announced.add(h[i]);
                    }
                }
            }
            assertEquals(Arrays.stream(kept).sorted().boxed().toList(), announced.stream().sorted().toList());
            Set<Long> before = new HashSet<>();
            for (long k : announced) { // every kept block after its parent, when that was kept too
                assertTrue(!keys.contains(k - 1) || before.contains(k - 1), "block " + k + " announced before its parent");
                before.add(k);
            }
            System.out.printf("[RestartIT] kill -9 under a write load: %d blocks kept (%d saved before the load),"
                    + " all verified%n", kept.length, first);
        }
    }

    @Test
    void aCleanRestartKeepsRecencyAndRemovalsAndFreesTheRest() throws Exception {
        long[] keys = TestBlocks.keys(10, 8);
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 8, BLOCK, 3);
            try (PooledTier t = tier("inst-a", 8)) {
                assertTrue(allTrue(t.put(keys, src, false).join()));
                t.get(new long[] {10, 11}, TestBlocks.empty(a, 2, BLOCK)).join(); // used last
                assertTrue(t.remove(15));
            }
            try (PooledTier t = tier("inst-a", 8)) {
                assertArrayEquals(new long[] {12, 13, 14, 16, 17, 10, 11}, t.takeKept().keysPerDevice()[0],
                        "least recently used first; the removed block is gone");
                assertEquals(1, t.freeSlots());
                // full again with two new blocks: the least recently used kept block goes
                assertTrue(allTrue(t.put(new long[] {90, 91}, TestBlocks.random(a, 2, BLOCK, 4), false).join()));
                assertFalse(t.contains(12));
                assertTrue(t.contains(13));
                MemorySegment[] dst = TestBlocks.empty(a, 8, BLOCK);
                boolean[] hit = t.get(keys, dst).join();
                for (int i = 0; i < 8; i++) {
                    assertEquals(i != 2 && i != 5, hit[i]);
                    if (hit[i]) {
                        assertEquals(-1, dst[i].mismatch(src[i]));
                    }
                }
            }
        }
    }

    @Test
    void storedEventsAfterARestartAnnounceEveryBlockAfterItsParentWhateverTheRecency() throws Exception {
        // two prompts sharing 100..103: 100..107 and 100..103, 200, 201; over two devices
        long[] chain = {100, 101, 102, 103, 104, 105, 106, 107};
        Long[] chainParents = {null, 100L, 101L, 102L, 103L, 104L, 105L, 106L};
        try (Arena a = Arena.ofShared()) {
            try (PooledTier t = tier2()) {
                assertTrue(allTrue(t.put(chain, TestBlocks.random(a, 8, BLOCK, 5), false, null, chainParents).join()));
                assertTrue(allTrue(t.put(new long[] {200, 201}, TestBlocks.random(a, 2, BLOCK, 6), false, null,
                        new Long[] {103L, 200L}).join()));
                t.get(new long[] {100, 101, 102, 103}, TestBlocks.empty(a, 4, BLOCK)).join(); // the prefix used last
            }
            try (PooledTier t = tier2()) {
                long[] lru = new long[10];
                int i = 0;
                KeptOrder kept = t.takeKept();
                for (long[] perDevice : kept.keysPerDevice()) {
                    for (long key : perDevice) {
                        lru[i++] = key;
                    }
                }
                assertEquals(10, i);
                List<Long> announced = new ArrayList<>();
                Set<String> devices = new HashSet<>();
                for (PooledTier.KeptRun r : kept.inPrefixOrder()) {
                    devices.add(r.device());
                    for (int j = 0; j < r.keys().length; j++) {
                        announced.add(r.keys()[j]);
                        Long p = r.parents()[j];
                        assertTrue(p == null || announced.contains(p), r.keys()[j] + " before its parent " + p);
                    }
                }
                assertEquals(Set.of("nvme0", "nvme1"), devices);
                assertEquals(List.of(100L, 101L, 102L, 103L, 104L, 105L, 106L, 107L, 200L, 201L), announced,
                        "depth first, chains together, children in LRU order");
            }
        }
    }

    @Test
    void whatHappensWhileTheKeptBlocksAreAnnouncedWaitsBehindTheAnnouncement() throws Exception {
        long[] keys = TestBlocks.keys(300, 6);
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 6, BLOCK, 8);
            try (BlockStore s = AgentSetup.build(settings(dir, "inst-g"), EventSink.NONE).store()) {
                s.save(keys, src, null);
                s.awaitWriteBehind(); // on NVMe
            }
            List<BlockEvent> events = new CopyOnWriteArrayList<>();
            java.util.concurrent.CountDownLatch loaded = new java.util.concurrent.CountDownLatch(1);
            EventSink slowAnnouncer = e -> { // the announcement stalls until the store has served a load
                if (e.eventType().equals(BlockEvent.STORED) && BlockEvent.DISK.equals(e.medium())
                        && Thread.currentThread().getName().equals("kvpool-kept-events")) {
                    try {
                        loaded.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                    }
                }
                events.add(e);
            };
            try (BlockStore s = AgentSetup.build(settings(dir, "inst-g"), slowAnnouncer).store()) {
                BlockStore.LoadResult r = s.load(keys, TestBlocks.empty(a, 6, BLOCK)); // served meanwhile
                assertEquals(6, r.hits());
                assertFalse(s.keptAnnounced().isDone(), "the announcement is still stalled");
                loaded.countDown();
                s.keptAnnounced().get(30, TimeUnit.SECONDS);
                List<String> seen = events.stream().map(e -> e.eventType() + "/" + e.medium()).toList();
                assertEquals(BlockEvent.ALL_CLEARED, events.getFirst().eventType(), seen.toString());
                assertEquals(BlockEvent.STORED + "/" + BlockEvent.DISK, seen.get(1), "the kept blocks next: " + seen);
                assertTrue(seen.indexOf(BlockEvent.ONBOARDED + "/" + BlockEvent.DISK) > 1, "then the load: " + seen);
                assertArrayEquals(keys, events.get(1).blockHashes());
            }
        }
    }

    private PooledTier tier2() {
        List<FileDevice> d = new ArrayList<>();
        for (String id : List.of("nvme0", "nvme1")) {
            d.add(new FileDevice(id, dir.resolve(id), 8, BLOCK, new FileChannelBlockIo(2), settings(dir, "inst-a").keySpace()));
        }
        return PooledTier.of("nvme", BlockEvent.DISK, BLOCK, d, new double[] {1, 1});
    }

    @Test
    void aKeyRecordedTwiceKeepsTheMoreRecentCopy() throws Exception {
        Path idx = dir.resolve("nvme0").resolve("kvpool-slots.idx");
        new FileDevice("nvme0", dir.resolve("nvme0"), 8, BLOCK, new FileChannelBlockIo(2)).close(); // the slot file
        try (SlotTable t = SlotTable.open(idx, 8, BLOCK, settings(dir, "inst-a").keySpace())) {
            t.set(0, 5L, 1, 1); // an invalidation lost with power: key 5 in two slots
            t.set(3, 5L, 2, 7);
            t.set(4, 6L, 3, 2);
        }
        try (PooledTier t = tier("inst-a", 8)) {
            assertArrayEquals(new long[] {6, 5}, t.takeKept().keysPerDevice()[0]);
            assertEquals(6, t.freeSlots(), "the older copy's slot is free");
            SlotTable table = t.devices().getFirst().slotTable();
            assertFalse(table.used(0), "and its record cleared");
            assertTrue(table.used(3));
        }
    }

    @Test
    void anotherInstanceOnTheSameDirectoryStartsEmpty() throws Exception {
        try (Arena a = Arena.ofShared()) {
            try (PooledTier t = tier("inst-a", 8)) {
                assertTrue(allTrue(t.put(TestBlocks.keys(1, 4), TestBlocks.random(a, 4, BLOCK, 1), false).join()));
            }
            try (PooledTier t = tier("inst-b", 8)) {
                assertEquals(0, t.size(), "the same key of another instance names other bytes");
                assertEquals(8, t.freeSlots());
            }
        }
    }

    @Test
    void aSlotFileDeletedByHandTakesItsRecordsWithIt() throws Exception {
        try (Arena a = Arena.ofShared()) {
            try (PooledTier t = tier("inst-a", 8)) {
                assertTrue(allTrue(t.put(TestBlocks.keys(1, 4), TestBlocks.random(a, 4, BLOCK, 1), false).join()));
            }
            java.nio.file.Files.delete(dir.resolve("nvme0").resolve("kvpool-slots.dat"));
            try (PooledTier t = tier("inst-a", 8)) {
                assertEquals(0, t.size(), "no recorded block's bytes exist any more");
                assertEquals(8, t.freeSlots());
            }
        }
    }

    @Test
    void aSecondAgentOnTheSameDirectoryIsRefused() {
        try (BlockStore store = AgentSetup.build(settings(dir, "inst-a"), null).store()) {
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> AgentSetup.build(settings(dir, "inst-a"), null));
            assertTrue(e.getMessage().contains("in use by another agent"), e.getMessage());
            assertTrue(store.nvme().capacity() > 0);
        }
    }

    private PooledTier tier(String instance, int slots) {
        FileDevice f = new FileDevice("nvme0", dir.resolve("nvme0"), slots, BLOCK, new FileChannelBlockIo(2),
                settings(dir, instance).keySpace());
        return PooledTier.of("nvme", BlockEvent.DISK, BLOCK, List.of(f), new double[] {1});
    }

    private static boolean allTrue(boolean[] b) {
        for (boolean x : b) {
            if (!x) {
                return false;
            }
        }
        return true;
    }
}
