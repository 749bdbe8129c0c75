package dev.kvpool.api.hash;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** How an instance turns token ids into block keys; fixed at registration (shared/spec/hashing.md). */
public enum HashScheme {
    /** The running hash of Tair KVCM / RTP-LLM (the default); ignores the seed; has no extra keys. */
    KVCM("kvcm", null),
    /** vLLM's sha256_cbor prefix hash; needs the engine's PYTHONHASHSEED as the seed. */
    VLLM_SHA256_CBOR("vllm-sha256-cbor", VllmCborHash.Algorithm.SHA256_CBOR),
    /** vLLM's xxhash_cbor prefix hash (XXH3-128); needs the engine's PYTHONHASHSEED as the seed. */
    VLLM_XXHASH_CBOR("vllm-xxhash-cbor", VllmCborHash.Algorithm.XXHASH_CBOR);

    private final String schemeName;
    private final VllmCborHash.Algorithm vllm;

    HashScheme(String schemeName, VllmCborHash.Algorithm vllm) {
        this.schemeName = schemeName;
        this.vllm = vllm;
    }

    /** The name used in configuration and on the wire, e.g. {@code vllm-sha256-cbor}. */
    public String schemeName() {
        return schemeName;
    }

    /** True for the vLLM schemes, which need a seed and take extra keys. */
    public boolean isVllm() {
        return vllm != null;
    }

    public static HashScheme fromName(String name) {
        for (HashScheme s : values()) {
            if (s.schemeName.equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown hash scheme '" + name + "'; valid names: "
                + Arrays.stream(values()).map(HashScheme::schemeName).collect(Collectors.joining(", ")));
    }

    /** One key per full block of {@code tokens}, without extra keys. */
    public long[] keys(long[] tokens, int blockSize, String seed) {
        return keys(tokens, blockSize, seed, null);
    }

    /**
     * One key per full block of {@code tokens}, with the per-block extra keys vLLM derives from {@code extras}
     * (null or {@link ExtraKeyInputs#isEmpty() empty}: none).
     *
     * @param seed the engine's PYTHONHASHSEED for the vLLM schemes (null: unset, refused); ignored by kvcm
     * @throws IllegalArgumentException for a bad block size, a missing seed, or extras with the kvcm scheme
     */
    public long[] keys(long[] tokens, int blockSize, String seed, ExtraKeyInputs extras) {
        if (vllm == null) {
            if (extras != null && !extras.isEmpty()) {
                throw new IllegalArgumentException("the kvcm hash scheme has no extra keys (LoRA name, cache salt, "
                        + "multimodal items): its block key depends on the token ids only");
            }
            return KvcmHash.keys(tokens, blockSize);
        }
        VllmCborHash h = new VllmCborHash(vllm, seed);
        if (extras == null || extras.isEmpty() || blockSize <= 0) { // blockDigests names a bad block size
            return h.keys(tokens, blockSize);
        }
        return h.keys(tokens, blockSize, ExtraKeys.perBlock(extras, tokens.length / blockSize, blockSize));
    }

    /**
     * One key per full block with extra keys given per block as vLLM publishes them in KV events
     * ({@code BlockStored.extra_keys}): null or a List of String / Long / byte[] / nested List per block.
     *
     * @throws IllegalArgumentException for the kvcm scheme with any non-null extra key
     */
    public long[] keysWithBlockExtras(long[] tokens, int blockSize, String seed, List<?> extraKeysPerBlock) {
        if (vllm == null) {
            if (extraKeysPerBlock != null && extraKeysPerBlock.stream().anyMatch(e -> e != null)) {
                throw new IllegalArgumentException("the kvcm hash scheme has no extra keys: its block key depends on "
                        + "the token ids only");
            }
            return KvcmHash.keys(tokens, blockSize);
        }
        return new VllmCborHash(vllm, seed).keys(tokens, blockSize, extraKeysPerBlock);
    }
}
