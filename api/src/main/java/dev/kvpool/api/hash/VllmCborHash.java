package dev.kvpool.api.hash;

import java.util.ArrayList;
import java.util.List;
import net.openhft.hashing.LongTupleHashFunction;

/**
 * vLLM's CBOR-serialised prefix-cache block hashes (shared/spec/hashing.md §2, §3): {@code --prefix-caching-hash-algo
 * sha256_cbor} and {@code xxhash_cbor}. One chain for both; only the digest differs:
 * {@code digest_i = H(cbor([parent_i as bytes, [tokens of block i], extra_i or null]))}, with
 * {@code parent_0 = NONE_HASH = H(cbor(PYTHONHASHSEED string))} and {@code parent_{i+1}} the full digest of block i.
 * The int64 form that vLLM publishes is the digest's last 8 bytes read big-endian. Instances are immutable and
 * thread-safe.
 */
public final class VllmCborHash {

    /** The digest behind the CBOR chain. */
    public enum Algorithm {
        /** {@code sha256_cbor}: SHA-256, 32-byte digests. */
        SHA256_CBOR("sha256_cbor", 32),
        /** {@code xxhash_cbor}: XXH3-128 with seed 0, 16-byte digests written high 64 bits first (§3.6). */
        XXHASH_CBOR("xxhash_cbor", 16);

        private static final LongTupleHashFunction XXH3_128 = LongTupleHashFunction.xx128();

        private final String vllmName;
        private final int digestBytes;

        Algorithm(String vllmName, int digestBytes) {
            this.vllmName = vllmName;
            this.digestBytes = digestBytes;
        }

        /** vLLM's name for it ({@code --prefix-caching-hash-algo}). */
        public String vllmName() {
            return vllmName;
        }

        public int digestBytes() {
            return digestBytes;
        }

        /** The digest of {@code b[0, len)}. */
        public byte[] digest(byte[] b, int len) {
            if (this == SHA256_CBOR) {
                var sha = Digests.sha256();
                sha.update(b, 0, len);
                return sha.digest();
            }
            // the library returns {low 64 bits, high 64 bits}; xxhash's canonical digest is high first, big-endian
            long[] lowHigh = XXH3_128.hashBytes(b, 0, len);
            byte[] out = new byte[16];
            Digests.putLongBE(out, 0, lowHigh[1]);
            Digests.putLongBE(out, 8, lowHigh[0]);
            return out;
        }
    }

    private final Algorithm algorithm;
    private final byte[] noneHash;

    /**
     * @param pythonHashSeed the engine's {@code PYTHONHASHSEED} as a string ({@code ""} is a valid seed). Null means
     *     unset, where vLLM draws NONE_HASH from {@code os.urandom(32)}: no key can be reproduced, so this refuses.
     */
    public VllmCborHash(Algorithm algorithm, String pythonHashSeed) {
        if (pythonHashSeed == null) {
            throw new IllegalArgumentException("vLLM " + algorithm.vllmName + " keys need the engine's PYTHONHASHSEED: "
                    + "without it vLLM's root hash (NONE_HASH) is 32 random bytes per process, so KVPool cannot derive "
                    + "its block keys (register the instance with hash_seed set to the engine's PYTHONHASHSEED)");
        }
        this.algorithm = algorithm;
        CborWriter cbor = new CborWriter().writeText(pythonHashSeed);
        this.noneHash = algorithm.digest(cbor.buffer(), cbor.length());
    }

    public Algorithm algorithm() {
        return algorithm;
    }

    /** The parent hash of block 0. */
    public byte[] noneHash() {
        return noneHash.clone();
    }

    /**
     * The digest of every full block (a trailing partial block is not hashed).
     *
     * @param extraKeysPerBlock per block: null for CBOR null (no extra keys), else a List of String / Long /
     *     Integer / byte[] / nested List values (see {@link ExtraKeys}). The whole list may be null, and blocks past
     *     its end count as null.
     */
    public List<byte[]> blockDigests(long[] tokens, int blockSize, List<?> extraKeysPerBlock) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be > 0, was " + blockSize);
        }
        int blocks = tokens.length / blockSize;
        List<byte[]> digests = new ArrayList<>(blocks);
        CborWriter cbor = new CborWriter();
        byte[] parent = noneHash;
        for (int b = 0; b < blocks; b++) {
            Object extra = extraKeysPerBlock != null && b < extraKeysPerBlock.size() ? extraKeysPerBlock.get(b) : null;
            cbor.reset();
            writePayload(cbor, parent, tokens, b * blockSize, (b + 1) * blockSize, extra);
            parent = algorithm.digest(cbor.buffer(), cbor.length());
            digests.add(parent);
        }
        return digests;
    }

    /** One key per full block: the int64 form of each digest (values above 2^63 come out negative). */
    public long[] keys(long[] tokens, int blockSize) {
        return keys(tokens, blockSize, null);
    }

    /** As {@link #keys(long[], int)} with per-block extra keys (see {@link #blockDigests}). */
    public long[] keys(long[] tokens, int blockSize, List<?> extraKeysPerBlock) {
        List<byte[]> digests = blockDigests(tokens, blockSize, extraKeysPerBlock);
        long[] keys = new long[digests.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = toKey(digests.get(i));
        }
        return keys;
    }

    /** The last 8 bytes of a digest, big-endian: the int64 block hash vLLM publishes in KV events. */
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
