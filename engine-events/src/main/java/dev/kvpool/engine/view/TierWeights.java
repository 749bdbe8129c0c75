package dev.kvpool.engine.view;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Weight of one cached block per tier when scoring a pod (llm-d's convention: {@code gpu} 1.0, {@code cpu} 0.8, an
 * unknown tier 1.0). Tier names are compared lower-case.
 */
public record TierWeights(Map<String, Double> weights, double unknownTier) {
    public static final TierWeights LLM_D = new TierWeights(Map.of("gpu", 1.0, "cpu", 0.8), 1.0);

    public TierWeights {
        Map<String, Double> m = new TreeMap<>();
        weights.forEach((k, v) -> {
            if (v == null || !Double.isFinite(v) || v < 0) {
                throw new IllegalArgumentException("tier weight of '" + k + "' must be a finite number >= 0, got " + v);
            }
            m.put(k.toLowerCase(Locale.ROOT), v);
        });
        if (!Double.isFinite(unknownTier) || unknownTier < 0) {
            throw new IllegalArgumentException("the weight of an unknown tier must be a finite number >= 0");
        }
        weights = Map.copyOf(m);
    }

    public double of(String tier) {
        return weights.getOrDefault(tier, unknownTier);
    }
}
