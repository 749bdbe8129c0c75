package dev.kvpool.bench;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * Restart of the embedded index against reading its files' bytes, in the same run (issue 39).
 *
 * <p>A child JVM fills a directory-backed store (16 shards, one location and one spec per block, startWrite +
 * finishWrite in batches — the journal is written as in service), snapshots it, writes a journal tail and dies with
 * {@code Runtime.halt} (what kill -9 leaves). Then, for that crash state and for the state a clean close leaves, the
 * parent times a sequential read of every file in the directory (8 MiB reads; warm: the second of two passes; cold:
 * after dropping the page cache, where the machine lets it) and a child JVM's {@code new EmbeddedStore} over the same
 * files, warm and cold. The child also checks a million random keys, times their lookups and reports heap bytes per
 * block after a full GC.
 *
 * <pre>
 *   ./kvpool bench index-restart --blocks 10000000 [--tail 500000] [--dir /var/tmp/kvpool-restart]
 * </pre>
 */
public final class IndexRestartBench {
    private static final int SHARDS = 16;
    private static final int BATCH = 4096;

    private IndexRestartBench() {
    }

    static long key(long seq) {
        return IndexFill.key(seq);
    }

    static long wordB(long seq) {
        return IndexFill.wordB(seq);
    }

    private static void insert(InstanceIndex idx, long from, long count) {
        IndexFill.insert(idx, from, count, BATCH);
    }

    public static void run(Map<String, String> opt) throws Exception {
        long blocks = Long.parseLong(opt.getOrDefault("blocks", "10000000").replace("_", ""));
        long tail = Long.parseLong(opt.getOrDefault("tail", String.valueOf(Math.min(500_000, blocks / 20))));
        Path dir = Path.of(opt.getOrDefault("dir", "/var/tmp/kvpool-index-restart-" + blocks));
        // the tables (≤ 64 B/block) twice (the floor measured beside them), a shard's snapshot copy, slack
        long heapMb = Math.max(2048, (blocks + tail) * 150 / (1 << 20) + 1536);
        deleteDir(dir);
        Files.createDirectories(dir);
        System.out.printf("index-restart: %,d blocks + a journal tail of %,d, %d shards, dir %s, child heap %,d MiB, "
                + "%d cores%n", blocks, tail, SHARDS, dir, heapMb, Runtime.getRuntime().availableProcessors());
        Map<String, String> fill = child(heapMb, "fill", dir, blocks, tail, false);
        System.out.printf("  fill: %s blocks/s through startWrite+finishWrite; snapshot of %s blocks written in %s ms "
                + "(%s MB); tail %s blocks%n", fill.get("fill_rate"), fill.get("snap_blocks"), fill.get("snap_ms"),
                fill.get("snap_mb"), fill.get("tail"));
        List<String[]> rows = new ArrayList<>();
        measure("after kill -9 (snapshot + journal tail)", dir, heapMb, blocks + tail, rows, true);
        measure("after a clean stop (close wrote a snapshot)", dir, heapMb, blocks + tail, rows, false);
        System.out.println();
        System.out.println("| state | files | read warm | load warm | ratio | read cold | load cold | ratio | heap/block | floor |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|");
        rows.forEach(r -> System.out.println("| " + String.join(" | ", r) + " |"));
        deleteDir(dir);
    }

    private static void measure(String state, Path dir, long heapMb, long blocks, List<String[]> rows,
                                boolean thenClose) throws Exception {
        long bytes = dirBytes(dir);
        System.out.printf("%n%s: %s in %d files%n", state, mb(bytes), fileCount(dir));
        readAll(dir);
        double readWarm = readAll(dir);
        Map<String, String> warm = child(heapMb, "open", dir, blocks, 0, false);
        print("warm", readWarm, warm);
        boolean cold = dropCaches();
        double readCold = Double.NaN;
        Map<String, String> coldOpen = null;
        if (cold) {
            readCold = readAll(dir);
            dropCaches();
            coldOpen = child(heapMb, "open", dir, blocks, 0, false);
            print("cold", readCold, coldOpen);
        } else {
            System.out.println("  cold: the page cache cannot be dropped here (not root); warm only");
        }
        rows.add(new String[] {state, mb(bytes), ms(readWarm), warm.get("load_ms") + " ms",
                ratio(Double.parseDouble(warm.get("load_ms")), readWarm), cold ? ms(readCold) : "n/a",
                cold ? coldOpen.get("load_ms") + " ms" : "n/a",
                cold ? ratio(Double.parseDouble(coldOpen.get("load_ms")), readCold) : "n/a",
                warm.get("heap_per_block") + " B", warm.get("floor_ms") + " ms"});
        if (thenClose) {
            Map<String, String> closed = child(heapMb, "open", dir, blocks, 0, true);
            System.out.printf("  a clean close of that store took %s ms (snapshot on close)%n", closed.get("close_ms"));
        }
    }

