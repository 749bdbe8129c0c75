package dev.kvpool.agent;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/** Test helpers: aligned random blocks. */
public final class TestBlocks {
    private TestBlocks() {
    }

    public static MemorySegment[] random(Arena a, int n, int bytes, long seed) {
        Random r = new Random(seed);
        MemorySegment[] out = new MemorySegment[n];
        byte[] b = new byte[bytes];
        for (int i = 0; i < n; i++) {
            r.nextBytes(b);
            out[i] = a.allocate(bytes, 4096);
            MemorySegment.copy(b, 0, out[i], ValueLayout.JAVA_BYTE, 0, bytes);
        }
        return out;
    }

    public static MemorySegment[] empty(Arena a, int n, int bytes) {
        MemorySegment[] out = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            out[i] = a.allocate(bytes, 4096);
        }
        return out;
    }

    public static long[] keys(long from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = from + i;
        }
        return k;
    }
}
