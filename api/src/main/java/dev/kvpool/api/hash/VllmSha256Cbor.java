package dev.kvpool.api.hash;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;

/**
 * vLLM's {@code sha256_cbor} prefix hash (shared/spec/hashing.md): block i's digest is SHA-256 of the canonical
 * CBOR array [parent digest bytes, [tokens...], extra keys or null], with SHA-256(cbor(seed)) as the root. The
 * CBOR writer is hand-written so integer widths match vLLM's cbor2 canonical output exactly.
 */
public final class VllmSha256Cbor {
    private final byte[] noneHash;

    public VllmSha256Cbor(String pythonHashSeed) {
        Cbor c = new Cbor();
        c.text(pythonHashSeed == null ? "" : pythonHashSeed);
        this.noneHash = sha256(c.bytes());
    }

    public byte[] noneHash() {
        return noneHash.clone();
    }

    /** Digests of every full block; {@code extraKeysPerBlock} may be null or hold null (= CBOR null) entries. */
    public List<byte[]> blockDigests(long[] tokens, int blockSize, List<Object> extraKeysPerBlock) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be > 0, got " + blockSize);
        }
        int blocks = tokens.length / blockSize;
        List<byte[]> out = new ArrayList<>(blocks);
        byte[] parent = noneHash;
        for (int b = 0; b < blocks; b++) {
            Object extra = extraKeysPerBlock == null || b >= extraKeysPerBlock.size() ? null : extraKeysPerBlock.get(b);
            parent = sha256(payload(parent, tokens, b * blockSize, (b + 1) * blockSize, extra));
            out.add(parent);
        }
        return out;
    }

    /** The CBOR bytes that block digests are taken over (exposed for the test vectors). */
    public static byte[] payload(byte[] parent, long[] tokens, int from, int to, Object extra) {
        Cbor c = new Cbor();
        c.head(4, 3);
        c.bytes(parent);
        c.head(4, to - from);
        for (int i = from; i < to; i++) {
            c.integer(tokens[i]);
        }
        c.value(extra);
        return c.bytes();
    }

    /** The int64 vLLM publishes in KV events: the digest's last 8 bytes, big-endian. */
    public static long int64(byte[] digest) {
        long v = 0;
        for (int i = digest.length - 8; i < digest.length; i++) {
            v = (v << 8) | (digest[i] & 0xFF);
        }
        return v;
    }

    public long[] keys(long[] tokens, int blockSize) {
        List<byte[]> d = blockDigests(tokens, blockSize, null);
        long[] keys = new long[d.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = int64(d.get(i));
        }
        return keys;
    }

    static byte[] sha256(byte[] in) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(in);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Canonical CBOR: shortest heads, definite lengths. */
    static final class Cbor {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        void head(int major, long value) {
            int m = major << 5;
            if (Long.compareUnsigned(value, 24) < 0) {
                out.write(m | (int) value);
            } else if (Long.compareUnsigned(value, 1L << 8) < 0) {
                out.write(m | 24);
                out.write((int) value);
            } else if (Long.compareUnsigned(value, 1L << 16) < 0) {
                out.write(m | 25);
                writeBE(value, 2);
            } else if (Long.compareUnsigned(value, 1L << 32) < 0) {
                out.write(m | 26);
                writeBE(value, 4);
            } else {
                out.write(m | 27);
                writeBE(value, 8);
            }
        }

        private void writeBE(long v, int n) {
            for (int i = n - 1; i >= 0; i--) {
                out.write((int) (v >>> (8 * i)) & 0xFF);
            }
        }

        void integer(long v) {
            if (v >= 0) {
                head(0, v);
            } else {
                head(1, -1 - v);
            }
        }

        void bytes(byte[] b) {
            head(2, b.length);
            out.writeBytes(b);
        }

        void text(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            head(3, b.length);
            out.writeBytes(b);
        }

        void value(Object o) {
            switch (o) {
                case null -> out.write(0xF6);
                case String s -> text(s);
                case byte[] b -> bytes(b);
                case Long l -> integer(l);
                case Integer i -> integer(i);
                case List<?> l -> {
                    head(4, l.size());
                    l.forEach(this::value);
                }
                case Object[] a -> value(List.of(a));
                default -> throw new IllegalArgumentException("unsupported extra key type " + o.getClass().getName());
            }
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }
}
