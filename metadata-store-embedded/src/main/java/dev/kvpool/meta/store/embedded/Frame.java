package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.index.WriteSession;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * One atomic journal entry: the instance it belongs to ("" for store records) and a list of operations, each of
 * which sets absolute state (a block's whole replica set, a session opened or closed), so replaying a frame twice
 * or over a fuzzy snapshot gives the same result.
 */
final class Frame {
    static final byte BLOCK = 1, SESSION_OPEN = 2, SESSION_CLOSE = 3, CLEAR = 4, DROP = 5, RECORD_PUT = 6,
            RECORD_DEL = 7, END = 8;

    private ByteBuffer buf;
    private int ops;

    Frame(String instanceId) {
        buf = ByteBuffer.allocate(256);
        putString(instanceId);
        buf.putInt(0); // op count, patched in finish()
    }

    boolean isEmpty() {
        return ops == 0;
    }

    private void ensure(int n) {
        if (buf.remaining() < n) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + n));
            buf.flip();
            bigger.put(buf);
            buf = bigger;
        }
    }

    private void putString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        ensure(4 + b.length);
        buf.putInt(b.length).put(b);
    }

    private void op(byte type) {
        ensure(1);
        buf.put(type);
        ops++;
    }

    Frame block(long key, long[] locs, long meta) {
        op(BLOCK);
        ensure(8 + 4 + locs.length * 8 + 8);
        buf.putLong(key).putInt(locs.length);
        for (long l : locs) {
            buf.putLong(l);
        }
        buf.putLong(meta);
        return this;
    }

    Frame sessionOpen(WriteSession s) {
        op(SESSION_OPEN);
        putString(s.id());
        ensure(8 + 4 + s.size() * 16);
        buf.putLong(s.deadlineMs()).putInt(s.size());
        for (int i = 0; i < s.size(); i++) {
            buf.putLong(s.keys()[i]).putLong(s.locIds()[i]);
        }
        return this;
    }

    Frame sessionClose(String id) {
        op(SESSION_CLOSE);
        putString(id);
        return this;
    }

    Frame clear() {
        op(CLEAR);
        return this;
    }

    Frame drop() {
        op(DROP);
        return this;
    }

    Frame recordPut(String section, String name, byte[] value) {
        op(RECORD_PUT);
        putString(section);
        putString(name);
        ensure(4 + value.length);
        buf.putInt(value.length).put(value);
        return this;
    }

    Frame recordDel(String section, String name) {
        op(RECORD_DEL);
        putString(section);
        putString(name);
        return this;
    }

    Frame end() {
        op(END);
        return this;
    }

    /** The encoded payload, ready to append; the frame must not be used afterwards. */
    ByteBuffer finish() {
        int pos = buf.position();
        buf.position(0);
        int len = buf.getInt();
        buf.putInt(4 + len, ops);
        buf.position(pos);
        buf.flip();
        return buf;
    }

    /** Reads frames back; the visitor sees each operation in order. */
    interface Visitor {
        void block(long key, long[] locs, long meta);

        /** A block with exactly one replica; visitors that can take it without an array override this. */
        default void block1(long key, long a, long b, long meta) {
            block(key, new long[] {a, b}, meta);
        }

        void sessionOpen(WriteSession s);

        void sessionClose(String id);

        void clear();

        void drop();

        void recordPut(String section, String name, byte[] value);

        void recordDel(String section, String name);

        void end();
    }

    static String readString(ByteBuffer b) {
        int n = b.getInt();
        String s = new String(b.array(), b.arrayOffset() + b.position(), n, StandardCharsets.UTF_8);
        b.position(b.position() + n);
        return s;
    }

    /** Instance id of an encoded payload. */
    static String instanceOf(ByteBuffer payload) {
        return readString(payload.duplicate());
    }

    static void read(ByteBuffer b, Visitor v) {
        String instance = readString(b);
        int n = b.getInt();
        for (int i = 0; i < n; i++) {
            byte type = b.get();
            switch (type) {
                case BLOCK -> {
                    long key = b.getLong();
                    int words = b.getInt();
                    if (words == 2) {
                        long a = b.getLong(), w = b.getLong();
                        v.block1(key, a, w, b.getLong());
                        continue;
                    }
                    long[] locs = new long[words];
                    for (int j = 0; j < locs.length; j++) {
                        locs[j] = b.getLong();
                    }
                    v.block(key, locs, b.getLong());
                }
                case SESSION_OPEN -> {
                    String id = readString(b);
                    long deadline = b.getLong();
                    int m = b.getInt();
                    long[] keys = new long[m], ids = new long[m];
                    for (int j = 0; j < m; j++) {
                        keys[j] = b.getLong();
                        ids[j] = b.getLong();
                    }
                    v.sessionOpen(new WriteSession(id, instance, deadline, keys, ids));
                }
                case SESSION_CLOSE -> v.sessionClose(readString(b));
                case CLEAR -> v.clear();
                case DROP -> v.drop();
                case RECORD_PUT -> {
                    String section = readString(b), name = readString(b);
                    byte[] value = new byte[b.getInt()];
                    b.get(value);
                    v.recordPut(section, name, value);
                }
                case RECORD_DEL -> v.recordDel(readString(b), readString(b));
                case END -> v.end();
                default -> throw new IllegalStateException("unknown journal op " + type);
            }
        }
    }
}
