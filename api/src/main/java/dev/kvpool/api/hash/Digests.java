package dev.kvpool.api.hash;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** SHA-256 and big-endian reads shared by the digest-based key schemes. */
final class Digests {

    private Digests() {
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK ships SHA-256", e);
        }
    }

    /** Writes {@code v} big-endian at {@code off}. */
    static void putLongBE(byte[] b, int off, long v) {
        for (int i = 7; i >= 0; i--) {
            b[off + i] = (byte) v;
            v >>>= 8;
        }
    }

    /** The 8 bytes at {@code off}, big-endian, as a signed long. */
    static long longBE(byte[] b, int off) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[off + i] & 0xFF);
        }
        return v;
    }
}
