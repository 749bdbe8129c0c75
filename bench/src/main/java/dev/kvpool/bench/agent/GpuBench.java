package dev.kvpool.bench.agent;

import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.tier.GpuDevice;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import jcuda.Pointer;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;

/**
 * The GPU tier (G1) against the copy engines, in one run: host → GPU and GPU → host bandwidth of a batch of blocks
 * through {@link GpuDevice} (pinned host buffers: direct DMA; pageable buffers: our staging) and through the agent's
 * {@link PooledTier} (device worker + CRC32C + placement), against the same per-block copies made by PyTorch
 * ({@code tensor.copy_(non_blocking=True)} from pinned memory, where python3 with torch exists) and against one
 * contiguous {@code cudaMemcpyAsync} of the whole batch (the link's ceiling). Every mode's round trip is checked
 * byte for byte; a mismatch exits non-zero. Needs a CUDA device; elsewhere it says so and exits 0.
 */
public final class GpuBench {
    private static final String TORCH = """
            import sys, time, statistics, torch
            bs, n, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
            host = torch.empty(n * bs, dtype=torch.uint8).pin_memory()
            dev = torch.empty(n * bs, dtype=torch.uint8, device='cuda')
            hs = [host[i * bs:(i + 1) * bs] for i in range(n)]
            ds = [dev[i * bs:(i + 1) * bs] for i in range(n)]
            def run(h2d):
                torch.cuda.synchronize(); t = time.perf_counter()
                for i in range(n):
                    (ds[i].copy_(hs[i], non_blocking=True) if h2d else hs[i].copy_(ds[i], non_blocking=True))
                torch.cuda.synchronize(); return n * bs / (time.perf_counter() - t) / 1e9
            for h2d in (True, False):
                run(h2d)
                print('torch', 'h2d' if h2d else 'd2h', statistics.median([run(h2d) for _ in range(rounds)]), flush=True)
            """;

    private GpuBench() {
    }

