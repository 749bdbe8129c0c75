package dev.kvpool.api.hash;

import java.util.Arrays;

/** How an instance turns token ids into block keys; fixed at registration. */
public enum HashScheme {
    KVCM("kvcm"),
    VLLM_SHA256_CBOR("vllm-sha256-cbor");

    private final String externalName;

    HashScheme(String externalName) {
        this.externalName = externalName;
    }

    public static HashScheme fromName(String name) {
        for (HashScheme s : values()) {
            if (s.externalName.equalsIgnoreCase(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown hash scheme '" + name + "'; valid: "
                + Arrays.stream(values()).map(HashScheme::toString).toList());
    }

    /** Keys of every full block; {@code seed} is vLLM's PYTHONHASHSEED (ignored by kvcm). */
    public long[] keys(long[] tokens, int blockSize, String seed) {
        return this == KVCM ? KvcmHash.keys(tokens, blockSize) : new VllmSha256Cbor(seed).keys(tokens, blockSize);
    }

    @Override
    public String toString() {
        return externalName;
    }
}
