package dev.kvpool.bench;

import dev.kvpool.engine.view.EngineView;
import dev.kvpool.engine.view.IndexedEngineView;
import dev.kvpool.engine.view.MapWalkEngineView;
import dev.kvpool.engine.view.PrefixScores;
import dev.kvpool.engine.view.TierWeights;
import dev.kvpool.meta.sim.MooncakeTrace;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * {@code engine-score}: prefix scoring of the engine view a router calls on its request path —
 * {@link IndexedEngineView} against {@link MapWalkEngineView} (a {@code HashSet<Long>} per pod and tier, walked pod by
 * pod), same data, same prompts, same JVM, warmed up, A/B alternated by passes over all prompts.
 *
 * <p>Setup (all seeded): the Mooncake conversation trace; each request's {@code hash_ids} (512-token blocks, chained:
 * equal ids = equal prefixes) become 32 keys each (16-token blocks, vLLM's default), then the prompt is cut or
 * extended to {@code --blocks} keys with keys unique to the request (its own continuation). The first
 * {@code 1 - holdout} of the trace is routed to {@code --pods} pods, prefix-aware: a request whose first two
 * hash_ids were seen goes to that conversation's pod, a new one to the less loaded of two random pods. Each pod holds
 * its requests' prompts: on {@code gpu} the blocks of its last {@code --gpu-requests} requests, on {@code cpu}
 * (offloaded copies) the blocks of all but its last {@code --cpu-lag}; so recent blocks are gpu-only, middle ones on
 * both tiers, old ones cpu-only, and the shared system-prompt blocks are on most pods. The held-out last requests
 * are the prompts scored (what a router sees next: follow-up turns and new conversations).
 */
final class EngineScoreBench {
    private EngineScoreBench() {
    }

    private static final String INSTANCE = "bench-model";

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        int pods = o.integer("pods", 1000);
        int blocks = o.integer("blocks", 1024);
        int rounds = o.integer("rounds", 5);
        int warmup = o.integer("warmup", 3);
        int gpuRequests = o.integer("gpu-requests", 8);
        int cpuLag = o.integer("cpu-lag", 2);
        double holdout = o.number("holdout", 0.1);
        int limit = o.integer("limit", Integer.MAX_VALUE);
        long seed = o.integer("seed", 36);
        Path trace = opt.containsKey("trace") ? Path.of(opt.get("trace")) : MooncakeTrace.conversation();
        if (pods < 1 || blocks < 1 || rounds < 1 || warmup < 0 || gpuRequests < 0 || cpuLag < 0
                || !(holdout > 0 && holdout < 1)) {
            throw new IllegalArgumentException("need --pods, --blocks, --rounds >= 1, --warmup, --gpu-requests, "
                    + "--cpu-lag >= 0 and 0 < --holdout < 1");
        }
        List<MooncakeTrace.Request> reqs = MooncakeTrace.read(trace, limit);
        int indexed = (int) Math.round(reqs.size() * (1 - holdout));
        System.out.printf(Locale.ROOT, "engine-score: %s, %d requests (%d indexed, %d scored), %d pods, %d-block "
                + "prompts, gpu = last %d requests per pod, cpu = all but last %d; JVM %s, max heap %,d MiB%n",
                trace.getFileName(), reqs.size(), indexed, reqs.size() - indexed, pods, blocks, gpuRequests, cpuLag,
                Runtime.version(), Runtime.getRuntime().maxMemory() >> 20);

        // route the indexed requests
        SplittableRandom rnd = new SplittableRandom(seed);
        Map<Long, Integer> conversation = new HashMap<>();
        int[] load = new int[pods];
        List<List<Integer>> perPod = new ArrayList<>();
        for (int p = 0; p < pods; p++) {
            perPod.add(new ArrayList<>());
        }
        for (int r = 0; r < indexed; r++) {
            long[] ids = reqs.get(r).hashIds();
            long conv = ids.length == 0 ? -r - 1 : ids.length == 1 ? ids[0] : ids[0] * 1_000_003L + ids[1];
            Integer p = conversation.get(conv);
            if (p == null) {
                int a = rnd.nextInt(pods);
                int b = rnd.nextInt(pods);
                p = load[a] <= load[b] ? a : b;
                conversation.put(conv, p);
            }
            load[p]++;
            perPod.get(p).add(r);
        }

        // each pod's tiers, and the (key, pod) / (key, pod, tier) entry counts
        List<Map<String, long[]>> contents = new ArrayList<>();
        long pairs = 0;
        long triples = 0;
        for (int p = 0; p < pods; p++) {
            List<Integer> mine = perPod.get(p);
            Set<Long> gpu = new HashSet<>();
            Set<Long> cpu = new HashSet<>();
            for (int i = 0; i < mine.size(); i++) {
                long[] k = prompt(reqs.get(mine.get(i)).hashIds(), mine.get(i), blocks);
                boolean onGpu = i >= mine.size() - gpuRequests;
                boolean onCpu = i < mine.size() - cpuLag;
                for (long key : k) {
                    if (onGpu) {
                        gpu.add(key);
                    }
                    if (onCpu) {
                        cpu.add(key);
                    }
                }
            }
            Set<Long> union = new HashSet<>(gpu);
            union.addAll(cpu);
            pairs += union.size();
            triples += gpu.size() + cpu.size();
            contents.add(Map.of("gpu", unbox(gpu), "cpu", unbox(cpu)));
        }
        List<long[]> prompts = new ArrayList<>();
        for (int r = indexed; r < reqs.size(); r++) {
            prompts.add(prompt(reqs.get(r).hashIds(), r, blocks));
        }
        reqs = null;
        conversation = null;
        System.out.printf(Locale.ROOT, "indexed: %,d (key, pod) entries, %,d (key, pod, tier) entries; busiest pod "
                + "%d requests%n", pairs, triples, Arrays.stream(load).max().orElse(0));

        // build each view alone and measure its heap
        MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
        long h0 = usedAfterGc(mx);
        long t0 = System.nanoTime();
        IndexedEngineView indexedView = new IndexedEngineView();
        fill(indexedView, contents);
        long buildIndexed = System.nanoTime() - t0;
        long h1 = usedAfterGc(mx);
        t0 = System.nanoTime();
        MapWalkEngineView mapView = new MapWalkEngineView();
        fill(mapView, contents);
        long buildMap = System.nanoTime() - t0;
        long h2 = usedAfterGc(mx);
        contents = null;
        long heapIndexed = h1 - h0;
        long heapMap = h2 - h1;
        System.out.printf(Locale.ROOT, "build: indexed %.2f s, map walk %.2f s; distinct keys %,d%n",
                buildIndexed / 1e9, buildMap / 1e9, indexedView.keyCount(INSTANCE));
        System.out.printf(Locale.ROOT, "heap (used after GC, delta): indexed %,d B = %.1f B per (key,pod) entry, "
                + "%.1f B per (key,pod,tier); table estimate %.1f B per (key,pod)%n", heapIndexed,
                heapIndexed / (double) pairs, heapIndexed / (double) triples,
                indexedView.tableBytes(INSTANCE) / (double) pairs);
        System.out.printf(Locale.ROOT, "heap (used after GC, delta): map walk %,d B = %.1f B per (key,pod) entry, "
                + "%.1f B per (key,pod,tier); ratio map walk / indexed %.2fx%n", heapMap, heapMap / (double) pairs,
                heapMap / (double) triples, heapMap / (double) heapIndexed);

        // same answers, and what the prompts look like
        long candidates = 0;
        long longest = 0;
        for (long[] p : prompts) {
            PrefixScores a = indexedView.score(INSTANCE, p, TierWeights.LLM_D);
            PrefixScores b = mapView.score(INSTANCE, p, TierWeights.LLM_D);
            if (!a.equals(b)) {
                throw new IllegalStateException("indexed and map-walk scores differ for a prompt");
            }
            candidates += a.pods().size();
            longest += a.pods().isEmpty() ? 0 : a.pods().get(0).longestPrefix();
        }
        System.out.printf(Locale.ROOT, "prompts: %d, pods scored per prompt %.1f (mean), best prefix %.1f blocks "
                + "(mean); scores identical%n", prompts.size(), candidates / (double) prompts.size(),
                longest / (double) prompts.size());

        for (int w = 0; w < warmup; w++) {
            for (long[] p : prompts) {
                indexedView.score(INSTANCE, p, TierWeights.LLM_D);
                mapView.score(INSTANCE, p, TierWeights.LLM_D);
            }
        }
        // A/B by passes: each round scores every prompt on one view, then on the other, the order flipped each round.
        // (Interleaving per prompt would let the map walk's ~1 GB of sets evict the indexed table from the CPU
        // caches between two indexed calls, which a router's request path does not do.)
        Stats si = new Stats();
        Stats sm = new Stats();
        List<Double> p50Ratios = new ArrayList<>();
        long sink = 0;
        for (int round = 0; round < rounds; round++) {
            Stats ri = new Stats();
            Stats rm = new Stats();
            for (int k = 0; k < 2; k++) {
                boolean idx = (round & 1) == k;
                EngineView v = idx ? indexedView : mapView;
                for (long[] p : prompts) {
                    long s = System.nanoTime();
                    PrefixScores r = v.score(INSTANCE, p, TierWeights.LLM_D);
                    long e = System.nanoTime() - s;
                    sink += r.pods().size();
                    (idx ? si : sm).add(e);
                    (idx ? ri : rm).add(e);
                }
            }
            p50Ratios.add(rm.pctMicros(50) / ri.pctMicros(50));
            System.out.printf(Locale.ROOT, "  round %d: indexed p50 %.1f us, map walk p50 %.1f us, ratio %.1fx%n",
                    round + 1, ri.pctMicros(50), rm.pctMicros(50), p50Ratios.getLast());
        }
        System.out.println(si.line("indexed") + String.format(Locale.ROOT, "  mean=%9.1f us", mean(si)));
        System.out.println(sm.line("map walk") + String.format(Locale.ROOT, "  mean=%9.1f us", mean(sm)));
        p50Ratios.sort(Double::compare);
        System.out.printf(Locale.ROOT, "ratio map walk / indexed: p50 %.1fx, p99 %.1fx, mean %.1fx; median of the "
                + "per-round p50 ratios %.1fx  (sink %d)%n", sm.pctMicros(50) / si.pctMicros(50),
                sm.pctMicros(99) / si.pctMicros(99), mean(sm) / mean(si), p50Ratios.get(p50Ratios.size() / 2), sink);
        java.lang.ref.Reference.reachabilityFence(indexedView);
        java.lang.ref.Reference.reachabilityFence(mapView);
    }

    static double mean(Stats s) {
        return s.totalSeconds() * 1e6 / s.count();
    }

    static void fill(EngineView v, List<Map<String, long[]>> contents) {
        for (int p = 0; p < contents.size(); p++) {
            v.replace(INSTANCE, "pod-" + p, contents.get(p));
        }
    }

    /** 32 keys per Mooncake block (16-token blocks), then keys unique to the request, {@code blocks} in all. */
    static long[] prompt(long[] hashIds, int request, int blocks) {
        long[] k = new long[blocks];
        for (int i = 0; i < blocks; i++) {
            int b = i / 32;
            k[i] = b < hashIds.length ? mix(hashIds[b] * 32 + (i % 32)) : mix(~(((long) request << 20) | i));
        }
        return k;
    }

    static long mix(long z) {
        z += 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long[] unbox(Set<Long> s) {
        long[] a = new long[s.size()];
        int i = 0;
        for (long k : s) {
            a[i++] = k;
        }
        return a;
    }

    private static long usedAfterGc(MemoryMXBean mx) throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return mx.getHeapMemoryUsage().getUsed();
    }
}
