package dev.kvpool.agent.io.uring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.BlockIo.Op;
import dev.kvpool.agent.io.FileChannelBlockIo;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.FileDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Our io_uring binding against the FileChannel+O_DIRECT oracle, byte for byte. */
class IoUringOracleTest {
    static final long FILE = 64L << 20;

    @TempDir
    Path dir;

    @BeforeEach
    void uringHere() {
        String why = IoUring.unavailableReason();
        assumeTrue(why == null, () -> "io_uring not usable in this sandbox, test skipped: " + why);
    }

    static MemorySegment random(Arena a, int len, Random r) {
        MemorySegment s = a.allocate(len, BlockIo.ALIGN);
        byte[] b = new byte[len];
        r.nextBytes(b);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, len);
        return s;
    }

    /** Non-overlapping random extents: sizes 4 KiB .. 1 MiB, offsets 4 KiB-aligned. */
    static List<long[]> extents(Random r, int count) {
        List<long[]> out = new ArrayList<>();
        long slot = FILE / count / 4096 * 4096;
        for (int i = 0; i < count; i++) {
            long len = 4096L * (1 + r.nextInt((int) Math.min(256, slot / 4096)));
            long off = i * slot + 4096L * r.nextInt((int) ((slot - len) / 4096 + 1));
            out.add(new long[] {off, len});
        }
        return out;
    }

    @Test
    void uringWritesOracleReadsAndBack() throws Exception {
        Random r = new Random(42);
        try (Arena a = Arena.ofConfined(); IoUringBlockIo uring = new IoUringBlockIo(8);
             FileChannelBlockIo oracle = new FileChannelBlockIo(1);
             BlockFile fu = uring.open(dir.resolve("u.dat"), FILE); BlockFile fo = oracle.open(dir.resolve("u.dat"), FILE)) {
            List<long[]> ex = extents(r, 48);
            List<Op> writes = new ArrayList<>();
            List<MemorySegment> data = new ArrayList<>();
            for (long[] e : ex) {
                MemorySegment s = random(a, (int) e[1], r);
                data.add(s);
                writes.add(Op.write(e[0], s));
            }
            int[] wr = uring.execute(fu, writes);
            for (int i = 0; i < wr.length; i++) {
                assertEquals(ex.get(i)[1], wr[i], "uring write " + i);
            }
            // the oracle reads what io_uring wrote
            for (int i = 0; i < ex.size(); i++) {
                MemorySegment back = a.allocate(ex.get(i)[1], BlockIo.ALIGN);
                assertEquals(ex.get(i)[1], oracle.execute(fo, List.of(Op.read(ex.get(i)[0], back)))[0]);
                assertEquals(-1, back.mismatch(data.get(i)), "extent " + i);
            }
            // the oracle writes, io_uring reads (one batch, out of order)
            List<Op> reads = new ArrayList<>();
            List<MemorySegment> fresh = new ArrayList<>();
            for (int i = ex.size() - 1; i >= 0; i--) {
                MemorySegment s = random(a, (int) ex.get(i)[1], r);
                assertEquals(ex.get(i)[1], oracle.execute(fo, List.of(Op.write(ex.get(i)[0], s)))[0]);
                fresh.add(0, s);
            }
            List<MemorySegment> dst = new ArrayList<>();
            for (long[] e : ex) {
                MemorySegment d = a.allocate(e[1], BlockIo.ALIGN);
                dst.add(d);
                reads.add(Op.read(e[0], d));
            }
            int[] rr = uring.execute(fu, reads);
            for (int i = 0; i < ex.size(); i++) {
                assertEquals(ex.get(i)[1], rr[i]);
                assertEquals(-1, dst.get(i).mismatch(fresh.get(i)), "extent " + i);
            }
        }
    }

    @Test
    void fixedBuffersMatchOracle() throws Exception {
        Random r = new Random(7);
        try (Arena a = Arena.ofShared(); IoUringBlockIo uring = new IoUringBlockIo(4);
             FileChannelBlockIo oracle = new FileChannelBlockIo(1);
             BlockFile fu = uring.open(dir.resolve("f.dat"), FILE); BlockFile fo = oracle.open(dir.resolve("f.dat"), FILE)) {
            MemorySegment region = random(a, 8 << 20, r);
            uring.registerBuffers(List.of(region));
            List<Op> writes = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                writes.add(Op.write(i * (1L << 20), region.asSlice(i % 32 * 256L * 1024, 256 * 1024)));
            }
            int[] res = uring.execute(fu, writes);
            assertEquals(32, Arrays.stream(res).filter(x -> x == 256 * 1024).count());
            assertEquals(32, uring.opCounts()[0], "went through READ/WRITE_FIXED");
            for (int i = 0; i < 32; i++) {
                MemorySegment back = a.allocate(256 * 1024, BlockIo.ALIGN);
                oracle.execute(fo, List.of(Op.read(i * (1L << 20), back)));
                assertEquals(-1, back.mismatch(writes.get(i).buf()));
            }
            MemorySegment into = region.asSlice(4L << 20, 256 * 1024);
            assertEquals(256 * 1024, uring.execute(fu, List.of(Op.read(3L << 20, into)))[0]);
            assertEquals(-1, into.mismatch(writes.get(3).buf()) == -1 ? -1 : 0);
        }
    }

    @Test
    void concurrentBatchesOnSeveralRings() throws Exception {
        int threads = 4;
        ExecutorService ex = Executors.newFixedThreadPool(threads);
        try (FileChannelBlockIo oracle = new FileChannelBlockIo(1); BlockFile fo = oracle.open(dir.resolve("c.dat"), FILE);
             Arena shared = Arena.ofShared()) {
            long region = FILE / threads;
            List<Future<List<Object[]>>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int tt = t;
                fs.add(ex.submit(() -> {
                    Random r = new Random(100 + tt);
                    List<Object[]> written = new ArrayList<>();
                    try (IoUringBlockIo uring = new IoUringBlockIo(1 + r.nextInt(16));
                         BlockFile f = uring.open(dir.resolve("c.dat"), FILE)) {
                        for (int batch = 0; batch < 6; batch++) {
                            List<Op> ops = new ArrayList<>();
                            int k = 1 + r.nextInt(12);
                            long base = tt * region + batch * (region / 6 / 4096 * 4096);
                            long span = region / 6 / k / 4096 * 4096;
                            for (int i = 0; i < k; i++) {
                                int len = 4096 * (1 + r.nextInt((int) Math.min(64, span / 4096)));
                                MemorySegment s = random(shared, len, r);
                                ops.add(Op.write(base + i * span, s));
                                written.add(new Object[] {base + i * span, s});
                            }
                            for (int x : uring.execute(f, ops)) {
                                if (x <= 0) {
                                    throw new AssertionError("write failed: " + x);
                                }
                            }
                        }
                    }
                    return written;
                }));
            }
            for (var f : fs) {
                for (Object[] w : f.get()) {
                    MemorySegment s = (MemorySegment) w[1];
                    MemorySegment back = shared.allocate(s.byteSize(), BlockIo.ALIGN);
                    oracle.execute(fo, List.of(Op.read((long) w[0], back)));
                    assertArrayEquals(s.toArray(ValueLayout.JAVA_BYTE), back.toArray(ValueLayout.JAVA_BYTE));
                }
            }
        } finally {
            ex.shutdownNow();
        }
    }

    /** Runs ops through the pipeline, offering and polling in random steps; returns per op the result. */
    static int[] throughPipeline(BlockIo.Pipeline p, List<Op> ops, Random r, int[] maxInFlight) {
        int[] res = new int[ops.size()];
        Arrays.fill(res, Integer.MIN_VALUE);
        int next = 0, done = 0;
        while (done < ops.size()) {
            int offer = r.nextInt(p.depth() + 2);
            for (int k = 0; k < offer && next < ops.size(); k++) {
                if (!p.offer(ops.get(next), next)) {
                    break;
                }
                next++;
            }
            maxInFlight[0] = Math.max(maxInFlight[0], p.inFlight());
            if (p.inFlight() > p.depth()) {
                throw new AssertionError("in flight " + p.inFlight() + " > depth " + p.depth());
            }
            done += p.poll(r.nextBoolean() || next == ops.size(), (tag, x) -> {
                if (res[(int) tag] != Integer.MIN_VALUE) {
                    throw new AssertionError("op " + tag + " completed twice");
                }
                res[(int) tag] = x;
            });
        }
        assertEquals(0, p.inFlight());
        return res;
    }

    @Test
    void pipelineMatchesOracle() throws Exception {
        Random r = new Random(11);
        try (Arena a = Arena.ofShared(); IoUringBlockIo uring = new IoUringBlockIo(6);
             FileChannelBlockIo oracle = new FileChannelBlockIo(1);
             BlockFile fu = uring.open(dir.resolve("p.dat"), FILE); BlockFile fo = oracle.open(dir.resolve("p.dat"), FILE)) {
            MemorySegment fixed = random(a, 4 << 20, r);
            uring.registerBuffers(List.of(fixed)); // some ops through fixed buffers, some plain
            BlockIo.Pipeline p = uring.pipeline(fu);
            List<long[]> ex = extents(r, 64);
            List<Op> writes = new ArrayList<>();
            for (int i = 0; i < ex.size(); i++) {
                long[] e = ex.get(i);
                MemorySegment s = i % 3 == 0 && e[1] <= 1 << 20 ? fixed.asSlice(i / 3 % 4 * (1L << 20), e[1])
                        : random(a, (int) e[1], r);
                writes.add(Op.write(e[0], s));
            }
            int[] max = {0};
            int[] wr = throughPipeline(p, writes, r, max);
            for (int i = 0; i < wr.length; i++) {
                assertEquals(ex.get(i)[1], wr[i], "pipelined write " + i);
            }
            assertEquals(6, max[0], "the pipeline never had its depth in flight");
            // while pipelined ops are in flight the batch call is refused (it would reap their completions)
            MemorySegment one = a.allocate(4096, BlockIo.ALIGN);
            p.offer(Op.read(0, one), 0);
            org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> uring.execute(fu, List.of(Op.read(4096, one))));
            while (p.inFlight() > 0) {
                p.poll(true, (tag, x) -> { });
            }
            for (int i = 0; i < ex.size(); i++) {
                MemorySegment back = a.allocate(ex.get(i)[1], BlockIo.ALIGN);
                assertEquals(ex.get(i)[1], oracle.execute(fo, List.of(Op.read(ex.get(i)[0], back)))[0]);
                assertEquals(-1, back.mismatch(writes.get(i).buf()), "extent " + i);
            }
            // the oracle writes new bytes, the pipeline reads them back
            List<MemorySegment> fresh = new ArrayList<>();
            List<Op> reads = new ArrayList<>();
            for (long[] e : ex) {
                MemorySegment s = random(a, (int) e[1], r);
                assertEquals(e[1], oracle.execute(fo, List.of(Op.write(e[0], s)))[0]);
                fresh.add(s);
                reads.add(Op.read(e[0], a.allocate(e[1], BlockIo.ALIGN)));
            }
            int[] rr = throughPipeline(p, reads, r, max);
            for (int i = 0; i < ex.size(); i++) {
                assertEquals(ex.get(i)[1], rr[i]);
                assertEquals(-1, reads.get(i).buf().mismatch(fresh.get(i)), "extent " + i);
            }
        }
    }

    @Test
    void workerStreamingThroughUringMatchesOracle() throws Exception {
        int block = 64 << 10, slots = 192, lanes = 3;
        try (Arena a = Arena.ofShared(); FileChannelBlockIo oracle = new FileChannelBlockIo(1)) {
            FileDevice dev = new FileDevice("u", dir, slots, block, new IoUringBlockIo(8));
            assertTrue(dev.pipeline() != null, "io_uring device streams");
            MemorySegment[][] last = new MemorySegment[lanes][slots / lanes];
            try (DeviceWorker w = new DeviceWorker(dev, 4, 64, 0, 16)) {
                ExecutorService ex = Executors.newFixedThreadPool(lanes);
                List<Future<?>> fs = new ArrayList<>();
                for (int l = 0; l < lanes; l++) {
                    int ll = l;
                    fs.add(ex.submit(() -> {
                        Random r = new Random(300 + ll);
                        int per = slots / lanes;
                        for (int round = 0; round < 12; round++) {
                            int n = 1 + r.nextInt(per);
                            int from = r.nextInt(per - n + 1);
                            long[] sl = new long[n];
                            MemorySegment[] src = new MemorySegment[n];
                            for (int i = 0; i < n; i++) {
                                sl[i] = (long) ll * per + from + i;
                                src[i] = random(a, block, r);
                            }
                            boolean[] ok = (round % 2 == 0 ? w.writeNow(sl, src) : w.writeDeferred(sl, src)).join();
                            for (int i = 0; i < n; i++) {
                                assertTrue(ok[i]);
                                last[ll][from + i] = src[i];
                            }
                            MemorySegment[] dst = new MemorySegment[n];
                            for (int i = 0; i < n; i++) {
                                dst[i] = a.allocate(block, BlockIo.ALIGN);
                            }
                            ok = w.read(sl, dst).join();
                            for (int i = 0; i < n; i++) {
                                assertTrue(ok[i]);
                                assertEquals(-1, dst[i].mismatch(src[i]), "lane " + ll + " slot " + sl[i]);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
                ex.shutdown();
            }
            try (BlockFile fo = oracle.open(dev.path(), (long) slots * block)) {
                for (int l = 0; l < lanes; l++) {
                    for (int i = 0; i < slots / lanes; i++) {
                        if (last[l][i] == null) {
                            continue;
                        }
                        MemorySegment back = a.allocate(block, BlockIo.ALIGN);
                        long slot = (long) l * (slots / lanes) + i;
                        assertEquals(block, oracle.execute(fo, List.of(Op.read(slot * block, back)))[0]);
                        assertEquals(-1, back.mismatch(last[l][i]), "slot " + slot);
                    }
                }
            }
            dev.close();
        }
    }

    @Test
    void misalignedIsRefused() throws Exception {
        try (Arena a = Arena.ofConfined(); IoUringBlockIo uring = new IoUringBlockIo(2);
             BlockFile f = uring.open(dir.resolve("m.dat"), 1 << 20)) {
            MemorySegment s = a.allocate(8192, 4096);
            org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> uring.execute(f, List.of(Op.read(100, s))));
        }
    }
}
