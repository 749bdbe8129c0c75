package dev.kvpool.api.hash;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The small subset of canonical CBOR (RFC 8949 §4.2.1 shortest-form heads) that vLLM's {@code sha256_cbor}
 * hashes: unsigned and negative integers, byte and text strings, arrays and null. Hand-written because generic
 * CBOR libraries may pick other integer widths, which would change every digest.
 */
final class CborWriter {

    private static final int UINT = 0, NEGINT = 1, BYTES = 2, TEXT = 3, ARRAY = 4;
    private static final int NULL = 0xF6;

    private byte[] buf = new byte[128];
    private int len;

    void reset() {
        len = 0;
    }

    byte[] buffer() {
        return buf;
    }

    int length() {
        return len;
    }

    byte[] toByteArray() {
        return Arrays.copyOf(buf, len);
    }

    CborWriter writeLong(long v) {
        // major type 1 encodes -1 - n; for negative v that is ~v, which is never negative
        return v >= 0 ? head(UINT, v) : head(NEGINT, ~v);
    }

    CborWriter writeBytes(byte[] b) {
        head(BYTES, b.length);
        raw(b);
        return this;
    }

    CborWriter writeText(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        head(TEXT, b.length);
        raw(b);
        return this;
    }

    CborWriter startArray(int size) {
        return head(ARRAY, size);
    }

    CborWriter writeNull() {
        ensure(1);
        buf[len++] = (byte) NULL;
        return this;
    }

    /** null, String, Long/Integer/Short/Byte, byte[], or a List / Object[] of those (nested arrays). */
    CborWriter writeValue(Object v) {
        switch (v) {
            case null -> writeNull();
            case String s -> writeText(s);
            case Long l -> writeLong(l);
            case Integer i -> writeLong(i);
            case Short s -> writeLong(s);
            case Byte b -> writeLong(b);
            case byte[] b -> writeBytes(b);
            case List<?> list -> {
                startArray(list.size());
                list.forEach(this::writeValue);
            }
            case Object[] array -> {
                startArray(array.length);
                for (Object o : array) {
                    writeValue(o);
                }
            }
            default -> throw new IllegalArgumentException(
                    "cannot CBOR-encode a " + v.getClass().getName() + " (use String, Long, byte[] or List)");
        }
        return this;
    }

    /** A head with the shortest argument encoding; {@code arg} is treated as unsigned. */
    private CborWriter head(int major, long arg) {
        ensure(9);
        int mt = major << 5;
        if (arg >= 0 && arg < 24) {
            buf[len++] = (byte) (mt | arg);
        } else if (arg >= 0 && arg < 0x100) {
            buf[len++] = (byte) (mt | 24);
            buf[len++] = (byte) arg;
        } else if (arg >= 0 && arg < 0x1_0000) {
            buf[len++] = (byte) (mt | 25);
            bigEndian(arg, 2);
        } else if (arg >= 0 && arg < 0x1_0000_0000L) {
            buf[len++] = (byte) (mt | 26);
            bigEndian(arg, 4);
        } else {
            buf[len++] = (byte) (mt | 27);
            bigEndian(arg, 8);
        }
        return this;
    }

    private void bigEndian(long v, int bytes) {
        for (int i = bytes - 1; i >= 0; i--) {
            buf[len++] = (byte) (v >>> (8 * i));
        }
    }

    private void raw(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
    }

    private void ensure(int more) {
        if (buf.length - len < more) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + more));
        }
    }
}
