package dev.kvpool.api.hash;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The request-level inputs of vLLM's per-block extra keys (shared/spec/hashing.md §3.4): the LoRA adapter's name,
 * the cache salt and the multimodal items in position order. All optional: null name / salt and a null or empty item
 * list mean none (an empty salt counts as none, as in vLLM). Checked at construction: names of at most
 * {@value ExtraKeys#MAX_TEXT_BYTES} UTF-8 bytes, salt of at most {@value ExtraKeys#MAX_SALT_BYTES}, at most
 * {@value ExtraKeys#MAX_MM_ITEMS} items; messages name the field as the REST API spells it.
 */
public record ExtraKeyInputs(String loraName, String cacheSalt, List<MmItem> mmItems) {

    /** No extra keys. */
    public static final ExtraKeyInputs NONE = new ExtraKeyInputs(null, null, null);

    public ExtraKeyInputs {
        if (loraName != null) {
            String p = ExtraKeys.textProblem(loraName, ExtraKeys.MAX_TEXT_BYTES);
            if (p != null) {
                throw new IllegalArgumentException("lora_name: " + p + " (leave it out when there is no LoRA)");
            }
        }
        if (cacheSalt != null && !cacheSalt.isEmpty()) {
            String p = ExtraKeys.textProblem(cacheSalt, ExtraKeys.MAX_SALT_BYTES);
            if (p != null) {
                throw new IllegalArgumentException("cache_salt: " + p);
            }
        }
        if (mmItems == null) {
            mmItems = List.of();
        } else {
            if (mmItems.size() > ExtraKeys.MAX_MM_ITEMS) {
                throw new IllegalArgumentException("mm_items: at most " + ExtraKeys.MAX_MM_ITEMS + " items, got "
                        + mmItems.size());
            }
            List<MmItem> copy = new ArrayList<>(mmItems.size());
            for (int i = 0; i < mmItems.size(); i++) {
                if (mmItems.get(i) == null) {
                    throw new IllegalArgumentException("mm_items[" + i + "] is null");
                }
                copy.add(mmItems.get(i));
            }
            mmItems = Collections.unmodifiableList(copy);
        }
    }

    /** True when these inputs add no extra key to any block. */
    public boolean isEmpty() {
        return loraName == null && (cacheSalt == null || cacheSalt.isEmpty()) && mmItems.isEmpty();
    }
}
