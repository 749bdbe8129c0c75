package dev.kvpool.api.hash;

import java.util.Arrays;
import java.util.stream.Collectors;

/** How an instance turns token ids into block keys; fixed at registration (shared/spec/hashing.md). */
public enum HashScheme {
    /** The running hash of Tair KVCM / RTP-LLM (the default); ignores the seed. */
    KVCM("kvcm"),
    /** vLLM's sha256_cbor prefix hash; needs the engine's PYTHONHASHSEED as the seed. */
    VLLM_SHA256_CBOR("vllm-sha256-cbor");

    private final String schemeName;

    HashScheme(String schemeName) {
        this.schemeName = schemeName;
    }

    /** The name used in configuration and on the wire, e.g. {@code vllm-sha256-cbor}. */
    public String schemeName() {
        return schemeName;
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

    /** One key per full block of {@code tokens}. */
    public long[] keys(long[] tokens, int blockSize, String seed) {
        return switch (this) {
            case KVCM -> KvcmHash.keys(tokens, blockSize);
            case VLLM_SHA256_CBOR -> new VllmSha256Cbor(seed).keys(tokens, blockSize);
        };
    }
}
