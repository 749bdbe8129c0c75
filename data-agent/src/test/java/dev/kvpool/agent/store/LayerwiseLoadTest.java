package dev.kvpool.agent.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.io.uring.IoUring;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.ForwardingDevice;
import dev.kvpool.agent.pool.Layout;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.FileDevice;
import dev.kvpool.agent.tier.MemoryDevice;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Layer-wise loads over real devices (host memory, a layered slot file): layers are told in order, each one's bytes
 * in place and correct when it is told (checked then, byte for byte), a layer that fails its check makes its block a
 * miss from that layer on, and layered blocks outlive a restart.
 */
class LayerwiseLoadTest {
    static final int BLOCK = 64 * 1024, LAYERS = 16, LAYER = BLOCK / LAYERS;
    static final Layout LAYERED = Layout.of("layered", LAYERS, BLOCK);
    static final long SLOTS = 64;

    @TempDir
    Path dir;

    static BlockIo io() {
        return IoUring.unavailableReason() == null ? new IoUringBlockIo(LAYERS * 8) : new FileChannelBlockIo(4);
    }

    /**
     * A device whose reads of layer 1 and later wait for a gate once armed: a layer told while the gate is shut was
     * told before any later layer could land.
     */
    static final class Gated extends ForwardingDevice {
        volatile CountDownLatch gate;

        Gated(Device inner) {
            super(inner);
        }

