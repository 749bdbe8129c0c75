package dev.kvpool.engine.view;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The plain design: a {@code HashSet<Long>} per (pod, tier), scored by walking every pod's sets key by key. Correct
 * and obvious; the baseline the prefix-score benchmark measures the indexed view against, and the oracle of its tests.
 */
public final class MapWalkEngineView implements EngineView {

    private static final class Pod {
        final Map<String, Set<Long>> tiers = new TreeMap<>();
        boolean visible = true;
    }

    private final Map<String, Map<String, Pod>> instances = new ConcurrentHashMap<>();

    static String tier(String t) {
        return t == null || t.isEmpty() ? "gpu" : t.toLowerCase(Locale.ROOT);
    }

    private Pod pod(String instance, String pod) {
        return instances.computeIfAbsent(instance, k -> new HashMap<>()).computeIfAbsent(pod, k -> new Pod());
    }

    @Override
    public synchronized void store(String instance, String pod, String tier, long[] keys) {
        Set<Long> s = pod(instance, pod).tiers.computeIfAbsent(tier(tier), k -> new HashSet<>());
        for (long k : keys) {
            s.add(k);
        }
    }

    @Override
    public synchronized void remove(String instance, String pod, String tier, long[] keys) {
        Map<String, Pod> pods = instances.get(instance);
        Pod p = pods == null ? null : pods.get(pod);
        Set<Long> s = p == null ? null : p.tiers.get(tier(tier));
        if (s != null) {
            for (long k : keys) {
                s.remove(k);
            }
        }
    }

    @Override
    public synchronized void replace(String instance, String pod, Map<String, long[]> tiers) {
        Pod p = pod(instance, pod);
        p.tiers.clear();
        tiers.forEach((t, keys) -> {
            Set<Long> s = p.tiers.computeIfAbsent(tier(t), k -> new HashSet<>());
            for (long k : keys) {
                s.add(k);
            }
        });
    }

    @Override
    public synchronized void clearPod(String instance, String pod) {
        Map<String, Pod> pods = instances.get(instance);
        Pod p = pods == null ? null : pods.get(pod);
        if (p != null) {
            p.tiers.clear();
        }
    }

    @Override
    public synchronized void setVisible(String instance, String pod, boolean visible) {
        pod(instance, pod).visible = visible;
    }

    @Override
    public synchronized void dropInstance(String instance) {
        instances.remove(instance);
    }

    @Override
    public synchronized PrefixScores score(String instance, long[] keys, TierWeights weights) {
        List<PrefixScores.PodScore> out = new ArrayList<>();
        Map<String, Pod> pods = instances.getOrDefault(instance, Map.of());
        for (Map.Entry<String, Pod> e : pods.entrySet()) {
            Pod p = e.getValue();
            if (!p.visible || keys.length == 0) {
                continue;
            }
            Map<String, Integer> perTier = new TreeMap<>();
            for (Map.Entry<String, Set<Long>> t : p.tiers.entrySet()) {
                int n = 0;
                while (n < keys.length && t.getValue().contains(keys[n])) {
                    n++;
                }
                if (n > 0) {
                    perTier.put(t.getKey(), n);
                }
            }
            int longest = 0;
            double score = 0;
            for (; longest < keys.length; longest++) {
                double best = -1;
                for (Map.Entry<String, Set<Long>> t : p.tiers.entrySet()) {
                    if (t.getValue().contains(keys[longest])) {
                        best = Math.max(best, weights.of(t.getKey()));
                    }
                }
                if (best < 0) {
                    break;
                }
                score += best;
            }
            if (longest > 0) {
                out.add(new PrefixScores.PodScore(e.getKey(), longest, perTier, score));
            }
        }
        out.sort(Comparator.comparingDouble(PrefixScores.PodScore::score).reversed()
                .thenComparing(PrefixScores.PodScore::pod));
        return new PrefixScores(keys.length, out);
    }

    @Override
    public synchronized boolean holds(String instance, String pod, String tier, long key) {
        Map<String, Pod> pods = instances.get(instance);
        Pod p = pods == null ? null : pods.get(pod);
        Set<Long> s = p == null ? null : p.tiers.get(tier(tier));
        return s != null && s.contains(key);
    }

    @Override
    public Set<String> instances() {
        return Set.copyOf(instances.keySet());
    }

    @Override
    public synchronized List<PodSummary> pods(String instance) {
        List<PodSummary> out = new ArrayList<>();
        new TreeMap<>(instances.getOrDefault(instance, Map.of())).forEach((name, p) -> {
            Map<String, Long> counts = new TreeMap<>();
            p.tiers.forEach((t, s) -> counts.put(t, (long) s.size()));
            out.add(new PodSummary(name, p.visible, counts));
        });
        return out;
    }
}
