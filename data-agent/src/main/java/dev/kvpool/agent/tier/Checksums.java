package dev.kvpool.agent.tier;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/** CRC32C of block bytes (intrinsified on x86-64 and aarch64). */
public final class Checksums {
    private Checksums() {
    }

    /**
     * CRC32C of the block's key (8 bytes, little-endian) followed by its bytes: the checksum then also says which
     * block the bytes are, so a slot that holds another block's bytes and checksum (a writer that went on past its
     * session's deadline into a slot handed out again, a reader slower than its lease) fails the check.
     */
    public static int crc32c(long key, MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(key).flip());
        c.update(s.asByteBuffer());
        return (int) c.getValue();
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
