package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.WriteSession;

/**
 * Binary encodings, all big-endian. Block field: the 8-byte key. Block value: meta word, then (word A, word B)
 * per location. Session value: deadline ms, owner token, then (key, location id) per inserted key.
 */
final class Codec {
    static final int SESSION_HEADER = 16;

    private Codec() {
    }

    static void put(byte[] out, int off, long v) {
        for (int i = 7; i >= 0; i--) {
            out[off + i] = (byte) v;
            v >>>= 8;
        }
    }

    static long get(byte[] in, int off) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (in[off + i] & 0xFF);
        }
        return v;
    }

    static byte[] field(long key) {
        byte[] f = new byte[8];
        put(f, 0, key);
        return f;
    }

    static long key(byte[] field) {
        if (field.length != 8) {
            throw new RedisStoreException("corrupt block field of " + field.length + " bytes (expected 8)");
        }
        return get(field, 0);
    }

    /** Locations (a0, b0, a1, b1, ...) as the location part of a value, optionally behind a one-byte tag. */
    static byte[] locs(byte tag, long[] locs) {
        int o = tag == 0 ? 0 : 1;
        byte[] out = new byte[o + locs.length * 8];
        if (tag != 0) {
            out[0] = tag;
        }
        for (int i = 0; i < locs.length; i++) {
            put(out, o + i * 8, locs[i]);
        }
        return out;
    }

    /** A whole value behind a one-byte tag. */
    static byte[] value(byte tag, long meta, long[] locs) {
        byte[] out = new byte[1 + 8 + locs.length * 8];
        out[0] = tag;
        put(out, 1, meta);
        for (int i = 0; i < locs.length; i++) {
            put(out, 9 + i * 8, locs[i]);
        }
        return out;
    }

    /** The value of a block with one location. */
    static byte[] value(long a, long b, long meta) {
        byte[] out = new byte[24];
        put(out, 0, meta);
        put(out, 8, a);
        put(out, 16, b);
        return out;
    }

    static long meta(byte[] value) {
        return get(value, 0);
    }

    static long[] locs(byte[] value) {
        if (value.length < 8 || (value.length - 8) % 16 != 0) {
            throw new RedisStoreException("corrupt block value of " + value.length + " bytes");
        }
        long[] out = new long[(value.length - 8) / 8];
        for (int i = 0; i < out.length; i++) {
            out[i] = get(value, 8 + i * 8);
        }
        return out;
    }

    static Block block(long key, byte[] value) {
        return value == null ? null : new Block(key, locs(value), meta(value));
    }

    static byte[] sessionHeader(long deadlineMs, long token) {
        byte[] h = new byte[SESSION_HEADER];
        put(h, 0, deadlineMs);
        put(h, 8, token);
        return h;
    }

    static byte[] chunk(long key, long locId) {
        byte[] c = new byte[16];
        put(c, 0, key);
        put(c, 8, locId);
        return c;
    }

    static long sessionToken(byte[] blob) {
        return get(blob, 8);
    }

    static WriteSession session(String id, String instanceId, byte[] blob) {
        if (blob.length < SESSION_HEADER || (blob.length - SESSION_HEADER) % 16 != 0) {
            throw new RedisStoreException("corrupt write session " + id + " of " + blob.length + " bytes");
        }
        int n = (blob.length - SESSION_HEADER) / 16;
        long[] keys = new long[n], ids = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = get(blob, SESSION_HEADER + i * 16);
            ids[i] = get(blob, SESSION_HEADER + i * 16 + 8);
        }
        return new WriteSession(id, instanceId, get(blob, 0), keys, ids);
    }

    /** The relative seconds Loc keeps in the meta word's 30-bit time fields. */
    static long relSec(int sec) {
        return Math.clamp((long) sec - Loc.EPOCH, 0, (1L << 30) - 1);
    }

    static String hex16(long v) {
        return String.format("%016x", v);
    }
}
