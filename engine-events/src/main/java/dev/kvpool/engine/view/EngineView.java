package dev.kvpool.engine.view;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the engines' own caches hold, per instance (model), per pod and per tier: fed by vLLM / SGLang KV events and by
 * KVCM ReportEvent, read by prefix scoring and GetHostCacheState. A "pod" is a reporter identity (a vLLM pod and DP
 * rank, or a KVCM reporter); a "tier" is a lower-cased medium ({@code gpu}, {@code cpu}, {@code hbm}, ...). Set
 * semantics: storing a held key again or removing an absent one changes nothing. Implementations are thread-safe.
 */
public interface EngineView {

    void store(String instance, String pod, String tier, long[] keys);

    void remove(String instance, String pod, String tier, long[] keys);

    /** Replaces everything {@code pod} holds, on every tier, by {@code tiers} (a full snapshot). */
    void replace(String instance, String pod, Map<String, long[]> tiers);

    /** Drops everything {@code pod} holds (AllBlocksCleared, HOST_DOWN, a new engine epoch). */
    void clearPod(String instance, String pod);

    /** A hidden pod keeps its blocks but never scores (a KVCM reporter past its heartbeat timeout). */
    void setVisible(String instance, String pod, boolean visible);

    void dropInstance(String instance);

    /** Scores every visible pod for the leading blocks {@code keys} of a prompt. */
    PrefixScores score(String instance, long[] keys, TierWeights weights);

    /** Whether {@code pod} holds {@code key} on {@code tier} (regardless of visibility). */
    boolean holds(String instance, String pod, String tier, long key);

    Set<String> instances();

    /** Each pod of an instance with its visibility and key count per tier, sorted by pod. */
    List<PodSummary> pods(String instance);

    record PodSummary(String pod, boolean visible, Map<String, Long> keysPerTier) {
    }
}
