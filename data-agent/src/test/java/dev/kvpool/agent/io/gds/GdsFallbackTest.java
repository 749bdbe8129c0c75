package dev.kvpool.agent.io.gds;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.io.uring.IoUringBlockIo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GPU ↔ NVMe path's choice and fallback, everywhere: cuFile's environment is faked (missing library, driver
 * that does not open, refused registrations, a first transfer that fails or comes back short), the bounce path is
 * real (io_uring where it works, O_DIRECT, into a host region standing in for GPU memory), and every transfer that
 * the caller is told succeeded is checked byte for byte against the slot file read with FileChannel + O_DIRECT.
 */
class GdsFallbackTest {
    static final int BLOCK = 64 * 1024;
    static final int SLOTS = 64;

    @TempDir
    Path dir;
    Arena arena;
    MemorySegment region;
    GpuMemory gpu;
    Path file;
    BlockIo oracle;
    BlockFile oracleFile;

    @BeforeEach
    void setUp() throws IOException {
        arena = Arena.ofShared();
        region = arena.allocate((long) SLOTS * BLOCK, 4096);
        GpuMemory host = GpuMemory.ofHost("gpu0", region);
        gpu = new GpuMemory() { // host memory that claims to be CUDA device 0, so the choice goes past "no GPU"
            public String id() {
                return "gpu0";
            }

            public int ordinal() {
                return 0;
            }

            public long address() {
                return host.address();
            }

            public long bytes() {
                return host.bytes();
            }

            public void bind() {
            }

            public Copier copier() {
                return host.copier();
            }

            public boolean pin(MemorySegment m) {
                return true;
            }

            public void unpin(MemorySegment m) {
            }
        };
        file = dir.resolve("kvpool-slots.dat");
        oracle = new FileChannelBlockIo(1);
        oracleFile = oracle.open(file, (long) SLOTS * BLOCK);
        MemorySegment b = arena.allocate(BLOCK, 4096);
        Random r = new Random(7);
        byte[] bytes = new byte[BLOCK];
        for (int s = 0; s < SLOTS; s++) {
            r.nextBytes(bytes);
            MemorySegment.copy(bytes, 0, b, ValueLayout.JAVA_BYTE, 0, BLOCK);
            assertEquals(BLOCK, oracle.execute(oracleFile, List.of(BlockIo.Op.write((long) s * BLOCK, b)))[0]);
        }
    }

    @AfterEach
    void tearDown() {
        oracleFile.close();
        oracle.close();
        arena.close();
    }

    Supplier<GpuFileIo> bounce() {
        return () -> new BounceIo(gpu, IoUringBlockIo.bestAvailable(8, true), 4L * BLOCK); // 2 ops per half
    }

    /** The slot file's bytes at {@code off}. */
    MemorySegment onDisk(long off) {
        MemorySegment b = arena.allocate(BLOCK, 4096);
        assertEquals(BLOCK, oracle.execute(oracleFile, List.of(BlockIo.Op.read(off, b)))[0]);
        return b;
    }

    void assertGpuHoldsFile(long[] fileOffs, long[] gpuOffs) {
        for (int i = 0; i < fileOffs.length; i++) {
            assertEquals(-1, region.asSlice(gpuOffs[i], BLOCK).mismatch(onDisk(fileOffs[i])), "op " + i);
        }
    }

    /** A cuFile path that is really the bounce path, with the failures cuFile can have. */
    final class FakeCuFile implements GpuFileIo {
        final GpuFileIo inner = bounce().get();
        boolean refuseOpen;
        int shortTransfers; // this many transfers come back short (first op only)
        final AtomicInteger transfers = new AtomicInteger();
        boolean closed;

        public String mode() {
            return "compat";
        }

        public GpuMemory gpu() {
            return gpu;
        }

        public File open(Path p) throws IOException {
            if (refuseOpen) {
                throw new IOException(p + ": cuFileHandleRegister(fd 9): CU_FILE_HANDLE_NOT_REGISTERED");
            }
            return inner.open(p);
        }

        public long[] transfer(boolean toGpu, File f, long[] fo, long[] go, int len) {
            transfers.incrementAndGet();
            if (shortTransfers > 0) {
                shortTransfers--;
                long[] res = inner.transfer(toGpu, f, fo, go, len);
                res[0] = len - 4096;
                return res;
            }
            return inner.transfer(toGpu, f, fo, go, len);
        }

        public void close() {
            closed = true;
            inner.close();
        }
    }

    Gds.Env env(FakeCuFile fake, RuntimeException bufRegister) {
        return () -> new Gds.Driver() {
            public String version() {
                return "1150";
            }

            public boolean compat() {
                return true;
            }

            public GpuFileIo open(GpuMemory g, int maxBatch) {
                if (bufRegister != null) {
                    throw bufRegister;
                }
                return fake;
            }
        };
    }

