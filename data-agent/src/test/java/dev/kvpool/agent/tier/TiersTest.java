package dev.kvpool.agent.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.io.uring.IoUring;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Host pool and NVMe tiers: round trips, checksums, eviction, failed writes. */
class TiersTest {
    static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    static BlockIo io(String engine) {
        return engine.equals("io_uring") && IoUring.unavailableReason() == null ? new IoUringBlockIo(8)
                : new FileChannelBlockIo(4);
    }

    @Test
    void hostPoolRoundTripAndEviction() {
        List<long[]> evicted = new ArrayList<>();
        try (Arena a = Arena.ofShared();
             PooledTier host = PooledTier.of("host", BlockEvent.CPU, BLOCK,
                     List.of(new MemoryDevice("h0", 8, BLOCK), new MemoryDevice("h1", 8, BLOCK)), new double[] {1, 1})) {
            host.onEvict(evicted::add);
            MemorySegment[] src = TestBlocks.random(a, 16, BLOCK, 1);
            long[] keys = TestBlocks.keys(100, 16);
            boolean[] ok = host.put(keys, src, false).join();
            for (boolean b : ok) {
                assertTrue(b);
            }
            assertArrayEquals(new long[] {8, 8}, host.blocksPerDevice());
            MemorySegment[] dst = TestBlocks.empty(a, 16, BLOCK);
            boolean[] hit = host.get(keys, dst).join();
            for (int i = 0; i < 16; i++) {
                assertTrue(hit[i]);
                assertEquals(-1, dst[i].mismatch(src[i]));
            }
            // full: 4 more evict the 4 least recently used
            host.get(TestBlocks.keys(104, 12), TestBlocks.empty(a, 12, BLOCK)).join(); // 100..103 are now oldest
            assertTrue(host.put(TestBlocks.keys(500, 4), TestBlocks.random(a, 4, BLOCK, 2), false).join()[3]);
            assertEquals(4, evicted.stream().mapToInt(e -> e.length).sum());
            for (long k = 100; k < 104; k++) {
                assertFalse(host.contains(k));
            }
            assertTrue(host.contains(104));
        }
    }

