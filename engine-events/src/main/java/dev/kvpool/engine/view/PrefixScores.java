package dev.kvpool.engine.view;

import java.util.List;
import java.util.Map;

/**
 * Scores of every pod that holds the prompt's first block, best first (score desc, then pod name asc).
 *
 * @param blocks the number of block keys scored
 */
public record PrefixScores(int blocks, List<PodScore> pods) {

    /**
     * @param longestPrefix leading blocks held on any tier (KVCM GetHostCacheState's {@code local})
     * @param prefixPerTier leading blocks held on each tier alone (tiers with 0 omitted)
     * @param score sum over the leading {@code longestPrefix} blocks of the highest weight among the tiers holding
     *     each (llm-d's scorer)
     */
    public record PodScore(String pod, int longestPrefix, Map<String, Integer> prefixPerTier, double score) {
    }
}