    static final long[] FILE_OFFS = {5L * BLOCK, 0, 63L * BLOCK, 9L * BLOCK, 10L * BLOCK};
    static final long[] GPU_OFFS = {0, 7L * BLOCK, 2L * BLOCK, 40L * BLOCK, 41L * BLOCK};

    @Test
    void offNeverLoadsCuFile() throws IOException {
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.OFF, gpu, () -> fail("mode off must not load cuFile"), bounce(),
                128)) {
            assertEquals("bounce", io.mode());
            assertEquals("kvpool.agent.gds.mode=off", io.reason());
            readAndCheck(io);
        }
    }

    @Test
    void noCudaDeviceMeansBounce() {
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, GpuMemory.ofHost("gpu0-host", region),
                () -> fail("no GPU: cuFile is not loaded"), bounce(), 128)) {
            assertEquals("bounce", io.mode());
            assertTrue(io.reason().contains("no CUDA device"), io.reason());
        }
    }

    @Test
    void missingLibraryMeansBounceWithTheReason() throws IOException {
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, Gds.system(dir.resolve("libcufile.so.0").toString()),
                bounce(), 128)) {
            assertEquals("bounce", io.mode());
            assertTrue(io.reason().contains("libcufile not loadable"), io.reason());
            assertNull(io.version());
            readAndCheck(io);
        }
    }

    @Test
    void driverThatDoesNotOpenMeansBounce() {
        Gds.Env env = () -> {
            throw new CuFile.Unavailable("cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED");
        };
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env, bounce(), 128)) {
            assertEquals("bounce", io.mode());
            assertTrue(io.reason().contains("CU_FILE_DRIVER_NOT_INITIALIZED"), io.reason());
        }
        IllegalStateException on = assertThrows(IllegalStateException.class,
                () -> Gds.choose(Gds.Mode.ON, gpu, env, bounce(), 128));
        assertTrue(on.getMessage().contains("kvpool.agent.gds.mode=on")
                && on.getMessage().contains("CU_FILE_DRIVER_NOT_INITIALIZED"), on.getMessage());
    }

    @Test
    void refusedBufferRegistrationMeansBounce() {
        RuntimeException refused = new CuFile.CuFileException("cuFileBufRegister(4 MiB)",
                new CuFile.Status(5036, 0));
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env(null, refused), bounce(), 128)) {
            assertEquals("bounce", io.mode());
            assertTrue(io.reason().contains("CU_FILE_GPU_MEMORY_PINNING_FAILED"), io.reason());
            assertEquals("1150", io.version());
        }
        assertThrows(IllegalStateException.class, () -> Gds.choose(Gds.Mode.ON, gpu, env(null, refused), bounce(), 128));
    }

    @Test
    void refusedFileRegistrationFallsBackOnceAtOpen() throws IOException {
        FakeCuFile fake = new FakeCuFile();
        fake.refuseOpen = true;
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env(fake, null), bounce(), 128)) {
            assertEquals("compat", io.mode());
            GpuFileIo.File f = io.open(file);
            assertEquals("bounce", io.mode());
            assertEquals(1, io.fallbacks());
            assertTrue(io.reason().contains("CU_FILE_HANDLE_NOT_REGISTERED"), io.reason());
            assertTrue(fake.closed, "the cuFile path is let go");
            io.open(file).close(); // a second file: no second fallback
            assertEquals(1, io.fallbacks());
            assertArrayEquals(lens(FILE_OFFS.length), io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK));
            assertGpuHoldsFile(FILE_OFFS, GPU_OFFS);
            assertEquals(0, fake.transfers.get());
            f.close();
        }
        FakeCuFile strict = new FakeCuFile();
        strict.refuseOpen = true;
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.ON, gpu, env(strict, null), bounce(), 128)) {
            assertThrows(IOException.class, () -> io.open(file));
            assertEquals(0, io.fallbacks());
        }
    }

    @Test
    void aShortFirstTransferFallsBackAndIsRedoneByTheBouncePath() throws IOException {
        FakeCuFile fake = new FakeCuFile();
        fake.shortTransfers = 1;
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env(fake, null), bounce(), 128);
             GpuFileIo.File f = io.open(file)) {
            assertEquals("compat", io.mode());
            long[] res = io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK);
            assertArrayEquals(lens(FILE_OFFS.length), res, "the caller sees the redone transfer");
            assertGpuHoldsFile(FILE_OFFS, GPU_OFFS);
            assertEquals("bounce", io.mode());
            assertEquals(1, io.fallbacks());
            assertTrue(io.reason().contains("first cuFile read failed") && io.reason().contains("moved 61440 bytes"),
                    io.reason());
            assertEquals(0, io.gdsBytes(true), "nothing counted as moved by cuFile");
            io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK);
            assertEquals(1, fake.transfers.get(), "cuFile not used again");
            assertTrue(io.verified());
        }
    }

    @Test
    void afterAGoodFirstTransferFailuresAreTheOpsOwn() throws IOException {
        FakeCuFile fake = new FakeCuFile();
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env(fake, null), bounce(), 128);
             GpuFileIo.File f = io.open(file)) {
            assertArrayEquals(lens(FILE_OFFS.length), io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK));
            assertTrue(io.verified());
            assertEquals((long) FILE_OFFS.length * BLOCK, io.gdsBytes(true));
            fake.shortTransfers = 1;
            long[] res = io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK);
            assertEquals(BLOCK - 4096, res[0], "reported to the caller (a miss there), not hidden");
            assertEquals("compat", io.mode());
            assertEquals(0, io.fallbacks());
            // GPU → file through the same path
            long[] back = {20L * BLOCK, 21L * BLOCK};
            assertArrayEquals(lens(2), io.transfer(false, f, back, new long[] {0, 7L * BLOCK}, BLOCK));
            assertEquals(2L * BLOCK, io.gdsBytes(false));
            assertEquals(-1, onDisk(20L * BLOCK).mismatch(onDisk(5L * BLOCK)));
            assertEquals(-1, onDisk(21L * BLOCK).mismatch(onDisk(0)));
        }
    }

    @Test
    void badOpsAreRefusedBeforeAnyIo() throws IOException {
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.OFF, gpu, null, bounce(), 128); GpuFileIo.File f = io.open(file)) {
            assertThrows(IllegalArgumentException.class,
                    () -> io.transfer(true, f, new long[] {0}, new long[] {(long) SLOTS * BLOCK}, BLOCK));
            assertThrows(IllegalArgumentException.class, () -> io.transfer(true, f, new long[] {100}, new long[] {0}, BLOCK));
            assertThrows(IllegalArgumentException.class, () -> io.transfer(true, f, new long[] {0}, new long[] {0}, 1000));
            assertThrows(IllegalArgumentException.class, () -> io.transfer(true, f, new long[] {0, 1}, new long[] {0}, BLOCK));
        }
    }

    @Test
    void modeSettingIsParsedOrRefusedByName() {
        assertEquals(Gds.Mode.AUTO, Gds.Mode.parse(null));
        assertEquals(Gds.Mode.AUTO, Gds.Mode.parse(" Auto "));
        assertEquals(Gds.Mode.ON, Gds.Mode.parse("on"));
        assertEquals(Gds.Mode.OFF, Gds.Mode.parse("OFF"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Gds.Mode.parse("yes"));
        assertTrue(e.getMessage().contains("kvpool.agent.gds.mode"), e.getMessage());
    }

    /** The bounce path alone against the oracle: many ops (several staging groups), both directions, and one op. */
    @Test
    void bouncePathIsByteForByteBothWays() throws IOException {
        assertFalse(bounce().get().mode().isEmpty());
        try (GpuFileIo io = bounce().get(); GpuFileIo.File f = io.open(file)) {
            int n = 24;
            long[] fo = new long[n], go = new long[n];
            for (int i = 0; i < n; i++) {
                fo[i] = (long) ((i * 7) % SLOTS) * BLOCK;
                go[i] = (long) (SLOTS - 1 - i) * BLOCK;
            }
            assertArrayEquals(lens(n), io.transfer(true, f, fo, go, BLOCK));
            assertGpuHoldsFile(fo, go);
            // GPU → file into other slots, then compare those with the GPU
            long[] back = new long[n];
            for (int i = 0; i < n; i++) {
                back[i] = (long) (32 + i) * BLOCK;
            }
            assertArrayEquals(lens(n), io.transfer(false, f, back, go, BLOCK));
            assertGpuHoldsFile(back, go);
            assertArrayEquals(lens(1), io.transfer(true, f, new long[] {3L * BLOCK}, new long[] {0}, BLOCK));
            assertGpuHoldsFile(new long[] {3L * BLOCK}, new long[] {0});
        }
    }

    void readAndCheck(GpuFileIo io) throws IOException {
        try (GpuFileIo.File f = io.open(file)) {
            assertArrayEquals(lens(FILE_OFFS.length), io.transfer(true, f, FILE_OFFS, GPU_OFFS, BLOCK));
            assertGpuHoldsFile(FILE_OFFS, GPU_OFFS);
        }
    }

    static long[] lens(int n) {
        long[] l = new long[n];
        java.util.Arrays.fill(l, BLOCK);
        return l;
    }
}
