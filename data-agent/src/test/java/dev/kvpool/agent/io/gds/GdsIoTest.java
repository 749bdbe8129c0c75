package dev.kvpool.agent.io.gds;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import dev.kvpool.agent.tier.GpuDevice;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * cuFile for real: GdsIo against the io_uring bounce path, byte for byte, on random blocks, both directions, in
 * batches (several submissions) and single ops. Runs only where a CUDA device and libcufile exist (the library from
 * {@code kvpool.agent.gds.library}, else the loader's search); skipped on the build machines. The slot file lies in
 * {@code kvpool.test.gds.dir} when set (a directory on the disk cuFile may register: bench/gpu/run.sh), else in a
 * temporary directory.
 */
class GdsIoTest {
    static final int SLOTS = 48;

    Gds.Driver driver;
    Path dir;
    Arena arena;

    @BeforeEach
    void needsGpuAndCuFile() throws IOException {
        assumeTrue(GpuDevice.deviceCount() > 0, "no CUDA device here: GDS tests skipped");
        try {
            driver = Gds.system(CuFile.configuredLibrary()).driver();
        } catch (CuFile.Unavailable e) {
            assumeTrue(false, "cuFile unavailable here (" + e.getMessage() + "): GDS tests skipped");
        }
        String d = System.getProperty("kvpool.test.gds.dir");
        dir = d != null ? Files.createDirectories(Path.of(d)) : Files.createTempDirectory("gdsio");
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() throws IOException {
        if (arena != null) {
            arena.close();
        }
        if (dir != null) {
            Files.deleteIfExists(dir.resolve("gds-test.dat"));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {256 << 10, 2 << 20})
    void gdsMatchesTheIoUringBouncePathByteForByte(int block) throws IOException {
        Path file = dir.resolve("gds-test.dat");
        long fileBytes = 2L * SLOTS * block;
        BlockIo oracle = new FileChannelBlockIo(1);
        try (GpuDevice dev = new GpuDevice("gpu0", 0, SLOTS, block);
             BlockFile of = oracle.open(file, fileBytes)) {
            GpuMemory mem = dev.memory();
            int n = 20;
            MemorySegment src = random(n, block, block);
            // the blocks into GPU slots 0..n-1
            try (GpuMemory.Copier c = mem.copier()) {
                for (int i = 0; i < n; i++) {
                    c.toGpu((long) i * block, src.asSlice((long) i * block, block));
                }
                c.sync();
            }
            long[] gpuA = offsets(n, 0, block), fileA = scattered(n, 0, block), fileB = scattered(n, SLOTS, block);
            long[] gpuB = offsets(n, SLOTS - n, block); // slots n.. hold nothing yet: read back into them
            long[] lens = new long[n];
            Arrays.fill(lens, block);
            try (GpuFileIo gds = driver.open(mem, 8); // 20 ops = 3 submissions
                 GpuFileIo bounce = new BounceIo(mem, IoUringBlockIo.bestAvailable(16, true), 32L << 20);
                 GpuFileIo.File gf = gds.open(file); GpuFileIo.File bf = bounce.open(file)) {
                System.out.printf("[GdsIoTest] %d KiB blocks: cuFile %s mode %s, bounce via %s%n", block >> 10,
                        driver.version(), gds.mode(), ((BounceIo) bounce).ioEngine());
                // GPU → file: cuFile into region A, bounce into region B; both hold the source
                assertArrayEquals(lens, gds.transfer(false, gf, fileA, gpuA, block), "cuFile batch write");
                assertArrayEquals(lens, bounce.transfer(false, bf, fileB, gpuA, block), "bounce write");
                for (int i = 0; i < n; i++) {
                    MemorySegment s = src.asSlice((long) i * block, block);
                    assertEquals(-1, read(oracle, of, fileA[i], block).mismatch(s), "cuFile write, op " + i);
                    assertEquals(-1, read(oracle, of, fileB[i], block).mismatch(s), "bounce write, op " + i);
                }
                // file → GPU: region B through cuFile into slots gpuB, then region A through bounce over them
                // reversed; each time the GPU's bytes come back to the host and are compared with the source
                assertArrayEquals(lens, gds.transfer(true, gf, fileB, gpuB, block), "cuFile batch read");
                assertGpu(mem, gpuB, src, block, "cuFile read");
                long[] gpuBr = gpuB.clone();
                for (int i = 0; i < n / 2; i++) {
                    long t = gpuBr[i];
                    gpuBr[i] = gpuBr[n - 1 - i];
                    gpuBr[n - 1 - i] = t;
                }
                clearGpu(mem, gpuB, block);
                assertArrayEquals(lens, bounce.transfer(true, bf, fileA, gpuBr, block), "bounce read");
                assertGpu(mem, gpuBr, src, block, "bounce read");
                // single ops: cuFileRead / cuFileWrite
                clearGpu(mem, gpuB, block);
                long[] one = {block};
                assertArrayEquals(one, gds.transfer(true, gf, new long[] {fileA[3]}, new long[] {gpuB[0]}, block));
                assertGpu(mem, new long[] {gpuB[0]}, src.asSlice(3L * block, block), block, "cuFileRead");
                assertArrayEquals(one, gds.transfer(false, gf, new long[] {fileB[0]}, new long[] {gpuA[5]}, block));
                assertEquals(-1, read(oracle, of, fileB[0], block).mismatch(src.asSlice(5L * block, block)),
                        "cuFileWrite");
                System.out.printf("[GdsIoTest] batch API in use after the test: %s%n", ((GdsIo) gds).batching());
            }
        } finally {
            oracle.close();
        }
    }

    MemorySegment random(int n, int block, long seed) {
        MemorySegment m = arena.allocate((long) n * block, 4096);
        Random r = new Random(seed);
        for (long o = 0; o < m.byteSize(); o += 8) {
            m.set(ValueLayout.JAVA_LONG, o, r.nextLong());
        }
        return m;
    }

    static long[] offsets(int n, int firstSlot, int block) {
        long[] o = new long[n];
        for (int i = 0; i < n; i++) {
            o[i] = (long) (firstSlot + i) * block;
        }
        return o;
    }

    /** n distinct slots of a region of SLOTS slots starting at {@code base}, not in order. */
    static long[] scattered(int n, int base, int block) {
        long[] o = new long[n];
        for (int i = 0; i < n; i++) {
            o[i] = (long) (base + (i * 7) % SLOTS) * block;
        }
        return o;
    }

    MemorySegment read(BlockIo io, BlockFile f, long off, int block) {
        MemorySegment b = arena.allocate(block, 4096);
        assertEquals(block, io.execute(f, List.of(BlockIo.Op.read(off, b)))[0]);
        return b;
    }

    void assertGpu(GpuMemory mem, long[] gpuOffs, MemorySegment src, int block, String what) {
        MemorySegment back = arena.allocate(block, 4096);
        try (GpuMemory.Copier c = mem.copier()) {
            for (int i = 0; i < gpuOffs.length; i++) {
                c.toHost(gpuOffs[i], back);
                c.sync();
                assertEquals(-1, back.mismatch(src.asSlice((long) i * block, block)), what + ", op " + i);
            }
        }
    }

    void clearGpu(GpuMemory mem, long[] gpuOffs, int block) {
        MemorySegment zero = arena.allocate(block, 4096);
        try (GpuMemory.Copier c = mem.copier()) {
            for (long o : gpuOffs) {
                c.toGpu(o, zero);
            }
            c.sync();
        }
    }
}
