package dev.kvpool.api.hash;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;

/**
 * vLLM's prefix-cache block hash with {@code --prefix-caching-hash-algo sha256_cbor} (shared/spec/hashing.md §2):
 * {@code digest_i = SHA-256(cbor([parent_i as bytes, [tokens of block i], extra_i or null]))}, with
 * {@code parent_0 = NONE_HASH = SHA-256(cbor(PYTHONHASHSEED string))}. The int64 form that vLLM publishes is the
 * digest's last 8 bytes read big-endian. Instances are immutable and thread-safe.
 */
public final class VllmSha256Cbor {

    private final byte[] noneHash;

    /** @param pythonHashSeed the engine's {@code PYTHONHASHSEED} (unset in vLLM means random: not reproducible) */
    public VllmSha256Cbor(String pythonHashSeed) {
        if (pythonHashSeed == null) {
            throw new IllegalArgumentException("the vllm-sha256-cbor scheme needs the engine's PYTHONHASHSEED");
        }
        CborWriter cbor = new CborWriter().writeText(pythonHashSeed);
        MessageDigest sha = Digests.sha256();
        sha.update(cbor.buffer(), 0, cbor.length());
        this.noneHash = sha.digest();
    }

    /** The parent hash of block 0. */
    public byte[] noneHash() {
        return noneHash.clone();
    }

    /**
     * The 32-byte digest of every full block (a trailing partial block is not hashed).
     *
     * @param extraKeysPerBlock per block: null for CBOR null (no extra keys), else a List of String / Long /
     *     Integer / byte[] / nested List values (LoRA name, cache salt, multimodal (hash, offset) pairs). The
     *     whole list may be null, and blocks past its end count as null.
     */
    public List<byte[]> blockDigests(long[] tokens, int blockSize, List<Object> extraKeysPerBlock) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be > 0, was " + blockSize);
        }
        int blocks = tokens.length / blockSize;
        List<byte[]> digests = new ArrayList<>(blocks);
        MessageDigest sha = Digests.sha256();
        CborWriter cbor = new CborWriter();
        byte[] parent = noneHash;
        for (int b = 0; b < blocks; b++) {
            Object extra = extraKeysPerBlock != null && b < extraKeysPerBlock.size() ? extraKeysPerBlock.get(b) : null;
            cbor.reset();
            writePayload(cbor, parent, tokens, b * blockSize, (b + 1) * blockSize, extra);
            sha.update(cbor.buffer(), 0, cbor.length());
            parent = sha.digest();
            digests.add(parent);
        }
        return digests;
    }

    /** One key per full block: the int64 form of each digest (values above 2^63 come out negative). */
    public long[] keys(long[] tokens, int blockSize) {
        List<byte[]> digests = blockDigests(tokens, blockSize, null);
        long[] keys = new long[digests.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = toKey(digests.get(i));
        }
        return keys;
    }

    /** The last 8 bytes of a digest, big-endian. */
    public static long toKey(byte[] digest) {
        return Digests.longBE(digest, digest.length - 8);
    }

    /** The CBOR bytes hashed for one block (exposed for cross-checking against other encoders). */
    public static byte[] blockPayload(byte[] parent, long[] tokens, int from, int to, Object extraKeys) {
        CborWriter cbor = new CborWriter();
        writePayload(cbor, parent, tokens, from, to, extraKeys);
        return cbor.toByteArray();
    }

    private static void writePayload(CborWriter cbor, byte[] parent, long[] tokens, int from, int to, Object extra) {
        cbor.startArray(3).writeBytes(parent).startArray(to - from);
        for (int i = from; i < to; i++) {
            cbor.writeLong(tokens[i]);
        }
        cbor.writeValue(extra);
    }
}
