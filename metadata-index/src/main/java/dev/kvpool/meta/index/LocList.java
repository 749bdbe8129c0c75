package dev.kvpool.meta.index;

/**
 * A growable list of (key, word A, word B, key-gone) tuples: the locations an index operation took out of
 * service, handed to the caller who now owns releasing their storage and quota.
 */
public final class LocList {
    private long[] v = new long[16];
    private int n;

    public void add(long key, long a, long b, boolean keyGone) {
        add(key, a, b, keyGone, false);
    }

    /** @param wasWriting the location was WRITING when this operation took it (see {@link #wasWriting}) */
    public void add(long key, long a, long b, boolean keyGone, boolean wasWriting) {
        if ((n + 1) * 4 > v.length) {
            v = java.util.Arrays.copyOf(v, v.length * 2);
        }
        int o = n * 4;
        v[o] = key;
        v[o + 1] = a;
        v[o + 2] = b;
        v[o + 3] = (keyGone ? 1 : 0) | (wasWriting ? 2 : 0);
        n++;
    }

    public void addAll(LocList other) {
        for (int i = 0; i < other.n; i++) {
            add(other.key(i), other.a(i), other.b(i), other.keyGone(i), other.wasWriting(i));
        }
    }

    public int size() {
        return n;
    }

    public long key(int i) {
        return v[i * 4];
    }

    public long a(int i) {
        return v[i * 4 + 1];
    }

    public long b(int i) {
        return v[i * 4 + 2];
    }

    /** Sets key-gone on entry i (a batch learns only after its last removal of a key that the key went too). */
    public void markKeyGone(int i) {
        v[i * 4 + 3] |= 1;
    }

    /** True when this removal took the key's last location, so the key itself left the index. */
    public boolean keyGone(int i) {
        return (v[i * 4 + 3] & 1) != 0;
    }

    /**
     * True when {@link InstanceIndex#markDeleting} took the location from WRITING: a session may still be writing
     * its bytes, so its storage must not be handed out again before the session's deadline.
     */
    public boolean wasWriting(int i) {
        return (v[i * 4 + 3] & 2) != 0;
    }
}