        /**
         * Host slots stay the write-behind's source; while the gate is armed they are not offered, so host layers
         * go through this device's reads (a direct copy could not be held back).
         */
        @Override
        public MemorySegment slotMemory(long slot) {
            return gate == null ? inner.slotMemory(slot) : null;
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            CountDownLatch g = gate;
            if (!write && g != null && Device.layerOf(slots[0]) >= 1) {
                try {
                    g.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return inner.io(write, slots, bufs);
        }
    }

    /** One layer per device batch: the worker must not fold later layers into layer 0's batch (the gate would hold it). */
    static PooledTier tier(String name, String medium, Device d, Layout layout, int opsPerBatch) {
        DeviceWorker w = new DeviceWorker(d, 4, 4096, 500_000, opsPerBatch);
        return new PooledTier(name, medium, BLOCK, List.of(d), new double[] {1}, List.of(w), layout);
    }

    static MemorySegment layer(MemorySegment block, int l) {
        return block.asSlice((long) l * LAYER, LAYER);
    }

    /** What a layer listener saw. */
    static final class Seen {
        final List<Integer> layers = new ArrayList<>();
        final List<int[]> missing = new ArrayList<>();
        final List<String> problems = new ArrayList<>();
    }

    @ParameterizedTest
    @ValueSource(strings = {"nvme", "host"})
    void layersAreToldInOrderEachInPlaceWhenTold(String gated) {
        int n = 6;
        try (Arena a = Arena.ofShared()) {
            MemoryDevice hostMem = new MemoryDevice("h0", SLOTS, BLOCK);
            FileDevice file = new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), null, LAYERS);
            Gated hostDev = new Gated(hostMem), nvmeDev = new Gated(file);
            // each device serves 3 of the blocks: 3 ops, one layer, per batch
            PooledTier host = tier("host", BlockEvent.CPU, hostDev, LAYERED, n / 2);
            PooledTier nvme = tier("nvme", BlockEvent.DISK, nvmeDev, LAYERED, n / 2);
            try (BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, EventSink.NONE)) {
                long[] keys = TestBlocks.keys(100, n);
                MemorySegment[] src = TestBlocks.random(a, n, BLOCK, 7);
                assertArrayEquals(new boolean[] {true, true, true, true, true, true}, store.save(keys, src, null));
                store.awaitWriteBehind();
                assertEquals(n, nvme.size());
                for (int i = 0; i < n; i += 2) {
                    assertTrue(host.remove(keys[i]), "even blocks only on NVMe now");
                }
                // blocks 0, 2, 4 from NVMe, 1, 3, 5 from host, and one no tier has
                long[] ask = {keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], 999};
                MemorySegment[] dst = TestBlocks.empty(a, ask.length, BLOCK);
                Gated g = gated.equals("nvme") ? nvmeDev : hostDev;
                CountDownLatch gate = new CountDownLatch(1);
                g.gate = gate;
                int[] servedBy = gated.equals("nvme") ? new int[] {0, 2, 4} : new int[] {1, 3, 5};
                Seen seen = new Seen();
                BlockStore.LoadResult res = store.loadLayerwise(ask, dst, (l, missing) -> {
                    seen.layers.add(l);
                    seen.missing.add(missing);
                    for (int i = 0; i < n; i++) { // every block's layer l is complete and correct now
                        if (layer(dst[i], l).mismatch(layer(src[i], l)) >= 0) {
                            seen.problems.add("layer " + l + " of block " + i + " not in place when told");
                        }
                    }
                    if (l == 0) {
                        for (int i : servedBy) { // the gated device has not moved layer 1 yet
                            if (layer(dst[i], 1).mismatch(layer(src[i], 1)) < 0) {
                                seen.problems.add("layer 1 of block " + i + " landed before layer 0 was told");
                            }
                        }
                        gate.countDown();
                    }
                });
                assertEquals(List.of(), seen.problems);
                List<Integer> order = new ArrayList<>();
                for (int l = 0; l < LAYERS; l++) {
                    order.add(l);
                    assertArrayEquals(new int[] {6}, seen.missing.get(l), "only the unknown key is missing");
                }
                assertEquals(order, seen.layers, "every layer once, in layer order");
                assertArrayEquals(new boolean[] {true, true, true, true, true, true, false}, res.found());
                assertEquals("nvme", res.tier()[0]);
                assertEquals("host", res.tier()[1]);
                for (int i = 0; i < n; i++) {
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
                assertTrue(host.contains(keys[0]), "NVMe hits are promoted into the host pool, as by a load");
            }
        }
    }

    @Test
    void aCorruptedLayerMakesItsBlockAMissFromThatLayerOn() throws Exception {
        int n = 4;
        try (Arena a = Arena.ofShared()) {
            FileDevice file = new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), null, LAYERS);
            PooledTier host = tier("host", BlockEvent.CPU, new MemoryDevice("h0", SLOTS, BLOCK), LAYERED, 64);
            PooledTier nvme = tier("nvme", BlockEvent.DISK, file, LAYERED, 64);
            try (BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, EventSink.NONE)) {
                long[] keys = TestBlocks.keys(10, n);
                MemorySegment[] src = TestBlocks.random(a, n, BLOCK, 9);
                store.save(keys, src, null);
                store.awaitWriteBehind();
                for (long k : keys) {
                    host.remove(k);
                }
                // the write-behind took slots 0..3 in key order (lowest free slot first): flip a byte of layer 5
                // of block 2, where the layered file keeps it (region 5, place 2)
                try (FileChannel ch = FileChannel.open(file.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    long at = (5 * SLOTS + 2) * LAYER + 100;
                    ByteBuffer b = ByteBuffer.allocate(1);
                    ch.read(b, at);
                    b.put(0, (byte) (b.get(0) ^ 0x40)).rewind();
                    ch.write(b, at);
                    ch.force(true);
                }
                MemorySegment[] dst = TestBlocks.empty(a, n, BLOCK);
                Seen seen = new Seen();
                BlockStore.LoadResult res = store.loadLayerwise(keys, dst, (l, missing) -> {
                    seen.missing.add(missing);
                    for (int i = 0; i < n; i++) {
                        boolean listed = java.util.Arrays.stream(missing).anyMatch(x -> x == 2) && i == 2;
                        if (!listed && layer(dst[i], l).mismatch(layer(src[i], l)) >= 0) {
                            seen.problems.add("layer " + l + " of block " + i + " told present with wrong bytes");
                        }
                    }
                });
                assertEquals(List.of(), seen.problems);
                for (int l = 0; l < LAYERS; l++) {
                    assertArrayEquals(l < 5 ? new int[0] : new int[] {2}, seen.missing.get(l), "layer " + l);
                }
                assertArrayEquals(new boolean[] {true, true, false, true}, res.found());
                assertEquals(1, nvme.checksumFailures());
                assertFalse(nvme.contains(keys[2]), "the corrupted block is dropped, as a corrupted block is");
                assertFalse(host.contains(keys[2]), "and not promoted");
                // the others whole again through a normal load
                BlockStore.LoadResult again = store.load(keys, TestBlocks.empty(a, n, BLOCK));
                assertArrayEquals(new boolean[] {true, true, false, true}, again.found());
            }
        }
    }

    /** A disk with one unreadable layer of one slot: every read covering it fails whole, as O_DIRECT reads do. */
    static final class BadSector extends ForwardingDevice {
        final long slot;
        final int layer;

        BadSector(Device inner, long slot, int layer) {
            super(inner);
            this.slot = slot;
            this.layer = layer;
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            boolean[] ok = new boolean[slots.length];
            for (int i = 0; i < slots.length; i++) {
                long from = Device.slotOf(slots[i]);
                boolean covers = !write && Device.layerOf(slots[i]) == layer && from <= slot
                        && slot < from + bufs[i].byteSize() / LAYER;
                ok[i] = !covers && inner.io(write, new long[] {slots[i]}, new MemorySegment[] {bufs[i]})[0];
            }
            return ok;
        }
    }

    @Test
    void anUnreadableLayerCostsItsBlockAloneNotTheRunReadWithIt() {
        int n = 4;
        try (Arena a = Arena.ofShared()) {
            FileDevice file = new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), null, LAYERS);
            PooledTier host = tier("host", BlockEvent.CPU, new MemoryDevice("h0", SLOTS, BLOCK), LAYERED, 64);
            PooledTier nvme = tier("nvme", BlockEvent.DISK, new BadSector(file, 2, 5), LAYERED, 64);
            try (BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, EventSink.NONE)) {
                long[] keys = TestBlocks.keys(20, n);
                MemorySegment[] src = TestBlocks.random(a, n, BLOCK, 13);
                store.save(keys, src, null);
                store.awaitWriteBehind();
                for (long k : keys) {
                    host.remove(k);
                }
                MemorySegment[] dst = TestBlocks.empty(a, n, BLOCK);
                List<int[]> missing = new ArrayList<>();
                BlockStore.LoadResult res = store.loadLayerwise(keys, dst, (l, m) -> missing.add(m));
                for (int l = 0; l < LAYERS; l++) { // slots 0..3 are read as one run per layer; layer 5 of slot 2 fails
                    assertArrayEquals(l < 5 ? new int[0] : new int[] {2}, missing.get(l), "layer " + l);
                }
                assertArrayEquals(new boolean[] {true, true, false, true}, res.found());
                for (int i : new int[] {0, 1, 3}) {
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
                assertEquals(1, nvme.ioFailures(), "one block's layer failed, not the run's four");
                assertEquals(0, nvme.checksumFailures());
            }
        }
    }

    @Test
    void aWholeBlockLoadChecksEveryLayerToo() throws Exception {
        try (Arena a = Arena.ofShared()) {
            FileDevice file = new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), null, LAYERS);
            try (PooledTier nvme = tier("nvme", BlockEvent.DISK, file, LAYERED, 64)) {
                MemorySegment[] src = TestBlocks.random(a, 2, BLOCK, 3);
                assertArrayEquals(new boolean[] {true, true}, nvme.put(new long[] {1, 2}, src, false).join());
                try (FileChannel ch = FileChannel.open(file.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), (15 * SLOTS + 1) * LAYER + 7); // last layer, slot 1
                    ch.force(true);
                }
                MemorySegment[] dst = TestBlocks.empty(a, 2, BLOCK);
                assertArrayEquals(new boolean[] {true, false}, nvme.get(new long[] {1, 2}, dst).join());
                assertEquals(-1, dst[0].mismatch(src[0]));
            }
        }
    }

    @Test
    void contiguousLayoutTellsEveryLayerOnceTheBlocksAreIn() {
        Layout contiguous = Layout.of("contiguous", LAYERS, BLOCK);
        try (Arena a = Arena.ofShared()) {
            PooledTier host = tier("host", BlockEvent.CPU, new MemoryDevice("h0", SLOTS, BLOCK), contiguous, 64);
            PooledTier nvme = tier("nvme", BlockEvent.DISK, new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), null),
                    contiguous, 64);
            try (BlockStore store = new BlockStore(BLOCK, 16, null, host, nvme, null, EventSink.NONE)) {
                MemorySegment[] src = TestBlocks.random(a, 2, BLOCK, 5);
                store.save(new long[] {1, 2}, src, null);
                store.awaitWriteBehind();
                host.remove(1);
                MemorySegment[] dst = TestBlocks.empty(a, 2, BLOCK);
                List<String> problems = new ArrayList<>();
                int[] told = {0};
                store.loadLayerwise(new long[] {1, 2}, dst, (l, missing) -> {
                    if (l != told[0]++ || missing.length != 0 || dst[0].mismatch(src[0]) >= 0
                            || dst[1].mismatch(src[1]) >= 0) {
                        problems.add("layer " + l + ": " + java.util.Arrays.toString(missing));
                    }
                });
                assertEquals(LAYERS, told[0]);
                assertEquals(List.of(), problems);
            }
        }
    }

    @Test
    void layeredBlocksOutliveARestartAndAnotherLayoutStartsEmpty() {
        long[] keys = TestBlocks.keys(40, 5);
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = TestBlocks.random(a, 5, BLOCK, 11);
            try (PooledTier nvme = tier("nvme", BlockEvent.DISK,
                    new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), "space", LAYERS), LAYERED, 64)) {
                nvme.put(keys, src, false).join();
            }
            try (PooledTier nvme = tier("nvme", BlockEvent.DISK,
                    new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), "space", LAYERS), LAYERED, 64)) {
                assertEquals(5, nvme.size(), "kept across the restart");
                MemorySegment[] dst = TestBlocks.empty(a, 5, BLOCK);
                List<CompletableFutureResult> per = new ArrayList<>();
                for (var f : nvme.getLayers(keys, dst)) {
                    per.add(new CompletableFutureResult(f.join()));
                }
                for (CompletableFutureResult r : per) {
                    assertArrayEquals(new boolean[] {true, true, true, true, true}, r.ok());
                }
                for (int i = 0; i < 5; i++) {
                    assertEquals(-1, dst[i].mismatch(src[i]));
                }
            }
            try (PooledTier nvme = tier("nvme", BlockEvent.DISK,
                    new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), "space", 8), Layout.of("layered", 8, BLOCK), 64)) {
                assertEquals(0, nvme.size(), "a table of another layer count is not trusted");
                assertTrue(nvme.devices().get(0).slotTable().opened().contains("16 layers"),
                        nvme.devices().get(0).slotTable().opened());
            }
            try (PooledTier nvme = tier("nvme", BlockEvent.DISK,
                    new FileDevice("nvme0", dir, SLOTS, BLOCK, io(), "space"), Layout.CONTIGUOUS, 64)) {
                assertEquals(0, nvme.size(), "nor one of another layout");
            }
        }
    }

    record CompletableFutureResult(boolean[] ok) {
    }

    @Test
    void settingsAreCheckedNamingTheSetting() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.of("layered", 3, BLOCK)).getMessage()
                .startsWith("kvpool.agent.layers: "));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.of("layered", 32, BLOCK)).getMessage()
                .startsWith("kvpool.agent.layout: "), "2 KiB layers cannot be read alone with O_DIRECT");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.of("striped", 4, BLOCK)).getMessage()
                .startsWith("kvpool.agent.layout: "));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.of("contiguous", 0, BLOCK)).getMessage()
                .startsWith("kvpool.agent.layers: "));
        assertEquals(new Layout(32, false), Layout.of("contiguous", 32, BLOCK), "contiguous: any divisor");
        assertThrows(IllegalArgumentException.class, () -> new PooledTier("nvme", BlockEvent.DISK, BLOCK,
                List.of(new FileDevice("nvme0", dir, SLOTS, BLOCK, new FileChannelBlockIo(2), null, LAYERS)),
                new double[] {1}, List.of(), Layout.CONTIGUOUS), "a layered device in a tier that is not");
    }
}
