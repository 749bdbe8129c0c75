package dev.kvpool.bench.agent;

import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.pool.Layout;
import dev.kvpool.agent.store.AgentSetup;
import dev.kvpool.agent.store.BlockStore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./kvpool bench agent layerwise}: a load of {@code --blocks} blocks (1,024) of {@code --layers} layers (64)
 * from the NVMe tier and from the host pool, delivered layer by layer ({@link BlockStore#loadLayerwise}, the layered
 * layout): time to the first layer and to the whole load, against the same blocks loaded whole ({@link
 * BlockStore#load}) from the same store, and from a store of today's contiguous layout, in the same run, alternated
 * (A B, B A, ...), medians. NVMe runs start with the blocks in the NVMe tier only (removed from the host pool, where
 * every load promotes them); each run checks the loaded bytes.
 */
public final class LayerwiseBench {
    private LayerwiseBench() {
    }

    record Run(double firstMs, double allMs) {
    }

    public static List<String> run(Map<String, String> opt, Path dir, int pairs) throws Exception {
        int blocks = Integer.parseInt(opt.getOrDefault("blocks", "1024"));
        int layers = Integer.parseInt(opt.getOrDefault("layers", "64"));
        int qd = Integer.parseInt(opt.getOrDefault("qd", "8"));
        List<String> rows = new ArrayList<>();
        for (String kib : opt.getOrDefault("bs", "256").split(",")) {
            int bs = Integer.parseInt(kib) << 10;
            rows.addAll(run(dir, bs, blocks, layers, qd, pairs));
        }
        System.out.println();
        System.out.println("| source | block / layer | layer-wise: first layer | layer-wise: whole | whole load, layered"
                + " | whole load, contiguous | first layer / contiguous whole | layer-wise whole / contiguous whole |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        rows.forEach(System.out::println);
        return rows;
    }

    static BlockStore store(Path dir, String name, int bs, int blocks, int qd, Layout layout) throws Exception {
        Path d = dir.resolve(name);
        if (Files.exists(d)) {
            try (var w = Files.walk(d)) {
                w.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        long bytes = (long) blocks * bs;
        var s = AgentSetup.Settings.defaults(d).withBlock(bs, 2, bytes / 2 + 8L * bs)
                .withNvme(List.of(d.resolve("nvme0")), bytes + 16L * bs)
                .withIo("auto", qd, List.of(1000.0), List.of());
        return AgentSetup.build(s, EventSink.NONE, layout).store();
    }

    static List<String> run(Path dir, int bs, int blocks, int layers, int qd, int pairs) throws Exception {
        List<String> rows = new ArrayList<>();
        try (Arena a = Arena.ofShared();
             BlockStore layered = store(dir, "layered", bs, blocks, qd, Layout.of("layered", layers, bs));
             BlockStore contiguous = store(dir, "contiguous", bs, blocks, qd, Layout.CONTIGUOUS)) {
            MemorySegment src = a.allocate((long) blocks * bs, 4096), dst = a.allocate((long) blocks * bs, 4096);
            java.util.Random r = new java.util.Random(1);
            for (long o = 0; o < src.byteSize(); o += 8) {
                src.set(ValueLayout.JAVA_LONG, o, r.nextLong());
            }
            long[] keys = new long[blocks];
            MemorySegment[] in = new MemorySegment[blocks], out = new MemorySegment[blocks];
            for (int i = 0; i < blocks; i++) {
                keys[i] = 1_000_000L + i;
                in[i] = src.asSlice((long) i * bs, bs);
                out[i] = dst.asSlice((long) i * bs, bs);
            }
            for (BlockStore s : List.of(layered, contiguous)) {
                for (int from = 0; from < blocks; from += 256) { // the host pool holds them all; saves of 64 MiB
                    int to = Math.min(blocks, from + 256);
                    boolean[] ok = s.save(Arrays.copyOfRange(keys, from, to), Arrays.copyOfRange(in, from, to), null);
                    for (boolean b : ok) {
                        if (!b) {
                            throw new IllegalStateException("save failed: host pool too small?");
                        }
                    }
                }
                s.awaitWriteBehind();
                if (s.nvme().size() != blocks) {
                    throw new IllegalStateException("NVMe tier holds " + s.nvme().size() + " of " + blocks);
                }
            }
            for (String source : List.of("nvme", "host")) {
                List<Run> lw = new ArrayList<>(), wl = new ArrayList<>(), wc = new ArrayList<>();
                for (int p = 0; p < pairs + 1; p++) { // pair 0 warms up (JIT, first touch) and is not counted
                    boolean lwFirst = p % 2 == 0;
                    for (int k = 0; k < 3; k++) {
                        int which = lwFirst ? k : 2 - k;
                        BlockStore s = which == 2 ? contiguous : layered;
                        if (source.equals("nvme")) {
                            for (long key : keys) {
                                s.host().remove(key);
                            }
                        }
                        dst.fill((byte) 0);
                        Run run = which == 0 ? layerwise(s, keys, out, layers) : whole(s, keys, out);
                        if (dst.mismatch(src) >= 0) {
                            throw new IllegalStateException("loaded bytes differ from the saved ones");
                        }
                        if (p > 0) {
                            (which == 0 ? lw : which == 1 ? wl : wc).add(run);
                        }
                    }
                }
                double first = median(lw, true), all = median(lw, false), wLay = median(wl, false),
                        wCon = median(wc, false);
                String row = String.format(Locale.ROOT, "| %s | %d KiB / %d KiB | %.1f ms | %.1f ms | %.1f ms | %.1f ms"
                                + " | %.3f | %.2f |", source, bs >> 10, (bs / layers) >> 10, first, all, wLay, wCon,
                        first / wCon, all / wCon);
                System.out.println(row + "   (" + pairs + " pairs; per run ms: layer-wise " + lw + ", whole layered "
                        + wl + ", whole contiguous " + wc + ")");
                rows.add(row);
            }
        }
        return rows;
    }

    static Run layerwise(BlockStore s, long[] keys, MemorySegment[] out, int layers) {
        long t0 = System.nanoTime();
        long[] first = {0};
        int[] told = {0};
        BlockStore.LoadResult r = s.loadLayerwise(keys, out, (l, missing) -> {
            if (l == 0) {
                first[0] = System.nanoTime();
            }
            if (missing.length != 0 || l != told[0]++) {
                throw new IllegalStateException("layer " + l + ": missing " + Arrays.toString(missing));
            }
        });
        long t1 = System.nanoTime();
        if (r.hits() != keys.length || told[0] != layers) {
            throw new IllegalStateException("layer-wise load: " + r.hits() + " hits, " + told[0] + " layers");
        }
        return new Run((first[0] - t0) / 1e6, (t1 - t0) / 1e6);
    }

    static Run whole(BlockStore s, long[] keys, MemorySegment[] out) {
        long t0 = System.nanoTime();
        BlockStore.LoadResult r = s.load(keys, out);
        long t1 = System.nanoTime();
        if (r.hits() != keys.length) {
            throw new IllegalStateException("load: " + r.hits() + " hits of " + keys.length);
        }
        return new Run((t1 - t0) / 1e6, (t1 - t0) / 1e6);
    }

    static double median(List<Run> runs, boolean first) {
        double[] v = runs.stream().mapToDouble(x -> first ? x.firstMs() : x.allMs()).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
