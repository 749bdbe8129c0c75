package dev.kvpool.engine.event;

import java.util.List;

/**
 * One vLLM / SGLang KV event (kvcm-engine-events.md §12.3, §14). Block hashes are Java longs holding the 64-bit
 * pattern the engine published (bin hashes: last 8 bytes big-endian, shorter ones left-padded with zeros), so they
 * equal KVPool's block keys of the same scheme. Nullable fields are null when the engine omitted or nil-ed them.
 */
public sealed interface EngineEvent {

    /** {@code BlockStored}: blocks entered a tier of the engine's cache. */
    record BlockStored(long[] blockHashes, Long parentBlockHash, long[] tokenIds, int blockSize, Long loraId,
                       String medium, String loraName, List<Object> extraKeys, Integer groupIdx,
                       String kvCacheSpecKind, Integer slidingWindow) implements EngineEvent {
    }

    /** {@code BlockRemoved}: blocks left a tier (evicted from GPU, dropped from an offload tier). */
    record BlockRemoved(long[] blockHashes, String medium, Integer groupIdx) implements EngineEvent {
    }

    /** {@code AllBlocksCleared}: the engine (rank) reset its prefix cache; every tier. */
    record AllBlocksCleared() implements EngineEvent {
    }
}