    @Test
    void corruptedHostBlockIsAMissNeverReturned() {
        try (Arena a = Arena.ofShared()) {
            MemoryDevice d = new MemoryDevice("h0", 4, BLOCK);
            try (PooledTier host = PooledTier.of("host", BlockEvent.CPU, BLOCK, List.of(d), new double[] {1})) {
                MemorySegment[] src = TestBlocks.random(a, 2, BLOCK, 3);
                host.put(new long[] {1, 2}, src, false).join();
                d.region().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 100, (byte) (d.region().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 100) ^ 1));
                d.region().set(java.lang.foreign.ValueLayout.JAVA_BYTE, BLOCK + 5, (byte) ~d.region().get(java.lang.foreign.ValueLayout.JAVA_BYTE, BLOCK + 5));
                boolean[] hit = host.get(new long[] {1, 2}, TestBlocks.empty(a, 2, BLOCK)).join();
                assertFalse(hit[0]);
                assertFalse(hit[1]);
                assertEquals(2, host.checksumFailures());
                assertFalse(host.contains(1), "a corrupt block is dropped from the index");
            }
        }
    }

    /**
     * The GPU tier's trust model ({@code kvpool.agent.gpu.verify=false}): a put keeps the CRC32C it is given, never
     * recomputed, and a load does not check it; what that gives up is shown too (a flip in the tier's own memory is
     * returned). With verify back on, both the flipped block and the one given a wrong CRC32C are misses.
     */
    @Test
    void unverifiedTierKeepsTheGivenCrcAndChecksOnlyWhenVerifyIsOn() {
        try (Arena a = Arena.ofShared()) {
            MemoryDevice d = new MemoryDevice("gpu0-host", 4, BLOCK);
            try (PooledTier gpu = PooledTier.of("gpu", BlockEvent.GPU, BLOCK, List.of(d), new double[] {1})) {
                gpu.verifyLoads(false);
                MemorySegment[] src = TestBlocks.random(a, 3, BLOCK, 31);
                long[] keys = {1, 2, 3};
                int[] crcs = {Checksums.crc32c(src[0]), Checksums.crc32c(src[1]) ^ 1, Checksums.crc32c(src[2])};
                for (boolean b : gpu.put(keys, src, true, crcs).join()) {
                    assertTrue(b);
                }
                MemorySegment[] dst = TestBlocks.empty(a, 3, BLOCK);
                boolean[] hit = gpu.get(keys, dst).join();
                for (int i = 0; i < 3; i++) {
                    assertTrue(hit[i], "block " + i + ": not checked, returned");
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
                MemorySegment victim = d.slotMemory(findSlot(d, src[0]));
                victim.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 100, (byte) ~victim.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 100));
                hit = gpu.get(keys, dst).join();
                assertTrue(hit[0], "unverified: a flip in the tier's own memory is not caught (what gpu.verify=false gives up)");
                assertEquals(100, dst[0].mismatch(src[0]));
                assertEquals(0, gpu.checksumFailures());

                gpu.verifyLoads(true);
                hit = gpu.get(keys, TestBlocks.empty(a, 3, BLOCK)).join();
                assertFalse(hit[0], "verified: the flipped block is a miss");
                assertFalse(hit[1], "the CRC32C given at put was kept as given (not recomputed from the bytes)");
                assertTrue(hit[2]);
                assertEquals(2, gpu.checksumFailures());
                assertFalse(gpu.contains(1));
                assertFalse(gpu.contains(2));
            }
        }
    }

    /**
     * With {@code placeBatchesInRuns} a put's blocks sit in one stretch of adjacent slots per device (so copies out of
     * the tier merge into runs), also once the tier is full and evicts; interleaved without it.
     */
    @Test
    void batchesPlacedInRunsSitInAdjacentSlots() {
        try (Arena a = Arena.ofShared();
             PooledTier grouped = PooledTier.of("host", BlockEvent.CPU, BLOCK,
                     List.of(new MemoryDevice("h0", 16, BLOCK), new MemoryDevice("h1", 16, BLOCK)), new double[] {1, 1});
             PooledTier plain = PooledTier.of("host", BlockEvent.CPU, BLOCK,
                     List.of(new MemoryDevice("h0", 16, BLOCK), new MemoryDevice("h1", 16, BLOCK)), new double[] {1, 1})) {
            grouped.placeBatchesInRuns(true);
            for (int round = 0; round < 3; round++) { // the third evicts the first
                MemorySegment[] src = TestBlocks.random(a, 16, BLOCK, 50 + round);
                long[] keys = TestBlocks.keys(100 + 16L * round, 16);
                for (boolean b : grouped.put(keys, src, false).join()) {
                    assertTrue(b);
                }
                assertEquals(1, breaks(grouped, keys), "round " + round + ": one stretch per device");
                MemorySegment[] dst = TestBlocks.empty(a, 16, BLOCK);
                boolean[] hit = grouped.get(keys, dst).join();
                for (int i = 0; i < 16; i++) {
                    assertTrue(hit[i]);
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
            }
            assertArrayEquals(new long[] {16, 16}, grouped.blocksPerDevice());
            long[] keys = TestBlocks.keys(1, 16);
            plain.put(keys, TestBlocks.random(a, 16, BLOCK, 60), false).join();
            assertEquals(15, breaks(plain, keys), "bandwidth placement alone interleaves the devices");
        }
    }

    /** How often a key's slot memory does not follow the previous key's. */
    private static int breaks(PooledTier t, long[] keys) {
        Object[] handles = new Object[keys.length];
        MemorySegment[] mem = t.pinMemory(keys, handles);
        int n = 0;
        for (int i = 1; i < keys.length; i++) {
            n += mem[i].address() == mem[i - 1].address() + BLOCK ? 0 : 1;
        }
        t.release(handles);
        return n;
    }

    /** A batch over twice the pipeline part size goes as several device requests; every part checksummed. */
    @Test
    void bigBatchGoesInPartsAndEveryPartIsVerified() {
        int bs = 2 << 20;
        int n = 48; // 96 MiB: three 32 MiB parts
        try (Arena a = Arena.ofShared()) {
            MemoryDevice d = new MemoryDevice("h0", 64, bs);
            try (PooledTier host = PooledTier.of("host", BlockEvent.CPU, bs, List.of(d), new double[] {1})) {
                MemorySegment[] src = TestBlocks.random(a, n, bs, 8);
                long[] keys = TestBlocks.keys(1, n);
                for (boolean b : host.put(keys, src, false).join()) {
                    assertTrue(b);
                }
                // corrupt one block of the last part in place
                MemorySegment victim = d.slotMemory(findSlot(d, src[45]));
                victim.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 7, (byte) ~victim.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 7));
                MemorySegment[] dst = TestBlocks.empty(a, n, bs);
                boolean[] hit = host.get(keys, dst).join();
                for (int i = 0; i < n; i++) {
                    assertEquals(i != 45, hit[i], "block " + i);
                    if (i != 45) {
                        assertEquals(-1, dst[i].mismatch(src[i]), "block " + i);
                    }
                }
                assertEquals(1, host.checksumFailures());
            }
        }
    }

    private static long findSlot(MemoryDevice d, MemorySegment content) {
        for (long s = 0; s < d.slotCount(); s++) {
            if (d.slotMemory(s).mismatch(content) == -1) {
                return s;
            }
        }
        throw new AssertionError("block not found in device memory");
    }

    @ParameterizedTest
    @ValueSource(strings = {"io_uring", "filechannel"})
    void nvmeRoundTripAndOnDiskCorruption(String engine) throws Exception {
        try (Arena a = Arena.ofShared()) {
            FileDevice d0 = new FileDevice("n0", dir.resolve("d0"), 32, BLOCK, io(engine));
            FileDevice d1 = new FileDevice("n1", dir.resolve("d1"), 32, BLOCK, io(engine));
            try (PooledTier nvme = PooledTier.of("nvme", BlockEvent.DISK, BLOCK, List.of(d0, d1), new double[] {1, 3})) {
                MemorySegment[] src = TestBlocks.random(a, 20, BLOCK, 4);
                long[] keys = TestBlocks.keys(1, 20);
                boolean[] ok = nvme.put(keys, src, true).join();
                for (boolean b : ok) {
                    assertTrue(b);
                }
                assertArrayEquals(new long[] {5, 15}, nvme.blocksPerDevice(), "placed 1:3 by bandwidth");
                MemorySegment[] dst = TestBlocks.empty(a, 20, BLOCK);
                boolean[] hit = nvme.get(keys, dst).join();
                for (int i = 0; i < 20; i++) {
                    assertTrue(hit[i]);
                    assertEquals(-1, dst[i].mismatch(src[i]), "block " + i);
                }
                // flip one byte of every block in device 0's slot file behind the agent's back
                try (FileChannel ch = FileChannel.open(d0.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    for (long s = 0; s < 32; s++) {
                        ByteBuffer b = ByteBuffer.allocate(1);
                        ch.read(b, s * BLOCK + 7);
                        b.flip();
                        byte v = b.get();
                        ch.write(ByteBuffer.wrap(new byte[] {(byte) (v ^ 0x40)}), s * BLOCK + 7);
                    }
                }
                hit = nvme.get(keys, TestBlocks.empty(a, 20, BLOCK)).join();
                int hits = 0;
                for (boolean h : hit) {
                    hits += h ? 1 : 0;
                }
                assertEquals(15, hits, "the 5 blocks on the corrupted device are misses");
                assertEquals(5, nvme.checksumFailures());
            }
        }
    }

    /** A device whose writes fail for some slots after writing half the bytes. */
    static final class HalfFailingDevice implements Device {
        final MemoryDevice inner = new MemoryDevice("bad", 16, BLOCK);
        volatile boolean fail = true;

        @Override
        public String id() {
            return "bad";
        }

        @Override
        public long slotCount() {
            return 16;
        }

        @Override
        public int slotBytes() {
            return BLOCK;
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            if (write && fail) {
                MemorySegment[] half = new MemorySegment[bufs.length];
                for (int i = 0; i < bufs.length; i++) {
                    half[i] = bufs[i].asSlice(0, BLOCK / 2);
                }
                inner.io(true, slots, half);
                return new boolean[slots.length];
            }
            return inner.io(write, slots, bufs);
        }
    }

    @Test
    void aWriteThatFailsMidwayIsNeverVisible() {
        HalfFailingDevice dev = new HalfFailingDevice();
        try (Arena a = Arena.ofShared();
             PooledTier t = PooledTier.of("nvme", BlockEvent.DISK, BLOCK, List.of(dev), new double[] {1})) {
            boolean[] ok = t.put(new long[] {9}, TestBlocks.random(a, 1, BLOCK, 5), false).join();
            assertFalse(ok[0]);
            assertFalse(t.contains(9));
            assertFalse(t.get(new long[] {9}, TestBlocks.empty(a, 1, BLOCK)).join()[0]);
            dev.fail = false;
            assertTrue(t.put(new long[] {9}, TestBlocks.random(a, 1, BLOCK, 6), false).join()[0]);
            assertTrue(t.get(new long[] {9}, TestBlocks.empty(a, 1, BLOCK)).join()[0]);
        }
    }

    @Test
    void fileLocationParsesMetadataPlaneUris() {
        var l = GlobalPoolTier.FileLocation.parse("file://nfs_01/tmp/nfs/inst/tp0/slab_0000000a?blkid=3&size=65536");
        assertEquals(Path.of("/tmp/nfs/inst/tp0/slab_0000000a"), l.path());
        assertEquals(3 * 65536L, l.offset());
        var one = GlobalPoolTier.FileLocation.parse("file://nfs_01/data/x/slab_00000001?size=4096");
        assertEquals(0, one.offset());
        // a peer's text: slot numbers and sizes bounded, given once, the slot's byte range fitting a long
        for (String bad : new String[] {"file://nfs_01/d/x/slab_1?blkid=-1&size=4096",
                "file://nfs_01/d/x/slab_1?blkid=+1&size=4096", "file://nfs_01/d/x/slab_1?blkid=1&size=",
                "file://nfs_01/d/x/slab_1?blkid=2251799813685248&size=4096", // x 4096 = 2^63
                "file://nfs_01/d/x/slab_1?blkid=9223372036854775807&size=1", // its end is past Long.MAX_VALUE
                "file://nfs_01/d/x/slab_1?blkid=18446744073709551616&size=4096", // 2^64
                "file://nfs_01/d/x/slab_1?blkid=1&size=4096&size=8192", "file://nfs_01/d/x/slab_1?blkid=1",
                "file://nfs_01/d/x/slab_1?blkid=1e400&size=4096", "file://nfs_01?blkid=1&size=4096",
                "file://nfs_01/d/x/sl\u0000ab?size=4096", "http://h/d/x/slab_1?size=4096"}) {
            assertThrows(IllegalArgumentException.class, () -> GlobalPoolTier.FileLocation.parse(bad), bad);
        }
        var last = GlobalPoolTier.FileLocation.parse("file://nfs_01/d/x/slab_1?blkid=2251799813685246&size=4096");
        assertEquals(2251799813685246L * 4096, last.offset(), "the last slot whose end fits a long");
    }
}
