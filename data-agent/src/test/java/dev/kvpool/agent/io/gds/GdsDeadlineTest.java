package dev.kvpool.agent.io.gds;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.io.uring.IoUringBlockIo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every wait of {@link GdsIo} on cuFile is bounded, against a faked cuFile (no GPU or libcufile needed) whose batch
 * ops complete (moving the bytes for real between the slot file and a host region standing in for GPU memory), half
 * complete, never complete, or whose cuFileBatchIOGetStatus never returns. A batch past its deadline is cancelled and
 * its ops fail with -ETIMEDOUT; a call that never returns wedges the path, not the caller; AutoGpuFileIo then falls
 * back to the bounce path, which moves the bytes.
 */
class GdsDeadlineTest {
    static final int BLOCK = 64 * 1024;
    static final int SLOTS = 32;
    static final long TIMEOUT = 200_000_000L; // 200 ms

    @TempDir
    Path dir;
    Arena arena;
    MemorySegment region;
    GpuMemory gpu;
    Path file;
    FakeCuFile cu;

    enum Mode { COMPLETE, HALF, NEVER, BLOCK }

    /** Batch calls as cuFile makes them; the ops of a submission are done at submit time by FileChannel I/O. */
    final class FakeCuFile implements CuFileApi {
        volatile Mode mode = Mode.COMPLETE;
        final FileChannel ch;
        final List<long[]> pending = new ArrayList<>(); // {cookie, status, ret}
        final List<Integer> submitted = new ArrayList<>();
        final CountDownLatch release = new CountDownLatch(1);
        int setUps, cancels, destroys, statusCalls, maxMinNr;

        FakeCuFile() throws IOException {
            ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }

        public MemorySegment handleRegister(int fd) {
            return MemorySegment.ofAddress(0x1000);
        }

        public void handleDeregister(MemorySegment fh) {
        }

        public void bufRegister(long devPtr, long length) {
        }

        public CuFile.Status bufDeregister(long devPtr) {
            return new CuFile.Status(0, 0);
        }

        public long io(boolean write, MemorySegment fh, long base, long size, long fileOff, long devOff, int[] errno) {
            return move(write, fileOff, devOff, size);
        }

        long move(boolean write, long fileOff, long devOff, long size) {
            ByteBuffer b = region.asSlice(devOff, size).asByteBuffer();
            try {
                return write ? ch.write(b, fileOff) : ch.read(b, fileOff);
            } catch (IOException e) {
                return -5;
            }
        }

        public synchronized MemorySegment batchSetUp(int nr) {
            setUps++;
            pending.clear();
            return MemorySegment.ofAddress(0x2000 + setUps);
        }

        public synchronized void batchSubmit(MemorySegment batch, int nr, MemorySegment params) {
            submitted.add(nr);
            int finish = switch (mode) {
                case COMPLETE -> nr;
                case HALF -> nr / 2;
                default -> 0;
            };
            for (int i = 0; i < nr; i++) {
                long o = i * CuFile.IO_PARAMS.byteSize();
                long cookie = params.get(ValueLayout.ADDRESS, o + CuFile.P_COOKIE).address();
                if (i < finish) {
                    boolean write = params.get(ValueLayout.JAVA_INT, o + CuFile.P_OPCODE) == CuFile.OP_WRITE;
                    assertEquals(gpu.address(), params.get(ValueLayout.ADDRESS, o + CuFile.P_BASE).address());
                    long r = move(write, params.get(ValueLayout.JAVA_LONG, o + CuFile.P_FILE_OFF),
                            params.get(ValueLayout.JAVA_LONG, o + CuFile.P_DEV_OFF),
                            params.get(ValueLayout.JAVA_LONG, o + CuFile.P_SIZE));
                    pending.add(new long[] {cookie, CuFile.STATUS_COMPLETE, r});
                }
            }
        }

