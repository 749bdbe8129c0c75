package dev.kvpool.agent.tier;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/** CRC32C of block bytes (intrinsified on x86-64 and aarch64). */
public final class Checksums {
    private Checksums() {
    }

    public static int crc32c(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return (int) c.getValue();
    }

    /** CRC32C of the blocks where {@code which} is null or true (0 elsewhere), big batches over all cores. */
    public static int[] crc32c(MemorySegment[] blocks, boolean[] which) {
        int[] out = new int[blocks.length];
        long total = 0;
        for (int i = 0; i < blocks.length; i++) {
            total += which == null || which[i] ? blocks[i].byteSize() : 0;
        }
        HostParallel.forEach(blocks.length, total, i -> {
            if (which == null || which[i]) {
                out[i] = crc32c(blocks[i]);
            }
        });
        return out;
    }
}
