package dev.kvpool.engine.view;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IndexedEngineViewTest {

    static final String[] TIERS = {"gpu", "cpu", "GPU", "disk", null, "CPU_TIER1"};
    static final TierWeights[] WEIGHTS = {TierWeights.LLM_D, new TierWeights(Map.of("gpu", 0.0, "cpu", 0.0), 0.0),
        new TierWeights(Map.of("gpu", 2.0, "disk", 0.25), 0.5), new TierWeights(Map.of(), 1.0)};

    /** Keys of documents (chains) so that prefixes are long and shared, plus random noise keys. */
    static long[][] documents(Random r) {
        long[][] docs = new long[6][];
        for (int d = 0; d < docs.length; d++) {
            docs[d] = new long[40];
            for (int i = 0; i < 40; i++) {
                // documents 0-2 share their first 10 blocks (a system prompt); keys include 0, negatives
                docs[d][i] = d < 3 && i < 10 ? i * 0x9E3779B97F4A7C15L : (d * 1000L + i) * (r.nextBoolean() ? 1 : -1);
            }
        }
        return docs;
    }

    static long[] slice(Random r, long[][] docs) {
        if (r.nextInt(10) == 0) { // random keys, some from documents
            long[] k = new long[r.nextInt(6)];
            for (int i = 0; i < k.length; i++) {
                k[i] = r.nextBoolean() ? docs[r.nextInt(docs.length)][r.nextInt(40)] : r.nextInt(20);
            }
            return k;
        }
        long[] d = docs[r.nextInt(docs.length)];
        int from = r.nextInt(4) == 0 ? r.nextInt(40) : 0;
        int to = from + r.nextInt(40 - from + 1);
        long[] k = new long[to - from];
        System.arraycopy(d, from, k, 0, k.length);
        return k;
    }

    static long[] prompt(Random r, long[][] docs) {
        long[] d = docs[r.nextInt(docs.length)];
        int n = r.nextInt(45);
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = i < 40 && r.nextInt(30) != 0 ? d[i] : r.nextInt(5);
        }
        return k;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 36, 4242})
    void randomizedEquivalenceWithTheMapWalk(long seed) {
        Random r = new Random(seed);
        long[][] docs = documents(r);
        MapWalkEngineView oracle = new MapWalkEngineView();
        IndexedEngineView view = new IndexedEngineView();
        String[] instances = {"m1", "m2"};
        int pods = 3 + r.nextInt(12);
        int scores = 0;
        for (int op = 0; op < 6000; op++) {
            String in = instances[r.nextInt(10) == 0 ? 1 : 0];
            String pod = "pod-" + r.nextInt(pods);
            String tier = TIERS[r.nextInt(TIERS.length)];
            int kind = r.nextInt(100);
            String what;
            if (kind < 40) {
                long[] k = slice(r, docs);
                oracle.store(in, pod, tier, k);
                view.store(in, pod, tier, k);
                what = "store";
            } else if (kind < 55) {
                long[] k = slice(r, docs);
                oracle.remove(in, pod, tier, k);
                view.remove(in, pod, tier, k);
                what = "remove";
            } else if (kind < 58) {
                Map<String, long[]> snap = new HashMap<>();
                for (int t = r.nextInt(3); t > 0; t--) {
                    snap.put(TIERS[r.nextInt(TIERS.length - 1)], slice(r, docs));
                }
                oracle.replace(in, pod, snap);
                view.replace(in, pod, snap);
                what = "replace";
            } else if (kind < 61) {
                oracle.clearPod(in, pod);
                view.clearPod(in, pod);
                what = "clearPod";
            } else if (kind < 66) {
                boolean v = r.nextInt(3) != 0;
                oracle.setVisible(in, pod, v);
                view.setVisible(in, pod, v);
                what = "setVisible";
            } else if (kind < 67 && r.nextInt(5) == 0) {
                oracle.dropInstance(in);
                view.dropInstance(in);
                what = "dropInstance";
            } else {
                long[] p = prompt(r, docs);
                TierWeights w = WEIGHTS[r.nextInt(WEIGHTS.length)];
                assertEquals(oracle.score(in, p, w), view.score(in, p, w), "seed " + seed + " op " + op);
                scores++;
                continue;
            }
            if (op % 50 == 0) {
                assertEquals(oracle.pods(in), view.pods(in), "seed " + seed + " op " + op + " after " + what);
                assertEquals(oracle.instances(), view.instances());
                long[] d = docs[r.nextInt(docs.length)];
                for (String t : TIERS) {
                    for (int i = 0; i < 40; i += 7) {
                        assertEquals(oracle.holds(in, pod, t, d[i]), view.holds(in, pod, t, d[i]));
                    }
                }
            }
        }
        assertTrue(scores > 1000, "scores compared: " + scores);
        for (String in : instances) {
            assertEquals(oracle.pods(in), view.pods(in));
        }
    }

    @Test
    void manyPodsOnOneKeyAndTableGrowth() {
        // exercises entry arrays that grow and shrink, binary-search narrowing, table growth and backward shifts
        Random r = new Random(7);
        MapWalkEngineView oracle = new MapWalkEngineView();
        IndexedEngineView view = new IndexedEngineView();
        long[] chain = new long[64];
        for (int i = 0; i < chain.length; i++) {
            chain[i] = r.nextLong();
        }
        for (int p = 0; p < 300; p++) {
            long[] k = java.util.Arrays.copyOf(chain, 1 + r.nextInt(chain.length));
            String tier = p % 3 == 0 ? "cpu" : "gpu";
            oracle.store("m", "p" + p, tier, k);
            view.store("m", "p" + p, tier, k);
            long[] noise = new long[200];
            for (int i = 0; i < noise.length; i++) {
                noise[i] = r.nextInt(5000);
            }
            oracle.store("m", "p" + p, "gpu", noise);
            view.store("m", "p" + p, "gpu", noise);
        }
        assertEquals(oracle.score("m", chain, TierWeights.LLM_D), view.score("m", chain, TierWeights.LLM_D));
        for (int p = 0; p < 300; p += 2) {
            oracle.clearPod("m", "p" + p);
            view.clearPod("m", "p" + p);
        }
        assertEquals(oracle.score("m", chain, TierWeights.LLM_D), view.score("m", chain, TierWeights.LLM_D));
        assertEquals(oracle.pods("m"), view.pods("m"));
        for (int k = 0; k < 5000; k++) {
            long[] one = {k};
            assertEquals(oracle.score("m", one, TierWeights.LLM_D), view.score("m", one, TierWeights.LLM_D));
        }
        assertTrue(view.tableBytes("m") > 0);
        assertTrue(view.keyCount("m") >= 64);
    }

    @Test
    void edgeCases() {
        IndexedEngineView v = new IndexedEngineView();
        assertEquals(new PrefixScores(3, List.of()), v.score("nope", new long[] {1, 2, 3}, TierWeights.LLM_D));
        v.store("m", "a", "GPU", new long[] {1, 2, 3});
        v.store("m", "a", "cpu", new long[] {1, 2, 3, 4});
        v.store("m", "b", "gpu", new long[] {1, 2});
        assertEquals(new PrefixScores(0, List.of()), v.score("m", new long[0], TierWeights.LLM_D));
        PrefixScores s = v.score("m", new long[] {1, 2, 3, 4, 5}, TierWeights.LLM_D);
        // key held on 2 tiers: the best weight counts once
        assertEquals(List.of(new PrefixScores.PodScore("a", 4, Map.of("cpu", 4, "gpu", 3), 3.8),
                new PrefixScores.PodScore("b", 2, Map.of("gpu", 2), 2.0)), s.pods());
        v.setVisible("m", "a", false);
        assertEquals(List.of("b"), v.score("m", new long[] {1, 2}, TierWeights.LLM_D).pods().stream()
                .map(PrefixScores.PodScore::pod).toList());
        assertTrue(v.holds("m", "a", "gpu", 1), "a hidden pod keeps its blocks");
        v.setVisible("m", "a", true);
        TierWeights zero = new TierWeights(Map.of("gpu", 0.0, "cpu", 0.0), 0.0);
        PrefixScores z = v.score("m", new long[] {1, 2, 3}, zero);
        assertEquals(2, z.pods().size(), "weight 0 still lists the holders, ordered by name");
        assertEquals("a", z.pods().get(0).pod());
        assertEquals(0.0, z.pods().get(0).score());
        assertTrue(v.score("m", new long[] {9, 1}, TierWeights.LLM_D).pods().isEmpty(), "first block missing");
        v.remove("m", "a", "gpu", new long[] {2});
        assertFalse(v.holds("m", "a", "gpu", 2));
        assertEquals(Map.of("cpu", 4), v.score("m", new long[] {1, 2, 3, 4}, TierWeights.LLM_D).pods().get(0)
                .prefixPerTier().entrySet().stream().filter(e -> e.getKey().equals("cpu"))
                .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)));
        v.remove("unknown", "a", "gpu", new long[] {1});
        v.clearPod("unknown", "a");
        v.dropInstance("m");
        assertTrue(v.instances().isEmpty());
        for (int t = 0; t < IndexedEngineView.MAX_TIERS; t++) {
            v.store("t", "p", "tier" + t, new long[] {t});
        }
        assertTrue(v.holds("t", "p", "tier31", 31));
        assertEquals(1, v.score("t", new long[] {31}, TierWeights.LLM_D).pods().size());
        assertThrows(IllegalArgumentException.class, () -> v.store("t", "p", "one-too-many", new long[] {1}));
    }

    @Test
    void scoresRunConcurrentlyWithIngest() throws Exception {
        // a writer churns pod w while readers score a prompt that pods r0..r3 hold unchanged: their scores stay exact
        IndexedEngineView v = new IndexedEngineView();
        long[] prompt = new long[256];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = 31L * i + 7;
        }
        for (int p = 0; p < 4; p++) {
            v.store("m", "r" + p, "gpu", java.util.Arrays.copyOf(prompt, 64 * (p + 1)));
        }
        PrefixScores expected = v.score("m", prompt, TierWeights.LLM_D);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            Random r = new Random(1);
            try {
                for (int i = 0; i < 3000 && failure.get() == null; i++) {
                    long[] k = new long[64];
                    for (int j = 0; j < k.length; j++) {
                        k[j] = r.nextInt(1 << 16) + 100_000;
                    }
                    v.store("m", "w", r.nextBoolean() ? "gpu" : "cpu", k);
                    if (i % 100 == 0) {
                        v.clearPod("m", "w");
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        });
        List<Thread> readers = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            readers.add(new Thread(() -> {
                try {
                    while (writer.isAlive() && failure.get() == null) {
                        assertEquals(expected, v.score("m", prompt, TierWeights.LLM_D));
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        writer.start();
        readers.forEach(Thread::start);
        writer.join();
        for (Thread t : readers) {
            t.join();
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }
}