        public int batchStatus(MemorySegment batch, int minNr, int maxNr, MemorySegment events, long timeoutNanos) {
            if (mode == Mode.BLOCK) { // a cuFile call that does not come back (until the test lets it)
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return 0;
            }
            synchronized (this) {
                statusCalls++;
                maxMinNr = Math.max(maxMinNr, minNr);
                int n = Math.min(maxNr, pending.size());
                for (int e = 0; e < n; e++) {
                    long[] ev = pending.removeFirst();
                    long o = e * CuFile.IO_EVENTS.byteSize();
                    events.set(ValueLayout.ADDRESS, o + CuFile.E_COOKIE, MemorySegment.ofAddress(ev[0]));
                    events.set(ValueLayout.JAVA_INT, o + CuFile.E_STATUS, (int) ev[1]);
                    events.set(ValueLayout.JAVA_LONG, o + CuFile.E_RET, ev[2]);
                }
                return n;
            }
        }

        public synchronized CuFile.Status batchCancel(MemorySegment batch) {
            cancels++;
            pending.clear();
            return new CuFile.Status(0, 0);
        }

        public synchronized void batchDestroy(MemorySegment batch) {
            destroys++;
        }
    }

    @BeforeEach
    void setUp() throws IOException {
        arena = Arena.ofShared();
        region = arena.allocate((long) SLOTS * BLOCK, 4096);
        GpuMemory host = GpuMemory.ofHost("gpu0", region);
        gpu = new GpuMemory() { // host memory that claims to be CUDA device 0, so Gds.choose takes the cuFile path
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
        byte[] bytes = new byte[SLOTS * BLOCK];
        new Random(11).nextBytes(bytes);
        java.nio.file.Files.write(file, bytes);
        cu = new FakeCuFile();
    }

    @AfterEach
    void tearDown() throws IOException {
        cu.release.countDown();
        cu.ch.close();
        arena.close();
    }

    static long[] slots(int from, int n) {
        long[] o = new long[n];
        for (int i = 0; i < n; i++) {
            o[i] = (long) (from + i) * BLOCK;
        }
        return o;
    }

    static long[] fill(int n, long v) {
        long[] a = new long[n];
        Arrays.fill(a, v);
        return a;
    }

    byte[] onDisk(long off) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(BLOCK);
        cu.ch.read(b, off);
        return b.array();
    }

    void assertGpuHolds(long[] fileOffs, long[] gpuOffs, int count) throws IOException {
        for (int i = 0; i < count; i++) {
            assertArrayEquals(onDisk(fileOffs[i]), region.asSlice(gpuOffs[i], BLOCK).toArray(ValueLayout.JAVA_BYTE),
                    "op " + i);
        }
    }

    @Test
    void aBatchWhoseCompletionsNeverComeIsCancelledAtItsDeadlineAndItsOpsFail() throws IOException {
        GdsIo io = new GdsIo(cu, gpu, 4, true, TIMEOUT, 1L << 30);
        try (GpuFileIo.File f = io.open(file)) {
            long[] fo = slots(0, 10), go = slots(16, 10);
            cu.mode = Mode.NEVER;
            long t0 = System.nanoTime();
            long[] res = io.transfer(true, f, fo, go, BLOCK);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertArrayEquals(fill(10, -GpuFileIo.ETIMEDOUT), res, "every op of the call failed, none hidden");
            assertTrue(ms >= 180 && ms < 2_000, "ended by the 200 ms deadline, took " + ms + " ms");
            assertEquals(List.of(4), cu.submitted, "the later submissions are not sent after a timed-out one");
            assertEquals(1, cu.cancels);
            assertEquals(1, cu.destroys);
            assertEquals(0, cu.maxMinNr, "polled with min_nr 0: no wait inside cuFile");
            assertNull(io.wedged());
            // the next call gets a fresh batch handle and goes through
            cu.mode = Mode.COMPLETE;
            assertArrayEquals(fill(10, BLOCK), io.transfer(true, f, fo, go, BLOCK));
            assertEquals(2, cu.setUps);
            assertGpuHolds(fo, go, 10);
        } finally {
            io.close();
        }
    }