    private static void print(String how, double readMs, Map<String, String> r) {
        System.out.printf("  %s: read %s, load %s ms (ratio %s); %s keys; 1 M random lookups %s ms, all found with "
                        + "their words: %s; heap %s B/block (%s MiB); floor: new arrays of the tables' %s MiB "
                        + "written once %s ms%n", how, ms(readMs), r.get("load_ms"),
                ratio(Double.parseDouble(r.get("load_ms")), readMs), r.get("keys"), r.get("lookup_ms"),
                r.get("verified"), r.get("heap_per_block"), r.get("heap_mb"), r.get("floor_mb"), r.get("floor_ms"));
    }

    private static String ratio(double load, double read) {
        return String.format("%.2f×", load / read);
    }

    private static String ms(double v) {
        return String.format("%.0f ms", v);
    }

    private static String mb(long bytes) {
        return String.format("%,.0f MB", bytes / 1e6);
    }

    private static boolean dropCaches() {
        try {
            Process p = new ProcessBuilder("sh", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches").start();
            return p.waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** The baseline: every file of the directory read front to back in 8 MiB reads; milliseconds. */
    static double readAll(Path dir) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(8 << 20);
        long t0 = System.nanoTime();
        long total = 0;
        for (Path p : files(dir)) {
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                for (int r; (r = ch.read(buf.clear())) >= 0; ) {
                    total += r;
                }
            }
        }
        double ms = (System.nanoTime() - t0) / 1e6;
        if (total != dirBytes(dir)) {
            throw new IOException("read " + total + " bytes of " + dirBytes(dir));
        }
        return ms;
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).sorted().toList();
        }
    }

    private static long dirBytes(Path dir) throws IOException {
        long n = 0;
        for (Path p : files(dir)) {
            n += Files.size(p);
        }
        return n;
    }

    private static int fileCount(Path dir) throws IOException {
        return files(dir).size();
    }

    private static void deleteDir(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        for (Path p : files(dir)) {
            Files.delete(p);
        }
        Files.delete(dir);
    }

    private static Map<String, String> child(long heapMb, String mode, Path dir, long blocks, long tail, boolean close)
            throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = List.of(java, "-Xmx" + heapMb + "m", "-Xms" + heapMb + "m", "-XX:+UseParallelGC",
                "-Djava.util.logging.manager=org.jboss.logmanager.LogManager",
                "-cp", System.getProperty("java.class.path"), IndexRestartBench.class.getName(), mode, dir.toString(),
                String.valueOf(blocks), String.valueOf(tail), String.valueOf(close));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Map<String, String> out = new LinkedHashMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith("result ")) {
                    String[] kv = line.substring(7).split("=", 2);
                    out.put(kv[0], kv[1]);
                } else if (line.startsWith("  ") || line.contains("ERROR") || line.contains("Exception")) {
                    System.out.println("   [" + mode + "] " + line.strip());
                }
            }
        }
        int rc = p.waitFor();
        if (rc != 0 || !out.containsKey("done")) {
            throw new IllegalStateException("child " + mode + " failed (exit " + rc + "): " + out);
        }
        return out;
    }

    private static void result(String k, Object v) {
        System.out.println("result " + k + "=" + v);
    }

    /** Child JVM: {@code fill|open dir blocks tail close}. */
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        long blocks = Long.parseLong(args[2]);
        long tail = Long.parseLong(args[3]);
        boolean close = Boolean.parseBoolean(args[4]);
        EmbeddedStore.Options options = new EmbeddedStore.Options(dir, SHARDS, false, Duration.ofSeconds(1),
                Long.MAX_VALUE); // no background snapshot: the run decides when
        MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
        if (mode.equals("fill")) {
            EmbeddedStore store = new EmbeddedStore(options);
            InstanceIndex idx = store.index("bench");
            long t0 = System.nanoTime();
            insert(idx, 0, blocks);
            double s = (System.nanoTime() - t0) / 1e9;
            result("fill_rate", String.format("%,.0f", blocks / s));
            long t1 = System.nanoTime();
            store.snapshot();
            result("snap_ms", (System.nanoTime() - t1) / 1_000_000);
            result("snap_blocks", String.format("%,d", blocks));
            result("snap_mb", String.format("%,.0f", dirBytes(dir) / 1e6));
            insert(idx, blocks, tail);
            store.sync();
            result("tail", String.format("%,d", tail));
            result("done", "1");
            System.out.flush();
            Runtime.getRuntime().halt(0); // what kill -9 leaves: appended, not closed
        }
        // the plane has its logging and classes up before it opens the store: so does this child, on a tiny store
        // elsewhere, so that what is timed below is the load, not the JVM's first use of these classes
        Path warm = Files.createTempDirectory("kvpool-index-warm");
        EmbeddedStore tiny = new EmbeddedStore(new EmbeddedStore.Options(warm, SHARDS, false, Duration.ofSeconds(1),
                Long.MAX_VALUE));
        insert(tiny.index("warm"), 0, 10_000);
        tiny.snapshot();
        tiny.close();
        new EmbeddedStore(new EmbeddedStore.Options(warm, SHARDS, false, Duration.ofSeconds(1), Long.MAX_VALUE)).close();
        long heap0 = usedAfterGc(mx);
        long t0 = System.nanoTime();
        EmbeddedStore store = new EmbeddedStore(options);
        long loadNs = System.nanoTime() - t0;
        long heap1 = usedAfterGc(mx);
        InstanceIndex idx = store.existing("bench");
        result("load_ms", loadNs / 1_000_000);
        result("keys", String.format("%,d", idx.keyCount()));
        result("heap_per_block", String.format("%.1f", (heap1 - heap0) / (double) idx.keyCount()));
        result("heap_mb", String.format("%,d", (heap1 - heap0) >> 20));
        // a million random keys of what was written: present, SERVING, with the word B they were written with
        SplittableRandom rnd = new SplittableRandom(7);
        int n = 1_000_000;
        long[] seqs = new long[n], keys = new long[n];
        for (int i = 0; i < n; i++) {
            seqs[i] = rnd.nextLong(blocks);
            keys[i] = key(seqs[i]);
        }
        Block[] out = new Block[1024];
        boolean ok = idx.keyCount() == blocks;
        long t1 = System.nanoTime();
        for (int off = 0; off < n; off += out.length) {
            int len = Math.min(out.length, n - off);
            idx.getAll(keys, off, len, out);
            for (int i = 0; i < len; i++) {
                Block b = out[i];
                ok &= b != null && b.size() == 1 && Loc.status(b.a(0)) == Loc.SERVING && b.b(0) == wordB(seqs[off + i]);
            }
        }
        result("lookup_ms", (System.nanoTime() - t1) / 1_000_000);
        result("verified", ok);
        // the floor of any load into the heap: new arrays of the tables' size (zeroed by the JVM, their pages
        // faulted in by the OS) written once — what the load must do beyond reading, measured here
        long words = store.heapBytes() / 8;
        long t3 = System.nanoTime();
        List<long[]> floor = new ArrayList<>();
        for (long left = words; left > 0; left -= 1 << 26) {
            long[] w = new long[(int) Math.min(1 << 26, left)];
            Arrays.fill(w, 1L);
            floor.add(w);
        }
        result("floor_ms", (System.nanoTime() - t3) / 1_000_000);
        result("floor_mb", words * 8 >> 20);
        floor.clear();
        if (close) {
            long t2 = System.nanoTime();
            store.close();
            result("close_ms", (System.nanoTime() - t2) / 1_000_000);
        }
        result("done", "1");
        System.out.flush();
        System.exit(0); // the store is not closed unless asked (no snapshot on close); a profiler can dump
    }

    private static long usedAfterGc(MemoryMXBean mx) {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return mx.getHeapMemoryUsage().getUsed();
    }
}
