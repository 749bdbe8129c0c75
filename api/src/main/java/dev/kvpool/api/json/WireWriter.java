package dev.kvpool.api.json;

import com.google.protobuf.Descriptors.FieldDescriptor.Type;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A growable protobuf binary encoder. The JSON reader transcodes into it and hands the bytes to the generated
 * parser in one {@code mergeFrom}: no per-field reflection and no boxing of long repeated lists.
 */
final class WireWriter {

    /** A length prefix is reserved at this width, then shrunk to its varint size when the length is known. */
    private static final int RESERVED = 5;

    byte[] buf = new byte[256];
    int pos;

    private void ensure(int more) {
        if (buf.length - pos < more) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, pos + more));
        }
    }

    void tag(int number, int wireType) {
        varint32((number << 3) | wireType);
    }

    void varint32(int v) {
        ensure(5);
        while ((v & ~0x7F) != 0) {
            buf[pos++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buf[pos++] = (byte) v;
    }

    void varint64(long v) {
        ensure(10);
        while ((v & ~0x7FL) != 0) {
            buf[pos++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buf[pos++] = (byte) v;
    }

    void fixed32(int v) {
        ensure(4);
        for (int i = 0; i < 4; i++) {
            buf[pos++] = (byte) (v >>> (8 * i));
        }
    }

    void fixed64(long v) {
        ensure(8);
        for (int i = 0; i < 8; i++) {
            buf[pos++] = (byte) (v >>> (8 * i));
        }
    }

    void bytes(byte[] b) {
        varint32(b.length);
        ensure(b.length);
        System.arraycopy(b, 0, buf, pos, b.length);
        pos += b.length;
    }

    void string(String s) {
        bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A length-prefixed UTF-8 string straight from the parser's char buffer (no String for ASCII text). */
    void string(char[] c, int off, int len) {
        for (int i = off; i < off + len; i++) {
            if (c[i] >= 0x80) {
                string(new String(c, off, len)); // rare: non-ASCII (and surrogate pairs) via the JDK encoder
                return;
            }
        }
        varint32(len);
        ensure(len);
        for (int i = 0; i < len; i++) {
            buf[pos + i] = (byte) c[off + i];
        }
        pos += len;
    }

    /**
     * Writes one numeric value without a tag. {@code bits}: the int value for 32-bit integer types and enums,
     * the raw IEEE bits for float/double, 0/1 for bool.
     */
    void numeric(Type type, long bits) {
        switch (type) {
            case INT64, UINT64, BOOL -> varint64(bits);
            case INT32, ENUM -> varint64((int) bits); // negative int32 is sign-extended to 10 bytes
            case UINT32 -> varint32((int) bits);
            case SINT32 -> varint32(((int) bits << 1) ^ ((int) bits >> 31));
            case SINT64 -> varint64((bits << 1) ^ (bits >> 63));
            case FIXED32, SFIXED32, FLOAT -> fixed32((int) bits);
            case FIXED64, SFIXED64, DOUBLE -> fixed64(bits);
            default -> throw new IllegalArgumentException("not numeric: " + type);
        }
    }

    /** Reserves room for a length prefix; returns the mark to pass to {@link #endLength}. */
    int beginLength() {
        ensure(RESERVED);
        int mark = pos;
        pos += RESERVED;
        return mark;
    }

    void endLength(int mark) {
        int start = mark + RESERVED;
        int len = pos - start;
        int size = varintSize(len);
        if (size < RESERVED) {
            System.arraycopy(buf, start, buf, mark + size, len);
        }
        pos = mark;
        varint32(len);
        pos += len;
    }

    /** Like {@link #endLength}, but an empty value is dropped together with its tag (written at tagStart). */
    void endLengthOrDrop(int mark, int tagStart) {
        if (pos == mark + RESERVED) {
            pos = tagStart;
        } else {
            endLength(mark);
        }
    }

    private static int varintSize(int v) {
        return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
    }
}
