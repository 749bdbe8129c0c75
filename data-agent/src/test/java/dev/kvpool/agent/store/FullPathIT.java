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
import dev.kvpool.testing.MutableClock;
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
import java.time.Instant;
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
class FullPathIT {
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
        return AgentSetup.build(settings(dir.resolve(name), meta.uri(), instance, meta.storageRoot), events::add);
    }

    static AgentSetup.Settings settings(Path home, String metaUri, String instance, Path storageRoot) {
        return AgentSetup.Settings.defaults(home).withBlock(BLOCK, 1, 4L << 20)
                .withNvme(List.of(home.resolve("nvme0")), 8L << 20).withPool(metaUri, instance)
                .withPoolRoots(List.of(storageRoot)).withIo("auto", 4, List.of(1000.0), List.of());
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
                    meta.uri(), Long.toString(keys[0]), Integer.toString(n), meta.storageRoot.toString())
                    .redirectErrorStream(true).start();
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
            BlockStore store = AgentSetup.build(settings(Path.of(args[0]), args[1], "fullpath-restart",
                    Path.of(args[4])), EventSink.NONE).store();
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
            RestartIT.fill(m, key);
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

    /**
     * A slot can end up holding another block's bytes and checksum: a writer that went on past its session's deadline
     * into a slot the plane had handed out again, or a reader slower than its lease. The checksum covers the key, so
     * the reader asking for the slot's rightful block gets a miss, not the other block's bytes.
     */
    @Test
    void aSlotHoldingAnotherBlocksBytesIsAMiss() throws Exception {
        long mine = 9_100, other = 9_101;
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 2, BLOCK, 14);
            try (BlockStore writer = agent("w5", "misplaced").store()) {
                writer.save(new long[] {mine, other}, src, null);
                writer.awaitWriteBehind();
            }
            var client = new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(5));
            var locs = client.getCacheLocation(GetCacheLocationRequest.newBuilder().setTraceId("t")
                    .setInstanceId("misplaced").setQueryType(QueryType.QT_BATCH_GET).addBlockKeys(mine)
                    .addBlockKeys(other).build()).getLocationsList();
            GlobalPoolTier.FileLocation at = GlobalPoolTier.FileLocation.parse(locs.get(0).getLocationSpecs(0).getUri());
            GlobalPoolTier.FileLocation from = GlobalPoolTier.FileLocation.parse(locs.get(1).getLocationSpecs(0).getUri());
            // the other block's bytes and checksum record, as a late writer would leave them, in my slot
            copy(from.path(), from.offset(), at.path(), at.offset(), BLOCK);
            copy(sidecar(from.path()), from.blkid() * 8, sidecar(at.path()), at.blkid() * 8, 8);
            try (BlockStore reader = agent("r5", "misplaced").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, 2, BLOCK);
                BlockStore.LoadResult r = reader.load(new long[] {mine, other}, dst);
                assertFalse(r.found()[0], "my slot holds the other block: a miss");
                assertEquals(1, reader.pool().checksumFailures());
                assertTrue(r.found()[1]);
                assertEquals(-1, dst[1].mismatch(src[1]));
            }
        }
    }

    /** Slots checked by an agent from before the key joined the checksum ("KVC2": bytes only) still load. */
    @Test
    void aBlockWithAnOlderAgentsChecksumRecordStillLoads() throws Exception {
        long key = 9_200;
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 1, BLOCK, 15);
            try (BlockStore writer = agent("w6", "older").store()) {
                writer.save(new long[] {key}, src, null);
                writer.awaitWriteBehind();
            }
            var client = new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(5));
            GlobalPoolTier.FileLocation fl = GlobalPoolTier.FileLocation.parse(client.getCacheLocation(
                    GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId("older")
                            .setQueryType(QueryType.QT_BATCH_GET).addBlockKeys(key).build())
                    .getLocations(0).getLocationSpecs(0).getUri());
            ByteBuffer record = ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(0x4B564332)
                    .putInt(dev.kvpool.agent.tier.Checksums.crc32c(src[0])).flip();
            try (FileChannel ch = FileChannel.open(sidecar(fl.path()), StandardOpenOption.WRITE)) {
                ch.write(record, fl.blkid() * 8);
            }
            try (BlockStore reader = agent("r6", "older").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, 1, BLOCK);
                assertTrue(reader.load(new long[] {key}, dst).found()[0]);
                assertEquals(-1, dst[0].mismatch(src[0]));
                assertEquals(0, reader.pool().checksumFailures());
            }
        }
    }

    /** When the plane frees a slab's last slot it deletes the slab, and the agents' checksum records with it. */
    @Test
    void aSlabAndItsChecksumRecordsGoWhenItsBlocksAreRemoved() throws Exception {
        long[] keys = TestBlocks.keys(9_300, 8); // one slab of 8 slots
        try (Arena a = Arena.ofShared()) {
            try (BlockStore writer = agent("w7", "swept").store()) {
                writer.save(keys, TestBlocks.random(a, 8, BLOCK, 16), null);
                writer.awaitWriteBehind();
            }
            Path inst = meta.storageRoot.resolve("swept");
            List<String> before = filesUnder(inst);
            assertTrue(before.contains("slab_00000000") && before.contains("slab_00000000.crc"), "files: " + before);
            var client = new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(5));
            var removed = client.removeCache(dev.kvpool.api.proto.meta.RemoveCacheRequest.newBuilder().setTraceId("t")
                    .setInstanceId("swept").addAllBlockKeys(Arrays.stream(keys).boxed().toList()).build());
            assertEquals(dev.kvpool.api.proto.meta.ErrorCode.OK, removed.getHeader().getStatus().getCode());
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30); // after the group's reader lease
            while (!filesUnder(inst).isEmpty() && System.nanoTime() < end) {
                Thread.sleep(100);
            }
            assertEquals(List.of(), filesUnder(inst), "slab and checksum records deleted");
        }
    }

    static List<String> filesUnder(Path dir) throws Exception {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).map(f -> f.getFileName().toString()).sorted().toList();
        }
    }

    static Path sidecar(Path slab) {
        return dev.kvpool.api.storage.SlabFiles.checksums(slab);
    }

    static void copy(Path from, long fromPos, Path to, long toPos, int n) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(n);
        try (FileChannel in = FileChannel.open(from, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(to, StandardOpenOption.WRITE)) {
            while (b.hasRemaining() && in.read(b, fromPos + b.position()) >= 0) {
                // until the n bytes are in
            }
            b.flip();
            while (b.hasRemaining()) {
                out.write(b, toPos + b.position());
            }
        }
    }

    /**
     * Past its session's deadline the plane may hand a slot to another writer, so blocks the agent has not started
     * writing when the deadline nears are not written at all, and reported failed.
     */
    @Test
    void blocksNotYetWrittenWhenTheSessionNearsItsDeadlineAreLeftOut() throws Exception {
        // a 5-s session: writing stops 1 s before its end; the first block's write stalls past that on the agent's
        // clock (the plane's own deadline, in real time, is still ahead when the finish arrives)
        MutableClock clock = new MutableClock(Instant.parse("2026-11-28T06:00:00Z"));
        GlobalPoolTier pool = new GlobalPoolTier(new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(10)),
                "fullpath-late", "default", 16, BLOCK, "tp0", 5, true, 1, List.of(meta.storageRoot), clock);
        pool.register("m");
        pool.faults(k -> {
            if (k == 8_000) {
                clock.advance(4_150); // past the cut-off (4 s)
            }
            return false;
        });
        try (Arena a = Arena.ofShared()) {
            long[] keys = {8_000, 8_001, 8_002, 8_003};
            boolean[] ok = pool.put(keys, TestBlocks.random(a, 4, BLOCK, 3), false).join();
            assertTrue(ok[0], "the block whose write had begun is finished in time");
            for (int i = 1; i < 4; i++) {
                assertFalse(ok[i], "block " + keys[i] + " not written after the cut-off");
            }
            assertEquals(3, pool.lateSkips());
            assertEquals(List.of(true, false, false, false), toList(pool.present(keys)));
        } finally {
            pool.close();
        }
    }

    /**
     * Blocks left out of a pool write because its session neared its deadline are owed, not failed: the backlog
     * writer tries them again in a session of their own, and a reader on another node gets them from the pool.
     */
    @Test
    void poolBlocksLeftOutLateAreWrittenByALaterSession() throws Exception {
        long[] keys = TestBlocks.keys(8_100, 4);
        try (Arena a = Arena.ofShared(); BlockStore store = AgentSetup.build(settings(dir.resolve("late-retry-w"),
                meta.uri(), "fullpath-late-retry", meta.storageRoot).withWriteTimeout(5), events::add).store()) {
            java.util.concurrent.atomic.AtomicBoolean stalled = new java.util.concurrent.atomic.AtomicBoolean();
            store.pool().faults(k -> {
                if (k == keys[0] && stalled.compareAndSet(false, true)) {
                    try {
                        Thread.sleep(4_150); // past the first session's cut-off (4 s), once
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return false;
            });
            MemorySegment[] src = TestBlocks.random(a, 4, BLOCK, 5);
            assertTrue(store.save(keys, src, null)[3]);
            store.awaitWriteBehind();
            long end = System.currentTimeMillis() + 30_000;
            while (store.poolBacklogWritten() < 3 && System.currentTimeMillis() < end) {
                Thread.sleep(50);
            }
            assertEquals(3, store.pool().lateSkips(), "the first session left three blocks out");
            assertEquals(3, store.poolLateRetries());
            assertEquals(3, store.poolBacklogWritten(), "and a second one wrote them");
            assertEquals(0, store.writeBehindFailures(), "owed, not failed");
            assertEquals(List.of(true, true, true, true), toList(store.pool().present(keys)));
            try (BlockStore reader = agent("late-retry-r", "fullpath-late-retry").store()) {
                MemorySegment[] dst = TestBlocks.empty(a, 4, BLOCK);
                BlockStore.LoadResult r = reader.load(keys, dst);
                for (int i = 0; i < 4; i++) {
                    assertEquals("pool", r.tier()[i], "block " + i);
                    assertEquals(-1, dst[i].mismatch(src[i]), "bytes of block " + i);
                }
            }
        }
    }

    static List<Boolean> toList(boolean[] b) {
        List<Boolean> l = new ArrayList<>();
        for (boolean x : b) {
            l.add(x);
        }
        return l;
    }

    @Test
    void aBlockRemovedWhileItsPoolWriteIsQueuedStaysRemoved() throws Exception {
        GlobalPoolTier pool = new GlobalPoolTier(new KvcmHttpClient(URI.create(meta.uri()), Duration.ofSeconds(10)),
                "fullpath-rm", "default", 16, BLOCK, "tp0", 30, true, 1, // one pool thread: puts queue behind it
                List.of(meta.storageRoot));
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
