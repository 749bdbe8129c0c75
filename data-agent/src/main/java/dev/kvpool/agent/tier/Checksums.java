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
}
