package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvpool.agent.MetaPlaneProcess;
import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.tier.GlobalPoolTier;
import dev.kvpool.api.client.KvcmHttpClient;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.QueryType;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** agent → real metadata plane → file storage → agent (a second agent reads what the first one wrote). */
class FullPathTest {
    static final int BLOCK = 64 * 1024;
    static MetaPlaneProcess meta;

    @TempDir
    static Path dir;

    @BeforeAll
    static void startMeta() throws Exception {
        assumeTrue(Files.isRegularFile(MetaPlaneProcess.runnerJar()),
                "metadata plane not packaged (" + MetaPlaneProcess.runnerJar() + "); run the reactor build");
        meta = new MetaPlaneProcess(dir.resolve("meta"), 8);
    }

    @AfterAll
    static void stopMeta() throws Exception {
        if (meta != null) {
            meta.close();
        }
    }

    AgentSetup.Built agent(String name, String instance) {
        return AgentSetup.build(settings(dir.resolve(name), meta.uri(), instance), events::add);
    }

    static AgentSetup.Settings settings(Path home, String metaUri, String instance) {
        return AgentSetup.Settings.defaults(home).withBlock(BLOCK, 1, 4L << 20)
                .withNvme(List.of(home.resolve("nvme0")), 8L << 20).withPool(metaUri, instance)
                .withIo("auto", 4, List.of(1000.0), List.of());
    }

    final List<BlockEvent> events = new CopyOnWriteArrayList<>();