    public static void run(Map<String, String> opt) throws Exception {
        int n = GpuDevice.deviceCount();
        if (n == 0) {
            System.out.println("gpu: no CUDA device here (JCuda natives, driver or GPU missing): nothing measured");
            return;
        }
        long batchBytes = Long.parseLong(opt.getOrDefault("batch-mib", "256")) << 20;
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "7"));
        List<String> rows = new ArrayList<>();
        boolean allOk = true;
        for (String b : opt.getOrDefault("blocks", "256K,2M").split(",")) {
            int bs = b.endsWith("M") ? Integer.parseInt(b.substring(0, b.length() - 1)) << 20
                    : Integer.parseInt(b.substring(0, b.length() - 1)) << 10;
            int blocks = (int) (batchBytes / bs);
            Result r = one(bs, blocks, rounds);
            allOk &= r.ok;
            rows.addAll(r.rows);
        }
        System.out.println();
        System.out.printf(Locale.ROOT, "GPU: %d device(s); batch %d MiB; median of %d rounds%n", n, batchBytes >> 20, rounds);
        System.out.println("| block | mode | H2D GB/s | D2H GB/s | vs torch H2D / D2H | vs one big copy H2D / D2H | CPU s/GB | bytes checked |");
        System.out.println("|---|---|--:|--:|--:|--:|--:|---|");
        rows.forEach(System.out::println);
        if (!allOk) {
            System.out.println("gpu: BYTE MISMATCH in a round trip (see above)");
            System.exit(1);
        }
    }

    record Result(List<String> rows, boolean ok) {
    }

    interface Copy {
        void run(boolean h2d);
    }

    static Result one(int bs, int blocks, int rounds) throws Exception {
        long total = (long) bs * blocks;
        List<String> rows = new ArrayList<>();
        boolean ok = true;
        String label = bs >= (1 << 20) ? (bs >> 20) + " MiB" : (bs >> 10) + " KiB";
        double[] torch = torch(bs, blocks, rounds);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment pinned = arena.allocate(total, 4096);
            MemorySegment pageable = arena.allocate(total, 4096);
            MemorySegment back = arena.allocate(total, 4096);
            byte[] rnd = new byte[bs];
            Random r = new Random(bs);
            for (int i = 0; i < blocks; i++) {
                r.nextBytes(rnd);
                MemorySegment.copy(MemorySegment.ofArray(rnd), 0, pinned, (long) i * bs, bs);
            }
            MemorySegment.copy(pinned, 0, pageable, 0, total);
            if (!GpuDevice.pin(pinned) || !GpuDevice.pin(back)) {
                throw new IllegalStateException("cannot pin the benchmark's host buffers");
            }
            MemorySegment[] src = slices(pinned, bs, blocks), dst = slices(back, bs, blocks);
            MemorySegment[] pageSrc = slices(pageable, bs, blocks);
            long[] slotNos = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                slotNos[i] = i;
            }

            // ceiling: one contiguous copy of the whole batch, pinned both ends
            Pointer devBuf = new Pointer();
            cudaStream_t s = new cudaStream_t();
            JCuda.setExceptionsEnabled(true);
            JCuda.cudaMalloc(devBuf, total);
            JCuda.cudaStreamCreateWithFlags(s, JCuda.cudaStreamNonBlocking);
            Pointer hp = Pointer.to(pinned.asByteBuffer());
            double[] big = measure(rounds, total, h2d -> {
                if (h2d) {
                    JCuda.cudaMemcpyAsync(devBuf, hp, total, cudaMemcpyKind.cudaMemcpyHostToDevice, s);
                } else {
                    JCuda.cudaMemcpyAsync(Pointer.to(back.asByteBuffer()), devBuf, total, cudaMemcpyKind.cudaMemcpyDeviceToHost, s);
                }
                JCuda.cudaStreamSynchronize(s);
            });
            // what the agent did before staging: cudaMemcpyAsync per block straight from pageable memory
            double[] pageableRaw = measure(rounds, total, h2d -> {
                for (int i = 0; i < blocks; i++) {
                    Pointer d = devBuf.withByteOffset((long) i * bs);
                    if (h2d) {
                        JCuda.cudaMemcpyAsync(d, Pointer.to(pageSrc[i].asByteBuffer()), bs, cudaMemcpyKind.cudaMemcpyHostToDevice, s);
                    } else {
                        JCuda.cudaMemcpyAsync(Pointer.to(pageSrc[i].asByteBuffer()), d, bs, cudaMemcpyKind.cudaMemcpyDeviceToHost, s);
                    }
                }
                JCuda.cudaStreamSynchronize(s);
            });
            JCuda.cudaStreamDestroy(s);
            JCuda.cudaFree(devBuf);
            rows.add(row(label, "one contiguous cudaMemcpyAsync (ceiling)", big, torch, big, Double.NaN, "-"));
            rows.add(row(label, "per block cudaMemcpyAsync from pageable memory (no staging)", pageableRaw, torch, big,
                    Double.NaN, "-"));

            try (GpuDevice dev = new GpuDevice("gpu0", 0, blocks, bs)) {
                long cpu0 = cpu();
                double[] direct = measure(rounds, total, h2d -> check(dev.io(h2d, slotNos, h2d ? src : dst)));
                double cpuDirect = (cpu() - cpu0) / 1e9 / ((2.0 * rounds + 2) * total / 1e9);
                String c1 = verify(src, dst);
                ok &= c1.startsWith("ok");
                rows.add(row(label, "GpuDevice, pinned host buffers, consecutive slots (direct DMA, merged into runs)", direct, torch, big, cpuDirect, c1));

                // the same blocks at scattered slots: no two adjacent, so no runs: one copy call per block (JCuda's
                // cudaMemcpyAsync), then the same copies as batch calls (cuMemcpyBatchAsync_v2) where the driver has it
                long[] scattered = new long[blocks];
                for (int i = 0; i < blocks; i++) {
                    scattered[i] = (i * 2L) % blocks + (i * 2L >= blocks ? 1 : 0);
                }
                boolean batchHere = dev.batched();
                for (boolean batched : batchHere ? new boolean[] {false, true} : new boolean[] {false}) {
                    dev.batchCopies(batched);
                    fill(dst);
                    long[] c0 = dev.copyCounts();
                    cpu0 = cpu();
                    double[] perBlock = measure(rounds, total, h2d -> check(dev.io(h2d, scattered, h2d ? src : dst)));
                    double cpuPerBlock = (cpu() - cpu0) / 1e9 / ((2.0 * rounds + 2) * total / 1e9);
                    String v = verify(src, dst);
                    ok &= v.startsWith("ok") && dev.batched() == batched;
                    rows.add(row(label, "GpuDevice, pinned host buffers, scattered slots, " + (batched
                                    ? "batched copies (cuMemcpyBatchAsync_v2, FFM)" : "one cudaMemcpyAsync per block"),
                            perBlock, torch, big, cpuPerBlock, v + copies(dev, c0)));
                }
                dev.batchCopies(true);
                if (!batchHere) {
                    rows.add(note(label, "no batched row: " + dev.copyPath()));
                }

                fill(dst);
                MemorySegment[] pageDst = slices(arena.allocate(total, 4096), bs, blocks);
                cpu0 = cpu();
                double[] staged = measure(rounds, total, h2d -> check(dev.io(h2d, slotNos, h2d ? pageSrc : pageDst)));
                double cpuStaged = (cpu() - cpu0) / 1e9 / ((2.0 * rounds + 2) * total / 1e9);
                String c2 = verify(pageSrc, pageDst);
                ok &= c2.startsWith("ok");
                rows.add(row(label, "GpuDevice, pageable host buffers (pinned staging, double-buffered)", staged, torch, big,
                        cpuStaged, c2));
            }

            // the agent's tier as before this change, with the bench's own contiguous pinned buffers (the row earlier
            // runs reported): CRC32C computed on put, every load checked
            GpuDevice tierDev = new GpuDevice("gpu0", 0, 2L * blocks, bs);
            tierDev.batchCopies(false);
            try (PooledTier tier = PooledTier.of("gpu", BlockEvent.GPU, bs, List.of(tierDev), new double[] {1})) {
                tier.verifyLoads(true);
                long[][] keys = new long[1][];
                long[] next = {1};
                fill(dst);
                long cpu0 = cpu();
                double[] pooled = measure(rounds, total, h2d -> {
                    if (h2d) {
                        keys[0] = new long[blocks];
                        for (int i = 0; i < blocks; i++) {
                            keys[0][i] = next[0]++;
                        }
                        check(tier.put(keys[0], src, false).join());
                    } else {
                        check(tier.get(keys[0], dst).join());
                    }
                });
                double cpuPooled = (cpu() - cpu0) / 1e9 / ((2.0 * rounds + 2) * total / 1e9);
                String c3 = verify(src, dst);
                ok &= c3.startsWith("ok") && tier.checksumFailures() == 0;
                rows.add(row(label, "agent GPU tier, earlier bench row: put from one contiguous pinned buffer, CRC32C"
                                + " computed on put and checked on every load, copies one by one", pooled, torch, big,
                        cpuPooled, c3 + (tier.checksumFailures() == 0 ? "" : ", " + tier.checksumFailures() + " checksum failures")));
            }
            ok &= agentPath(label, bs, blocks, rounds, src, torch, big, rows);
            GpuDevice.unpin(pinned);
            GpuDevice.unpin(back);
        }
        return new Result(rows, ok);
    }

    /**
     * The agent's own path through the GPU tier, as the agent runs it: the tier built with the agent's worker settings
     * (AgentSetup's defaults); puts as the write-behind makes them (deferred, sources the host pool's slots in its two
     * pinned regions, the CRC32C the host pool took at save passed along); loads as the engine's load makes them (into
     * a pinned shared-memory segment, as /dev/shm/kvpool-agent-*). Four variants in the same run: the new path, the
     * new path with per-block copies, the new path with checked loads, and the path before this change (CRC32C
     * computed on put, loads checked, per-block copies). The put is queued as an urgent write rather than a deferred
     * one: the device call is the same, but the write-behind's wait for an idle window (the scheduler's choice, 500 µs
     * after a load at the least) is not copy cost.
     */
    static boolean agentPath(String label, int bs, int blocks, int rounds, MemorySegment[] src, double[] torch,
                             double[] big, List<String> rows) throws Exception {
        long total = (long) bs * blocks;
        boolean ok = true;
        dev.kvpool.agent.store.AgentSetup.Settings defaults = dev.kvpool.agent.store.AgentSetup.Settings.defaults(
                java.nio.file.Path.of("/tmp"));
        java.nio.file.Path shmDir = java.nio.file.Files.isDirectory(java.nio.file.Path.of("/dev/shm"))
                ? java.nio.file.Path.of("/dev/shm") : java.nio.file.Path.of(System.getProperty("java.io.tmpdir"));
        java.nio.file.Path shmPath = shmDir.resolve("kvpool-gpu-bench-" + ProcessHandle.current().pid());
        // two host pools of two regions each: as AgentSetup builds it now (a save's blocks in one stretch per region)
        // and as before (blocks interleaved over the regions)
        List<dev.kvpool.agent.tier.MemoryDevice> regions = List.of(
                new dev.kvpool.agent.tier.MemoryDevice("host0", blocks, bs),
                new dev.kvpool.agent.tier.MemoryDevice("host1", blocks, bs));
        List<dev.kvpool.agent.tier.MemoryDevice> oldRegions = List.of(
                new dev.kvpool.agent.tier.MemoryDevice("host0", blocks, bs),
                new dev.kvpool.agent.tier.MemoryDevice("host1", blocks, bs));
        try (PooledTier host = PooledTier.of("host", BlockEvent.CPU, bs, regions, new double[] {1, 1});
             PooledTier oldHost = PooledTier.of("host", BlockEvent.CPU, bs, oldRegions, new double[] {1, 1});
             dev.kvpool.agent.api.SharedMemory shm = new dev.kvpool.agent.api.SharedMemory(shmPath, total)) {
            host.placeBatchesInRuns(true);
            for (var r : java.util.stream.Stream.concat(regions.stream(), oldRegions.stream()).toList()) {
                if (!GpuDevice.pin(r.region())) { // as AgentSetup does with the GPU tier on CUDA
                    throw new IllegalStateException("cannot pin the host pool's regions");
                }
            }
            if (!GpuDevice.pin(shm.segment())) { // as AgentService does with the engine's segment
                throw new IllegalStateException("cannot pin the shared segment");
            }
            long[] hostKeys = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                hostKeys[i] = 1_000_000L + i;
            }
            // the save: into the host pool, CRC32C taken there
            check(host.put(hostKeys, src, false).join());
            check(oldHost.put(hostKeys, src, false).join());
            Object[] handles = new Object[blocks], oldHandles = new Object[blocks];
            MemorySegment[] newMem = host.pinMemory(hostKeys, handles); // what writeBehind copies from
            MemorySegment[] oldMem = oldHost.pinMemory(hostKeys, oldHandles);
            int[] crcs = new int[blocks];
            long adjacent = 0, oldAdjacent = 0;
            for (int i = 0; i < blocks; i++) {
                crcs[i] = PooledTier.crcOf(handles[i]);
                adjacent += i > 0 && newMem[i].address() == newMem[i - 1].address() + bs ? 1 : 0;
                oldAdjacent += i > 0 && oldMem[i].address() == oldMem[i - 1].address() + bs ? 1 : 0;
            }
            MemorySegment[] engine = new MemorySegment[blocks];
            for (int i = 0; i < blocks; i++) {
                engine[i] = shm.slice((long) i * bs, bs);
            }
            record Variant(String name, boolean crcGiven, boolean verify, boolean batched, boolean scattered,
                           boolean hostRuns) {
            }
            List<Variant> variants = List.of(
                    new Variant("agent path (this change): write-behind put with the host pool's CRC32C from its"
                            + " per-region stretches, load unchecked, batched copies", true, false, true, false, true),
                    new Variant("agent path, host pool interleaved (its placement before this change)", true, false,
                            true, false, false),
                    new Variant("agent path, host pool interleaved, copies one by one", true, false, false, false, false),
                    new Variant("agent path, every load checked (kvpool.agent.gpu.verify=true)", true, true, true, false,
                            true),
                    new Variant("agent path before this change: host pool interleaved, CRC32C computed on put, every"
                            + " load checked, copies one by one", false, true, false, false, false),
                    new Variant("agent path, GPU slots scattered (blocks came and went), batched copies", true, false,
                            true, true, true),
                    new Variant("agent path, GPU slots scattered, copies one by one", true, false, false, true, true));
            for (Variant v : variants) {
                GpuDevice dev = new GpuDevice("gpu0", 0, 2L * blocks, bs);
                dev.batchCopies(v.batched());
                if (v.batched() && !dev.batched()) {
                    rows.add(note(label, v.name() + ": skipped, " + dev.copyPath()));
                    dev.close();
                    continue;
                }
                var w = new dev.kvpool.agent.sched.DeviceWorker(dev, defaults.chunkOps(), defaults.highWaterOps(),
                        defaults.guardMicros() * 1000, 64);
                try (PooledTier gpu = new PooledTier("gpu", BlockEvent.GPU, bs, List.of(dev), new double[] {1},
                        List.of(w))) {
                    gpu.verifyLoads(v.verify());
                    gpu.placeBatchesInRuns(true); // as AgentSetup (one GPU here: no effect)
                    MemorySegment[] hostMem = v.hostRuns() ? newMem : oldMem;
                    long[][] keys = new long[1][];
                    long[] next = {1};
                    if (v.scattered()) { // fill every slot, then free every other one: new blocks land 2 slots apart
                        long[] filler = new long[2 * blocks];
                        for (int i = 0; i < filler.length; i++) {
                            filler[i] = -1 - i;
                        }
                        check(gpu.put(java.util.Arrays.copyOfRange(filler, 0, blocks), hostMem, false, crcs).join());
                        check(gpu.put(java.util.Arrays.copyOfRange(filler, blocks, 2 * blocks), hostMem, false, crcs)
                                .join());
                        for (int i = 0; i < filler.length; i += 2) {
                            gpu.remove(filler[i]);
                        }
                    }
                    for (MemorySegment e : engine) {
                        e.fill((byte) 0);
                    }
                    long[] c0 = dev.copyCounts();
                    long cpu0 = cpu();
                    double[] bw = measure(rounds, total, h2d -> {
                        if (h2d) {
                            keys[0] = new long[blocks];
                            for (int i = 0; i < blocks; i++) {
                                keys[0][i] = next[0]++;
                            }
                            check(gpu.put(keys[0], hostMem, false, v.crcGiven() ? crcs : null).join());
                        } else {
                            check(gpu.get(keys[0], engine).join());
                        }
                    });
                    double cpuPer = (cpu() - cpu0) / 1e9 / ((2.0 * rounds + 2) * total / 1e9);
                    String c = verify(src, engine);
                    ok &= c.startsWith("ok") && gpu.checksumFailures() == 0;
                    rows.add(row(label, v.name(), bw, torch, big, cpuPer, c + copies(dev, c0)
                            + (gpu.checksumFailures() == 0 ? "" : ", " + gpu.checksumFailures() + " checksum failures")));
                }
            }
            rows.add(note(label, "agent path: write-behind sources that follow the one before in host memory: " + adjacent
                    + " of " + (blocks - 1) + " (host pool in stretches), " + oldAdjacent + " (interleaved)"));
            host.release(handles);
            oldHost.release(oldHandles);
            GpuDevice.unpin(shm.segment());
        } finally {
            java.nio.file.Files.deleteIfExists(shmPath);
        }
        return ok;
    }

    /** Copy calls a device made since {@code before}: batch calls (copies they carried) and single copies. */
    static String copies(GpuDevice dev, long[] before) {
        long[] now = dev.copyCounts();
        return String.format(Locale.ROOT, "; %d batch calls (%d copies), %d single copies", now[0] - before[0],
                now[1] - before[1], now[2] - before[2]);
    }

    /** Median H2D and D2H bandwidth (GB/s) over rounds, after one warm-up of each; H2D runs before D2H per round. */
    static double[] measure(int rounds, long bytes, Copy c) {
        c.run(true);
        c.run(false);
        double[] h = new double[rounds], d = new double[rounds];
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            c.run(true);
            long t1 = System.nanoTime();
            c.run(false);
            long t2 = System.nanoTime();
            h[i] = bytes / ((t1 - t0) / 1e9) / 1e9;
            d[i] = bytes / ((t2 - t1) / 1e9) / 1e9;
        }
        return new double[] {AgentBench.median(h), AgentBench.median(d)};
    }

    static double[] torch(int bs, int blocks, int rounds) {
        try {
            Process p = new ProcessBuilder("python3", "-c", TORCH, "" + bs, "" + blocks, "" + rounds).redirectErrorStream(true).start();
            double[] out = {Double.NaN, Double.NaN};
            StringBuilder log = new StringBuilder();
            try (BufferedReader rd = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = rd.readLine()) != null; ) {
                    log.append(line).append('\n');
                    String[] f = line.trim().split(" ");
                    if (f.length == 3 && f[0].equals("torch")) {
                        out[f[1].equals("h2d") ? 0 : 1] = Double.parseDouble(f[2]);
                    }
                }
            }
            if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
                System.out.println("gpu: torch baseline failed:\n" + log);
            }
            return out;
        } catch (Exception e) {
            System.out.println("gpu: no torch baseline (" + e.getMessage() + ")");
            return new double[] {Double.NaN, Double.NaN};
        }
    }

    static MemorySegment[] slices(MemorySegment m, int bs, int n) {
        MemorySegment[] out = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            out[i] = m.asSlice((long) i * bs, bs);
        }
        return out;
    }

    static void fill(MemorySegment[] s) {
        for (MemorySegment x : s) {
            x.fill((byte) 0);
        }
    }

    static void check(boolean[] ok) {
        for (boolean b : ok) {
            if (!b) {
                throw new IllegalStateException("a GPU copy reported failure");
            }
        }
    }

    static String verify(MemorySegment[] a, MemorySegment[] b) {
        long bytes = 0;
        for (int i = 0; i < a.length; i++) {
            long m = a[i].mismatch(b[i]);
            if (m != -1) {
                return "MISMATCH block " + i + " byte " + m;
            }
            bytes += a[i].byteSize();
        }
        return "ok, " + (bytes >> 20) + " MiB";
    }

    static long cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static String row(String block, String mode, double[] bw, double[] torch, double[] big, double cpuPerGb, String checked) {
        return String.format(Locale.ROOT, "| %s | %s | %.1f | %.1f | %s / %s | %.2f / %.2f | %s | %s |", block, mode, bw[0], bw[1],
                ratio(bw[0], torch[0]), ratio(bw[1], torch[1]), bw[0] / big[0], bw[1] / big[1],
                Double.isNaN(cpuPerGb) ? "-" : String.format(Locale.ROOT, "%.3f", cpuPerGb), checked);
    }

    static String note(String block, String text) {
        return "| " + block + " | (" + text + ") | | | | | | |";
    }

    static String ratio(double a, double b) {
        return Double.isNaN(b) ? "n/a" : String.format(Locale.ROOT, "%.2f×", a / b);
    }
}