    @Test
    void aHalfCompletedBatchKeepsWhatCompletedAndFailsTheRest() throws IOException {
        GdsIo io = new GdsIo(cu, gpu, 8, true, TIMEOUT, 1L << 30);
        try (GpuFileIo.File f = io.open(file)) {
            long[] fo = slots(3, 8), go = slots(20, 8);
            cu.mode = Mode.HALF;
            long[] res = io.transfer(true, f, fo, go, BLOCK);
            long[] want = fill(8, -GpuFileIo.ETIMEDOUT);
            Arrays.fill(want, 0, 4, BLOCK);
            assertArrayEquals(want, res);
            assertGpuHolds(fo, go, 4);
        } finally {
            io.close();
        }
    }

    @Test
    void aCuFileCallThatNeverReturnsWedgesThePathNotTheCaller() throws IOException {
        GdsIo io = new GdsIo(cu, gpu, 8, true, TIMEOUT, 1L << 30);
        GpuFileIo.File f = io.open(file);
        cu.mode = Mode.BLOCK;
        long t0 = System.nanoTime();
        long[] res = io.transfer(false, f, slots(0, 3), slots(5, 3), BLOCK);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertArrayEquals(fill(3, -GpuFileIo.ETIMEDOUT), res);
        assertTrue(ms < 2_000, "the caller waited " + ms + " ms");
        assertNotNull(io.wedged());
        t0 = System.nanoTime();
        assertArrayEquals(fill(2, -GpuFileIo.ETIMEDOUT), io.transfer(true, f, slots(0, 2), slots(0, 2), BLOCK));
        assertEquals(1, cu.submitted.size(), "cuFile is not called again");
        io.close(); // returns although a worker is still inside cuFile
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 1_000, "later calls and close() do not wait");
    }

    @Test
    void submissionsAreCappedByBytes() throws IOException {
        GdsIo io = new GdsIo(cu, gpu, 128, true, TIMEOUT, 2L * BLOCK);
        try (GpuFileIo.File f = io.open(file)) {
            long[] fo = slots(0, 5), go = slots(10, 5);
            assertArrayEquals(fill(5, BLOCK), io.transfer(true, f, fo, go, BLOCK));
            assertEquals(List.of(2, 2, 1), cu.submitted);
            assertGpuHolds(fo, go, 5);
        } finally {
            io.close();
        }
    }

    @Test
    void aTimeoutAfterAGoodFirstTransferFallsBackToTheBouncePath() throws IOException {
        Gds.Env env = () -> new Gds.Driver() {
            public String version() {
                return "1150";
            }

            public boolean compat() {
                return true;
            }

            public GpuFileIo open(GpuMemory g, int maxBatch) {
                return new GdsIo(cu, g, maxBatch, true, TIMEOUT, 1L << 30);
            }
        };
        try (AutoGpuFileIo io = Gds.choose(Gds.Mode.AUTO, gpu, env,
                () -> new BounceIo(gpu, IoUringBlockIo.bestAvailable(8, true), 4L * BLOCK), 8);
             GpuFileIo.File f = io.open(file)) {
            long[] fo = slots(1, 6), go = slots(8, 6);
            assertArrayEquals(fill(6, BLOCK), io.transfer(true, f, fo, go, BLOCK));
            assertTrue(io.verified());
            assertEquals("compat", io.mode());
            cu.mode = Mode.NEVER;
            long[] fo2 = slots(20, 6), go2 = slots(14, 6);
            assertArrayEquals(fill(6, -GpuFileIo.ETIMEDOUT), io.transfer(true, f, fo2, go2, BLOCK),
                    "misses for the caller");
            assertEquals("bounce", io.mode());
            assertEquals(1, io.fallbacks());
            assertTrue(io.reason().contains("deadline"), io.reason());
            region.asSlice(go2[0], 6L * BLOCK).fill((byte) 0);
            assertArrayEquals(fill(6, BLOCK), io.transfer(true, f, fo2, go2, BLOCK));
            assertGpuHolds(fo2, go2, 6);
            assertEquals(1, cu.submitted.size() - 1, "one cuFile submission after the good one, none after the fallback");
        }
    }
}