    @Test
    void savedOnOneAgentLoadedOnAnother() throws Exception {
        long[] keys = TestBlocks.keys(1_000, 20);
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 20, BLOCK, 11);
            try (BlockStore writer = agent("w", "fullpath").store()) {
                boolean[] ok = writer.save(keys, src, null);
                for (boolean b : ok) {
                    assertTrue(b);
                }
                writer.awaitWriteBehind();
                assertTrue(events.stream().anyMatch(e -> e.eventType().equals("stored") && "remote".equals(e.medium())
                        && e.blockHashes().length == 20), "stored/remote event: " + events);
                assertTrue(events.stream().anyMatch(e -> e.eventType().equals("stored") && "disk".equals(e.medium())));
            }
            // the bytes are in slab files with slots under the storage root, not a file per block
            try (Stream<Path> files = Files.walk(meta.storageRoot)) {
                List<Path> slabs = files.filter(p -> p.getFileName().toString().matches("slab_[0-9a-f]+")).toList();
                assertEquals(3, slabs.size(), "20 blocks in slabs of 8: " + slabs);
            }
            try (BlockStore reader = agent("r", "fullpath").store()) {
                assertEquals(List.of("pool"), reader.query(new long[] {1_005}).get(0));
                MemorySegment[] dst = TestBlocks.empty(a, 20, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < 20; i++) {
                    assertTrue(r.found()[i], "block " + i);
                    assertEquals("pool", r.tier()[i]);
                    assertEquals(-1, dst[i].mismatch(src[i]), "bytes of block " + i);
                }
                // promoted into the reader's host pool
                assertEquals(List.of("host", "pool"), reader.query(new long[] {1_005}).get(0));
                assertTrue(events.stream().anyMatch(e -> e.eventType().equals("onboarded") && "remote".equals(e.medium())));
            }
        }
    }

    @Test
    void aBlockWhoseWriteFailedMidwayIsNeverServed() throws Exception {
        long[] keys = TestBlocks.keys(5_000, 6);
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 6, BLOCK, 12);
            AgentSetup.Built w = agent("w2", "partial");
            try (BlockStore writer = w.store()) {
                writer.pool().faults(k -> k == 5_002 || k == 5_004);
                writer.save(keys, src, null);
                writer.awaitWriteBehind();
                assertEquals(2, writer.pool().writeFailures());
            }
            // the metadata plane serves exactly the 4 good ones
            var client = new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(5));
            var locs = client.getCacheLocation(GetCacheLocationRequest.newBuilder().setTraceId("t")
                    .setInstanceId("partial").setQueryType(QueryType.QT_BATCH_GET)
                    .addAllBlockKeys(java.util.Arrays.stream(keys).boxed().toList()).build()).getLocationsList();
            for (int i = 0; i < 6; i++) {
                boolean served = !locs.get(i).getLocationSpecs(0).getUri().isEmpty();
                assertEquals(i != 2 && i != 4, served, "key " + keys[i]);
            }
            try (BlockStore reader = agent("r2", "partial").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, 6, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < 6; i++) {
                    assertEquals(i != 2 && i != 4, r.found()[i], "key " + keys[i]);
                    if (r.found()[i]) {
                        assertEquals(-1, dst[i].mismatch(src[i]));
                    }
                }
            }
        }
    }

    @Test
    void aPoolBlockCorruptedOnDiskIsAMiss() throws Exception {
        long key = 9_000;
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 1, BLOCK, 13);
            try (BlockStore writer = agent("w3", "corrupt").store()) {
                writer.save(new long[] {key}, src, null);
                writer.awaitWriteBehind();
            }
            var client = new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(5));
            String uri = client.getCacheLocation(GetCacheLocationRequest.newBuilder().setTraceId("t")
                    .setInstanceId("corrupt").setQueryType(QueryType.QT_BATCH_GET).addBlockKeys(key).build())
                    .getLocations(0).getLocationSpecs(0).getUri();
            GlobalPoolTier.FileLocation fl = GlobalPoolTier.FileLocation.parse(uri);
            try (FileChannel ch = FileChannel.open(fl.path(), StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), fl.offset() + 100);
            }
            try (BlockStore reader = agent("r3", "corrupt").store()) {
                BlockStore.LoadResult r = reader.load(new long[] {key}, TestBlocks.empty(a, 1, BLOCK));
                assertFalse(r.found()[0]);
                assertEquals(1, reader.pool().checksumFailures());
                assertNotNull(reader.pool());
            }
        }
    }

    @Test
    void savesWhileTheMetadataPlaneIsDownReachThePoolOnceItIsBack() throws Exception {
        int n = 96; // more than the host pool's 64 slots: the oldest are read back from NVMe for the late copy
        long[] keys = TestBlocks.keys(9_100, n);
        try (Arena a = Arena.ofShared(); BlockStore store = agent("outage-w", "fullpath-outage").store()) {
            MemorySegment[] src = TestBlocks.random(a, n, BLOCK, 21);
            meta.kill();
            try {
                for (int i = 0; i < n; i += 8) {
                    assertTrue(store.save(Arrays.copyOfRange(keys, i, i + 8), Arrays.copyOfRange(src, i, i + 8),
                            i == 0 ? null : keys[i - 1])[7]);
                    store.awaitWriteBehind();
                }
                assertEquals(n, store.poolBacklog(), "every pool copy is owed, none counted as a failure");
                assertEquals(0, store.writeBehindFailures());
                assertFalse(store.host().contains(keys[0]), "the first blocks are on NVMe only by now");
                assertTrue(store.nvme().contains(keys[0]));
                store.remove(new long[] {keys[n - 1]}, false); // the engine dropped one meanwhile: no longer owed
            } finally {
                meta.start(); // same port, same data directory
            }
            long end = System.currentTimeMillis() + 90_000;
            while ((store.poolBacklog() > 0 || store.poolBacklogWritten() + store.poolBacklogGone() < n)
                    && System.currentTimeMillis() < end) {
                Thread.sleep(100);
            }
            assertEquals(0, store.poolBacklog());
            assertEquals(n - 1, store.poolBacklogWritten());
            assertEquals(1, store.poolBacklogGone());
            assertTrue(events.stream().anyMatch(e -> e.eventType().equals("stored") && "remote".equals(e.medium())
                    && e.blockHashes()[0] == keys[0] && e.blockHashes().length == n - 1 && e.parentBlockHash() == null),
                    "the late copies are announced as the chain they were saved as");
            try (BlockStore reader = agent("outage-r", "fullpath-outage").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, n, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < n - 1; i++) {
                    assertEquals("pool", r.tier()[i], "block " + i);
                    assertEquals(-1, dst[i].mismatch(src[i]), "bytes of block " + i);
                }
                assertFalse(r.found()[n - 1], "the block removed during the outage was not written");
            }
        }
    }

    @Test
    void copiesOwedWhenTheAgentIsKilledAreWrittenAfterItStartsAgain() throws Exception {
        int n = 24;
        long[] keys = TestBlocks.keys(9_300, n);
        meta.kill();
        try { // a child agent saves n blocks while the plane is down, then dies by SIGKILL
            String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process p = new ProcessBuilder(javaBin, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                    System.getProperty("java.class.path"), OwingAgent.class.getName(), dir.resolve("restart-w").toString(),
                    meta.uri(), Long.toString(keys[0]), Integer.toString(n)).redirectErrorStream(true).start();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                List<String> out = new ArrayList<>();
                for (String line; (line = r.readLine()) != null && !line.startsWith("OWED "); ) {
                    out.add(line);
                }
                assertTrue(p.isAlive(), "the child saved its blocks: " + out);
                p.destroyForcibly(); // no shutdown hook, no close of the backlog log
                assertTrue(p.waitFor(10, TimeUnit.SECONDS));
                assertEquals(137, p.exitValue());
            } finally {
                p.destroyForcibly();
            }
        } finally {
            meta.start();
        }
        try (Arena a = Arena.ofShared()) {
            try (BlockStore store = agent("restart-w", "fullpath-restart").store()) {
                assertEquals(n, store.poolBacklogKeptFromLastRun());
                long end = System.currentTimeMillis() + 60_000;
                while (store.poolBacklogWritten() < n && System.currentTimeMillis() < end) {
                    Thread.sleep(100);
                }
                assertEquals(n, store.poolBacklogWritten(), "read back from the NVMe tier (the host pool starts empty)");
                assertEquals(0, store.poolBacklog());
            }
            try (BlockStore again = agent("restart-w", "fullpath-restart").store()) {
                assertEquals(0, again.poolBacklogKeptFromLastRun(), "written: not owed a second time");
            }
            try (BlockStore reader = agent("restart-r", "fullpath-restart").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, n, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < n; i++) {
                    assertEquals("pool", r.tier()[i], "block " + i);
                    assertEquals(-1, dst[i].mismatch(OwingAgent.block(a, keys[i])), "bytes of block " + i);
                }
            }
        }
    }

    /** A child JVM: saves blocks whose pool copies are owed (the plane is down), says so, and waits to be killed. */
    public static final class OwingAgent {
        public static void main(String[] args) throws Exception {
            long first = Long.parseLong(args[2]);
            int n = Integer.parseInt(args[3]);
            BlockStore store = AgentSetup.build(settings(Path.of(args[0]), args[1], "fullpath-restart"),
                    EventSink.NONE).store();
            Arena a = Arena.ofShared();
            for (int i = 0; i < n; i += 8) {
                long[] k = new long[8];
                MemorySegment[] src = new MemorySegment[8];
                for (int j = 0; j < 8; j++) {
                    k[j] = first + i + j;
                    src[j] = block(a, k[j]);
                }
                store.save(k, src, i == 0 ? null : first + i - 1);
                store.awaitWriteBehind(); // on NVMe, and the pool copy failed: owed
            }
            System.out.println("OWED " + store.poolBacklog());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }

        /** Bytes that depend on the key alone, so the parent can check them without the child's memory. */
        static MemorySegment block(Arena a, long key) {
            MemorySegment m = a.allocate(BLOCK, 4096);
            RestartTest.fill(m, key);
            return m;
        }
    }

    @Test
    void anAgentRegistersAgainWithAMetadataPlaneThatLostItsState() throws Exception {
        long[] keys = TestBlocks.keys(9_500, 4);
        try (Arena a = Arena.ofShared(); BlockStore store = agent("wiped-w", "fullpath-wiped").store()) {
            meta.kill();
            try (Stream<Path> files = Files.walk(meta.dir.resolve("data"))) { // its registry and index are gone
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
            meta.start();
            MemorySegment[] src = TestBlocks.random(a, 4, BLOCK, 31);
            store.save(keys, src, null);
            store.awaitWriteBehind();
            assertEquals(0, store.writeBehindFailures(), "the pool write registered the instance again and went on");
            try (BlockStore reader = agent("wiped-r", "fullpath-wiped").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, 4, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < 4; i++) {
                    assertEquals("pool", r.tier()[i], "block " + i);
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
            }
        }
    }

    @Test
    void aBlockRemovedWhileItsPoolWriteIsQueuedStaysRemoved() throws Exception {
        GlobalPoolTier pool = new GlobalPoolTier(new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(10)),
                "fullpath-rm", "default", 16, BLOCK, "tp0", 30, true, 1); // one pool thread: puts queue behind it
        pool.register("m");
        java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
        pool.faults(k -> {
            if (k == 7_000) { // the first put holds the only pool thread in its write phase
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return false;
        });
        try (Arena a = Arena.ofShared()) {
            var first = pool.put(new long[] {7_000}, TestBlocks.random(a, 1, BLOCK, 1), true);
            var second = pool.put(new long[] {7_001, 7_002}, TestBlocks.random(a, 2, BLOCK, 2), true);
            try {
                assertTrue(pool.remove(7_001), "a block on its way to the pool counts as removed");
            } finally {
                hold.countDown();
            }
            assertTrue(first.join()[0]);
            boolean[] ok = second.join();
            assertFalse(ok[0], "removed before its startWriteCache: not stored");
            assertTrue(ok[1]);
            boolean[] present = pool.present(new long[] {7_000, 7_001, 7_002});
            assertTrue(present[0]);
            assertFalse(present[1], "the late write did not bring the removed block back");
            assertTrue(present[2]);
        } finally {
            pool.close();
        }
    }
}
