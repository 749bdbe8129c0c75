package dev.kvpool.bench.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.agent.events.BlockEventPublisher;
import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.pool.BandwidthProbe;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.pool.SlotTable;
import dev.kvpool.agent.pool.ThrottledDevice;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.store.AgentSetup;
import dev.kvpool.agent.tier.FileDevice;
import dev.kvpool.agent.tier.MemoryDevice;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import dev.kvpool.api.events.Topics;
import dev.kvpool.testing.KafkaBroker;
import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Data-agent benchmarks, each against its baseline measured in the same run, alternated A B, B A, ... (at least 5 pairs;
 * the ratio reported is the median of the per-pair ratios, with min and max):
 * <ul>
 *   <li>{@code disk}: the agent's NVMe tier (device worker + our io_uring + CRC32C, blocks from host memory) vs fio
 *   (ioengine io_uring, direct=1) on the same preallocated file, same block size, same queue depth, sequential,
 *   read and write; bandwidth and CPU seconds per GB (agent: the whole JVM's CPU time; fio: usr+sys of the job);</li>
 *   <li>{@code pool}: 2–3 "devices" (slot files in separate directories on this one disk, each throttled by a token
 *   bucket in the agent, see {@link ThrottledDevice}) pooled by measured bandwidth: load bandwidth of the pool vs
 *   the sum of each device's bandwidth measured alone;</li>
 *   <li>{@code events}: block events/s through the agent's publisher (batched kvpool.blocks records) vs Kafka's
 *   {@code ProducerPerformance} sending the same number of records of the same size to the same broker.</li>
 * </ul>
 */
public final class AgentBench {
    static final ObjectMapper M = new ObjectMapper();

    private AgentBench() {
    }

    public static void main(String[] args) throws Exception {
        run(dev.kvpool.bench.Main.options(args), args.length > 0 && !args[0].startsWith("--") ? args[0] : "all");
    }

    public static void run(Map<String, String> opt, String what) throws Exception {
        Path dir = Path.of(opt.getOrDefault("dir", "target/agent-bench"));
        fioPath = opt.getOrDefault("fio", fioPath);
        if ((what.equals("all") || what.equals("disk")) && !Files.isExecutable(Path.of(fioPath))) {
            // the baseline: say so before minutes of agent runs, not with a stack trace after them
            throw new IllegalArgumentException("fio not found at " + fioPath
                    + ": install it (apt-get install fio) or pass --fio PATH");
        }
        Files.createDirectories(dir);
        int pairs = Integer.parseInt(opt.getOrDefault("pairs", "5"));
        boolean keep = Boolean.parseBoolean(opt.getOrDefault("keep", "true"));
        int secs = Integer.parseInt(opt.getOrDefault("seconds", "5"));
        int qd = Integer.parseInt(opt.getOrDefault("qd", "8"));
        // blocks per request of each of the two callers. qd/2: their buffers add up to fio's own (iodepth x bs), the
        // like-for-like comparison; 16 x qd: an engine loading a long prompt (64 MiB at 256 KiB). On a virtual disk
        // the host copies each block to or from guest memory, and that copy slows as the buffers outgrow the
        // caches: our engine alone loses as much as the agent there, so the second row measures the VM, not us.
        int[] perRequests = Arrays.stream(opt.getOrDefault("per-request", Math.max(1, qd / 2) + "," + 16 * qd).split(","))
                .mapToInt(Integer::parseInt).toArray();
        long fileBytes = Long.parseLong(opt.getOrDefault("file-mib", "1024")) << 20;
        List<String> table = new ArrayList<>();
        if (what.equals("all") || what.equals("disk")) {
            // --bs 256,2048 (KiB) and --rw read,write narrow the disk matrix (profiling one case)
            int[] sizes = Arrays.stream(opt.getOrDefault("bs", "256,2048").split(",")).mapToInt(x -> Integer.parseInt(x) << 10).toArray();
            String rw = opt.getOrDefault("rw", "read,write");
            for (int perRequest : perRequests) {
                for (int bs : sizes) {
                    for (boolean write : new boolean[] {false, true}) {
                        if (!rw.contains(write ? "write" : "read")) {
                            continue;
                        }
                        table.add(disk(dir, bs, write, qd, perRequest, fileBytes, secs, pairs, keep));
                    }
                }
            }
        }
        if (what.equals("layerwise")) {
            // not part of "all": its own table (time to the first layer and to the whole load)
            LayerwiseBench.run(opt, dir, pairs);
            return;
        }
        if (what.equals("footprint")) {
            // not part of "all": a diagnosis of a virtual disk, not a target
            footprint(dir, Integer.parseInt(opt.getOrDefault("bs", "256")) << 10, qd,
                    opt.getOrDefault("buf-mib", "2,64,512"), fileBytes, secs, pairs, opt.containsKey("huge"),
                    opt.getOrDefault("rw", "read").equals("write"));
            return;
        }
        if (what.equals("startup")) {
            // not part of "all": no baseline, a check of how a big kept NVMe tier starts (time, peak heap)
            startup(dir, Long.parseLong(opt.getOrDefault("blocks", "4000000")), Integer.parseInt(opt.getOrDefault("devices", "2")),
                    pairs);
            return;
        }
        if (what.equals("all") || what.equals("pool")) {
            table.add(pool(dir, opt.getOrDefault("throttle-mbps", "150,300,450"), 2 << 20, qd, pairs));
        }
        if (what.equals("all") || what.equals("events")) {
            table.add(events(dir, opt, pairs));
        }
        System.out.println();
        System.out.println("| benchmark | agent | baseline | ratio median (min–max) | CPU s/GB agent vs baseline |");
        System.out.println("|---|---|---|---|---|");
        table.forEach(System.out::println);
    }

    // ---- disk --------------------------------------------------------------------------------------------------

    static String disk(Path dir, int bs, boolean write, int qd, int perRequest, long fileBytes, int secs, int pairs,
                       boolean keep)
            throws Exception {
        Path devDir = dir.resolve("disk");
        long slots = fileBytes / bs;
        BlockIo io = AgentSetup.blockIo("io_uring", qd);
        // as the agent runs by default: with the slot table that keeps blocks across restarts (--keep false: without)
        Files.deleteIfExists(devDir.resolve("kvpool-slots.idx"));
        FileDevice dev = new FileDevice("bench", devDir, slots, bs, io, keep ? "bench block_bytes=" + bs : null);
        Path file = dev.path();
        // two callers, each with perRequest blocks per request; they read into / write from that many distinct
        // buffers, fio into iodepth x bs of its own
        int batch = 2 * perRequest;
        double[] ratio = new double[pairs], agentBw = new double[pairs], fioBw = new double[pairs];
        double[] agentCpu = new double[pairs], fioCpu = new double[pairs], engineRatio = new double[pairs];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment host = arena.allocate((long) batch * bs, BlockIo.ALIGN);
            host.fill((byte) 0x3c);
            io.registerBuffers(List.of(host));
            DeviceWorker worker = new DeviceWorker(dev, 4, 1 << 20, 0, batch / 2); // one caller's batch per device batch
            PooledTier tier = new PooledTier("nvme", BlockEvent.DISK, bs, List.of(dev), new double[] {1},
                    List.of(worker));
            MemorySegment[] bufs = new MemorySegment[batch];
            for (int i = 0; i < batch; i++) {
                bufs[i] = host.asSlice((long) i * bs, bs);
            }
            // fill the file through the tier so reads find blocks (and fio reads written extents)
            long[] keys = new long[(int) slots];
            for (int i = 0; i < slots; i++) {
                keys[i] = i;
            }
            for (int i = 0; !write && i < slots; i += batch) {
                int n = (int) Math.min(batch, slots - i);
                tier.put(Arrays.copyOfRange(keys, i, i + n), Arrays.copyOf(bufs, n), false).join();
            }
            for (int p = 0; p < pairs; p++) {
                // A B, B A, A B ...: whichever runs second pays for the first one's writeback and cache state
                double[] f, a, r;
                if (p % 2 == 0) {
                    f = fio(file, bs, write, qd, fileBytes, secs);
                    a = write ? agentWrite(tier, keys, bufs, secs) : agentRead(tier, keys, bufs, secs);
                    r = engineOnly(qd, dev, bs, write, bufs, secs);
                } else {
                    r = engineOnly(qd, dev, bs, write, bufs, secs);
                    a = write ? agentWrite(tier, keys, bufs, secs) : agentRead(tier, keys, bufs, secs);
                    f = fio(file, bs, write, qd, fileBytes, secs);
                }
                engineRatio[p] = r[0] / f[0];
                fioBw[p] = f[0];
                fioCpu[p] = f[1];
                agentBw[p] = a[0];
                agentCpu[p] = a[1];
                ratio[p] = a[0] / f[0];
                System.out.printf(Locale.ROOT, "disk %s %d KiB qd%d, %d blocks/request, pair %d: agent %.0f MB/s (%.2f CPU s/GB), fio %.0f MB/s (%.2f CPU s/GB), ratio %.2f; io_uring engine alone %.0f MB/s, ratio %.2f%n",
                        write ? "write" : "read", bs >> 10, qd, perRequest, p + 1, a[0] / 1e6, a[1], f[0] / 1e6, f[1], ratio[p], r[0] / 1e6, engineRatio[p]);
            }
            tier.close();
        }
        return String.format(Locale.ROOT, "| NVMe %s %d KiB qd%d, %d blocks/request, buffers %d MiB (fio: %d MiB) (io_uring, O_DIRECT) | %.0f MB/s | fio %.0f MB/s | %.2f (%.2f–%.2f); io_uring engine alone %.2f (%.2f–%.2f) | %.2f vs %.2f |",
                write ? "write" : "read", bs >> 10, qd, batch / 2, ((long) batch * bs) >> 20, ((long) qd * bs) >> 20, median(agentBw) / 1e6, median(fioBw) / 1e6, median(ratio),
                min(ratio), max(ratio), median(engineRatio), min(engineRatio), max(engineRatio), median(agentCpu), median(fioCpu));
    }

    /**
     * Writes through the tier for {@code secs} from two callers, each cycling through its half of the keys (the
     * slot allocator hands out slots in order, so the file is written nearly sequentially): {bytes/s, CPU s/GB}.
     */
    static double[] agentWrite(PooledTier tier, long[] keys, MemorySegment[] bufs, int secs) throws Exception {
        for (int k = keys.length - 1; k >= 0; k--) {
            tier.remove(keys[k]); // free every slot, in reverse, so the LIFO free list starts at slot 0
        }
        int halfKeys = keys.length / 2;
        return twoCallers(bufs, secs, (half, lane, end) -> {
            int batch = half.length;
            int from = lane * halfKeys, i = from;
            long bytes = 0;
            while (System.nanoTime() < end) {
                if (i + batch > from + halfKeys) {
                    for (int k = i - 1; k >= from; k--) {
                        tier.remove(keys[k]);
                    }
                    i = from;
                }
                tier.put(Arrays.copyOfRange(keys, i, i + batch), half, false).join();
                i += batch;
                bytes += (long) batch * half[0].byteSize();
            }
            for (int k = i - 1; k >= from; k--) {
                tier.remove(keys[k]);
            }
            return bytes;
        });
    }

    static double[] agentRead(PooledTier tier, long[] keys, MemorySegment[] bufs, int secs) throws Exception {
        return twoCallers(bufs, secs, (half, lane, end) -> {
            int batch = half.length;
            long bytes = 0;
            int i = lane * batch;
            while (System.nanoTime() < end) {
                if (i + batch > keys.length) {
                    i = lane * batch % Math.max(1, keys.length - batch);
                }
                boolean[] hit = tier.get(Arrays.copyOfRange(keys, i, i + batch), half).join();
                for (boolean h : hit) {
                    if (!h) {
                        throw new IllegalStateException("bench read missed a block");
                    }
                }
                i += 2 * batch;
                bytes += (long) batch * half[0].byteSize();
            }
            return bytes;
        });
    }

    interface Lane {
        long run(MemorySegment[] half, int lane, long endNanos) throws Exception;
    }

    /**
     * Two engine-like callers, each with half of the buffers, so the device always has the next batch queued
     * while the previous one is checksummed; the device itself still has at most the queue depth in flight.
     */
    static double[] twoCallers(MemorySegment[] bufs, int secs, Lane lane) throws Exception {
        int h = bufs.length / 2;
        MemorySegment[][] halves = {Arrays.copyOfRange(bufs, 0, h), Arrays.copyOfRange(bufs, h, 2 * h)};
        long cpu0 = cpuNanos(), t0 = System.nanoTime(), end = t0 + TimeUnit.SECONDS.toNanos(secs);
        long[] bytes = new long[2];
        Exception[] err = new Exception[2];
        Thread[] ts = new Thread[2];
        for (int l = 0; l < 2; l++) {
            int ll = l;
            ts[l] = Thread.ofPlatform().start(() -> {
                try {
                    bytes[ll] = lane.run(halves[ll], ll, end);
                } catch (Exception e) {
                    err[ll] = e;
                }
            });
        }
        for (Thread t : ts) {
            t.join();
        }
        for (Exception e : err) {
            if (e != null) {
                throw e;
            }
        }
        double s = (System.nanoTime() - t0) / 1e9;
        long total = bytes[0] + bytes[1];
        return new double[] {total / s, (cpuNanosSince(cpu0) / 1e9) / (total / 1e9)};
    }

    /** Our io_uring BlockIo alone (no worker, index or checksum), sequential over the file, same qd: {bytes/s}. */
    static double[] engineOnly(int qd, FileDevice dev, int bs, boolean write, MemorySegment[] bufs, int secs) {
        // at least qd ops per call, so that small requests do not run the bare engine below the queue depth
        return engineOnly(dev, bs, write, bufs, Math.max(qd, bufs.length / 2), secs);
    }

    /** The same, {@code batch} ops per call, cycling through {@code bufs} (their total size is the footprint). */
    static double[] engineOnly(FileDevice dev, int bs, boolean write, MemorySegment[] bufs, int batch, int secs) {
        long slots = dev.slotCount();
        long slot = 0, bytes = 0, t0 = System.nanoTime(), end = t0 + TimeUnit.SECONDS.toNanos(secs);
        int next = 0;
        while (System.nanoTime() < end) {
            long[] sl = new long[batch];
            MemorySegment[] b = new MemorySegment[batch];
            for (int i = 0; i < batch; i++) {
                sl[i] = slot;
                slot = (slot + 1) % slots;
                b[i] = bufs[next];
                next = (next + 1) % bufs.length;
            }
            dev.io(write, sl, b);
            bytes += (long) batch * bs;
        }
        return new double[] {bytes / ((System.nanoTime() - t0) / 1e9)};
    }

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static long cpuNanosSince(long t0) {
        return cpuNanos() - t0;
    }

    /** One fio run: {bytes/s, CPU s per GB}. */
    /**
     * Sequential O_DIRECT reads (or, with {@code write}, writes) by our engine alone into (from) {@code bufMibs} MiB of registered buffers (used round
     * robin), alternating with fio, which reads into iodepth × bs of its own. On a virtual disk the destination's
     * footprint changes read speed (the host copies into guest memory); this tells that apart from the submission
     * path.
     */
    static void footprint(Path dir, int bs, int qd, String bufMibs, long fileBytes, int secs, int pairs, boolean huge,
                          boolean write)
            throws Exception {
        long[] mibs = Arrays.stream(bufMibs.split(",")).mapToLong(Long::parseLong).toArray();
        BlockIo io = AgentSetup.blockIo("io_uring", qd);
        FileDevice dev = new FileDevice("footprint", dir.resolve("footprint"), fileBytes / bs, bs, io);
        try (Arena arena = Arena.ofShared()) {
            long hostBytes = Arrays.stream(mibs).max().orElse(2) << 20;
            MemorySegment host = huge ? hugeAnon(hostBytes) : arena.allocate(hostBytes, BlockIo.ALIGN);
            host.fill((byte) 0x5a);
            System.out.println("buffers: " + (huge ? "anonymous mmap + MADV_HUGEPAGE" : "Arena.allocate (4 KiB pages)")
                    + ", AnonHugePages now " + anonHuge());
            io.registerBuffers(List.of(host));
            MemorySegment[] all = new MemorySegment[(int) (host.byteSize() / bs)];
            for (int i = 0; i < all.length; i++) {
                all[i] = host.asSlice((long) i * bs, bs);
            }
            // write the whole file once, so fio and the engine read written extents
            for (long s = 0; s < dev.slotCount(); s += 64) {
                int n = (int) Math.min(64, dev.slotCount() - s);
                long[] sl = new long[n];
                MemorySegment[] b = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    sl[i] = s + i;
                    b[i] = all[(int) ((s + i) % all.length)];
                }
                dev.io(true, sl, b);
            }
            for (int p = 0; p < pairs; p++) {
                System.out.printf(Locale.ROOT, "footprint %s round %d: fio %.0f MB/s", write ? "write" : "read", p + 1,
                        fio(dev.path(), bs, write, qd, fileBytes, secs)[0] / 1e6);
                for (long mib : mibs) {
                    MemorySegment[] bufs = Arrays.copyOf(all, (int) Math.max(1, (mib << 20) / bs));
                    System.out.printf(Locale.ROOT, ", engine %s %d MiB %.0f MB/s", write ? "from" : "into", mib,
                            engineOnly(dev, bs, write, bufs, qd, secs)[0] / 1e6);
                }
                System.out.println();
            }
        } finally {
            dev.close(); // closes the ring too
        }
    }

    /** {@code bytes} of anonymous memory, 2 MiB aligned, advised to be backed by transparent huge pages. */
    static MemorySegment hugeAnon(long bytes) {
        long two = 2L << 20;
        long addr = dev.kvpool.agent.io.uring.Libc.syscall(9, 0, bytes + two, 3, 0x22, -1, 0); // mmap RW private anon
        if (addr < 0 && addr > -4096) {
            throw new IllegalStateException("mmap failed: errno " + -addr);
        }
        long aligned = (addr + two - 1) & -two;
        long r = dev.kvpool.agent.io.uring.Libc.syscall(28, aligned, bytes, 14, 0, 0, 0); // madvise MADV_HUGEPAGE
        if (r < 0) {
            throw new IllegalStateException("madvise failed: errno " + -r);
        }
        return MemorySegment.ofAddress(aligned).reinterpret(bytes);
    }

    static String anonHuge() {
        try {
            return Files.readAllLines(Path.of("/proc/self/smaps_rollup")).stream()
                    .filter(l -> l.startsWith("AnonHugePages")).findFirst().orElse("?").replaceAll("\\s+", " ");
        } catch (Exception e) {
            return "?";
        }
    }

    /** The fio binary: {@code --fio PATH} (a machine without a system fio gets a carried one). */
    static String fioPath = "/usr/bin/fio";

    static double[] fio(Path file, int bs, boolean write, int qd, long size, int secs) throws Exception {
        Process p = new ProcessBuilder(fioPath, "--name=base", "--filename=" + file, "--rw=" + (write ? "write" : "read"),
                "--bs=" + bs, "--iodepth=" + qd, "--ioengine=io_uring", "--direct=1", "--size=" + size,
                "--runtime=" + secs, "--time_based", "--output-format=json").redirectErrorStream(false).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(secs + 60L, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("fio failed: " + new String(p.getErrorStream().readAllBytes()));
        }
        String s = new String(out);
        JsonNode job = M.readTree(s.substring(s.indexOf('{'))).path("jobs").get(0);
        JsonNode side = job.path(write ? "write" : "read");
        double bps = side.path("bw_bytes").asDouble();
        double runtimeS = side.path("runtime").asDouble() / 1000.0;
        double cpuS = (job.path("usr_cpu").asDouble() + job.path("sys_cpu").asDouble()) / 100.0 * runtimeS;
        double gb = side.path("io_bytes").asDouble() / 1e9;
        return new double[] {bps, cpuS / gb};
    }

    // ---- pooled placement -----------------------------------------------------------------------------------

    static String pool(Path dir, String throttles, int bs, int qd, int pairs) throws Exception {
        double[] limits = Arrays.stream(throttles.split(",")).mapToDouble(x -> Double.parseDouble(x) * 1e6).toArray();
        int n = limits.length;
        long slots = 256;
        List<Device> ds = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            FileDevice f = new FileDevice("d" + i, dir.resolve("pool").resolve("d" + i), slots, bs, AgentSetup.blockIo("auto", qd));
            ds.add(new ThrottledDevice(f, limits[i]));
        }
        double[] probed = new double[n];
        for (int i = 0; i < n; i++) {
            probed[i] = BandwidthProbe.probe(ds.get(i), 32L << 20).readBps();
        }
        List<DeviceWorker> ws = new ArrayList<>();
        for (Device d : ds) {
            ws.add(new DeviceWorker(d));
        }
        PooledTier tier = new PooledTier("nvme", BlockEvent.DISK, bs, ds, probed, ws);
        int blocks = (int) Math.min(slots * n / 2, 240);
        double[] ratio = new double[pairs], pooledBw = new double[pairs], sumBw = new double[pairs];
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] bufs = new MemorySegment[blocks];
            for (int i = 0; i < blocks; i++) {
                bufs[i] = a.allocate(bs, BlockIo.ALIGN);
                bufs[i].fill((byte) i);
            }
            long[] keys = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                keys[i] = 1000 + i;
            }
            tier.put(keys, bufs, false).join();
            long[] per = tier.blocksPerDevice();
            System.out.println("pool: probed " + Arrays.toString(Arrays.stream(probed).map(x -> Math.round(x / 1e6)).toArray())
                    + " MB/s, blocks per device " + Arrays.toString(per));
            for (int p = 0; p < pairs; p++) {
                // baseline: each device alone, reading as many of its slots as the pool will read in total
                double sum = 0;
                for (int d = 0; d < n; d++) {
                    int k = 32;
                    long[] sl = new long[k];
                    MemorySegment[] b = new MemorySegment[k];
                    for (int j = 0; j < k; j++) {
                        sl[j] = j;
                        b[j] = bufs[j];
                    }
                    long t0 = System.nanoTime();
                    ws.get(d).read(sl, b).join();
                    sum += (double) k * bs / ((System.nanoTime() - t0) / 1e9);
                }
                long t0 = System.nanoTime();
                boolean[] hit = tier.get(keys, bufs).join();
                double pooled = (double) blocks * bs / ((System.nanoTime() - t0) / 1e9);
                for (boolean h : hit) {
                    if (!h) {
                        throw new IllegalStateException("pool bench missed a block");
                    }
                }
                pooledBw[p] = pooled;
                sumBw[p] = sum;
                ratio[p] = pooled / sum;
                System.out.printf(Locale.ROOT, "pool pair %d: pooled %.0f MB/s, sum of devices %.0f MB/s, ratio %.2f%n",
                        p + 1, pooled / 1e6, sum / 1e6, ratio[p]);
            }
        }
        tier.close();
        return String.format(Locale.ROOT, "| pooled load, %d devices throttled to %s MB/s, %d MiB blocks | %.0f MB/s | sum %.0f MB/s | %.2f (%.2f–%.2f) | |",
                n, throttles, bs >> 20, median(pooledBw) / 1e6, median(sumBw) / 1e6, median(ratio), min(ratio), max(ratio));
    }

    // ---- start-up with a full slot table ---------------------------------------------------------------------

    /** A device of {@code slots} 256 KiB slots with a real slot table and no bytes: start-up cost is the table's. */
    record StandIn(String id, long slotCount, SlotTable slotTable) implements Device {
        @Override
        public int slotBytes() {
            return 256 << 10;
        }

        @Override
        public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
            boolean[] ok = new boolean[slots.length];
            Arrays.fill(ok, true);
            return ok;
        }

        @Override
        public void close() {
            slotTable.close();
        }
    }

    /**
     * How long an NVMe tier whose slot tables hold {@code blocks} kept blocks (over {@code devices} tables, chains of
     * 64 with parents, a random recency) takes to start, and its peak heap: the tables are read, every record
     * checked, the index rebuilt in LRU order, and the restart's {@code stored} runs computed in prefix order.
     */
    static void startup(Path dir, long blocks, int devices, int rounds) throws Exception {
        long per = blocks / devices;
        String identity = "bench-startup";
        java.util.Random rnd = new java.util.Random(1);
        for (int d = 0; d < devices; d++) {
            try (SlotTable t = SlotTable.open(dir.resolve("startup" + d + ".idx"), per, 256 << 10, identity)) {
                for (long s = 0; s < per; s++) {
                    long key = d * per + s;
                    t.set(s, key, (int) key, rnd.nextInt(1 << 30), s % 64 == 0 ? null : key - 1);
                }
            }
        }
        System.out.printf(Locale.ROOT, "startup: %d kept blocks over %d slot tables (%d MiB of tables)%n", blocks, devices,
                devices * (per * 32 >> 20));
        var pools = java.lang.management.ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == java.lang.management.MemoryType.HEAP).toList();
        for (int r = 0; r < rounds; r++) {
            System.gc();
            long base = pools.stream().mapToLong(p -> p.getUsage().getUsed()).sum();
            pools.forEach(java.lang.management.MemoryPoolMXBean::resetPeakUsage);
            long t0 = System.nanoTime();
            List<StandIn> devs = new ArrayList<>();
            for (int d = 0; d < devices; d++) {
                devs.add(new StandIn("nvme" + d, per, SlotTable.open(dir.resolve("startup" + d + ".idx"), per, 256 << 10,
                        identity)));
            }
            double[] bw = new double[devices];
            Arrays.fill(bw, 1);
            PooledTier tier = PooledTier.of("nvme", "disk", 256 << 10, devs, bw);
            long t1 = System.nanoTime();
            int runs = tier.keptInPrefixOrder().size();
            long t2 = System.nanoTime();
            long peak = pools.stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
            System.gc();
            long retained = pools.stream().mapToLong(p -> p.getUsage().getUsed()).sum() - base;
            System.out.printf(Locale.ROOT, "startup round %d: tier ready in %.2f s, prefix-order runs (%d) in %.2f s;"
                            + " heap peak %d MB above the start (a sum of per-pool peaks: an upper bound), retained %d MB%n",
                    r + 1, (t1 - t0) / 1e9, runs, (t2 - t1) / 1e9, (peak - base) >> 20, retained >> 20);
            tier.close();
        }
    }

    // ---- events ---------------------------------------------------------------------------------------------

    static String events(Path dir, Map<String, String> opt, int pairs) throws Exception {
        int eventsPerRun = Integer.parseInt(opt.getOrDefault("events", "1000000"));
        int maxEvents = Integer.parseInt(opt.getOrDefault("batch-events", "512"));
        boolean diskSpool = Boolean.parseBoolean(opt.getOrDefault("disk-spool", "true"));
        KafkaBroker broker = null;
        String bootstrap = opt.get("bootstrap");
        if (bootstrap == null) {
            broker = new KafkaBroker(Files.createTempDirectory(dir, "kafka"));
            broker.start();
            bootstrap = broker.bootstrapServers();
        }
        double[] ratio = new double[pairs], agentEps = new double[pairs], ppEps = new double[pairs];
        try {
            for (int p = 0; p < pairs; p++) {
                String topicA = Topics.BLOCKS + ".bench" + p, topicB = "pp.bench" + p;
                if (broker != null) {
                    broker.createTopics(topicA, topicB);
                }
                var producer = BlockEventPublisher.createProducer(bootstrap);
                long t0 = System.nanoTime();
                long recordBytes;
                long batches;
                // as shipped: the spool also on disk (--disk-spool false: memory only, as before)
                SpoolLog disk = diskSpool ? SpoolLog.open(Files.createTempDirectory(dir, "spool")) : null;
                try (BlockEventPublisher pub = new BlockEventPublisher(producer, topicA, "bench-agent", "bench", "default",
                        maxEvents, 20, 1_000_000, 0, null, disk)) {
                    for (int i = 0; i < eventsPerRun; i++) {
                        pub.publish(BlockEvent.stored(new long[] {i * 4L, i * 4L + 1, i * 4L + 2, i * 4L + 3}, (long) i,
                                16, BlockEvent.CPU, "host0", 4L << 18));
                    }
                    if (!pub.flush(120_000)) {
                        throw new IllegalStateException("events not flushed");
                    }
                    batches = pub.nextSeq();
                    recordBytes = 0;
                }
                double agentSecs = (System.nanoTime() - t0) / 1e9;
                agentEps[p] = eventsPerRun / agentSecs;
                // record size of one batch: measure it by encoding one
                List<BlockEvent> one = new ArrayList<>();
                for (int i = 0; i < maxEvents; i++) {
                    one.add(BlockEvent.stored(new long[] {i * 4L, i * 4L + 1, i * 4L + 2, i * 4L + 3}, (long) i, 16,
                            BlockEvent.CPU, "host0", 4L << 18));
                }
                recordBytes = dev.kvpool.api.events.EventCodec.toJson(new dev.kvpool.api.events.BlockBatch("bench-agent",
                        "bench", "default", 1, System.currentTimeMillis(), one)).length;
                double ppRecordsPerSec = producerPerformance(bootstrap, topicB, batches, (int) recordBytes);
                double eventsPerRecord = (double) eventsPerRun / batches;
                ppEps[p] = ppRecordsPerSec * eventsPerRecord;
                ratio[p] = agentEps[p] / ppEps[p];
                System.out.printf(Locale.ROOT, "events pair %d: agent %.0f events/s (%d batches of ~%.0f events, %d B), ProducerPerformance %.0f records/s = %.0f events/s, ratio %.2f%n",
                        p + 1, agentEps[p], batches, eventsPerRecord, recordBytes, ppRecordsPerSec, ppEps[p], ratio[p]);
            }
        } finally {
            if (broker != null) {
                broker.stop();
            }
        }
        return String.format(Locale.ROOT, "| kvpool.blocks events/s (batches of ≤%d events, spool %s) | %.0f | ProducerPerformance %.0f | %.2f (%.2f–%.2f) | |",
                maxEvents, diskSpool ? "on disk" : "in memory", median(agentEps), median(ppEps), median(ratio), min(ratio), max(ratio));
    }

    /** Kafka's ProducerPerformance in a child JVM (this JVM's class path has kafka-tools): records/s. */
    static double producerPerformance(String bootstrap, String topic, long records, int recordSize) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", Long.toString(records),
                "--record-size", Integer.toString(recordSize), "--throughput", "-1", "--producer-props",
                "bootstrap.servers=" + bootstrap, "acks=all", "enable.idempotence=true", "linger.ms=5",
                "compression.type=none", "max.in.flight.requests.per.connection=5")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor(300, TimeUnit.SECONDS);
        // final line: "N records sent, X records/sec (Y MB/sec), ..."
        Matcher m = Pattern.compile("(\\d+) records sent, ([0-9.]+) records/sec").matcher(out);
        double last = -1;
        while (m.find()) {
            last = Double.parseDouble(m.group(2));
        }
        if (last < 0) {
            throw new IllegalStateException("ProducerPerformance output not understood:\n" + out);
        }
        return last;
    }

    // ---- helpers --------------------------------------------------------------------------------------------

    static double median(double[] a) {
        double[] s = a.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static double min(double[] a) {
        return Arrays.stream(a).min().orElse(0);
    }

    static double max(double[] a) {
        return Arrays.stream(a).max().orElse(0);
    }

    static String cp() {
        return System.getProperty("java.class.path").replace(File.pathSeparatorChar, '\n');
    }
}
