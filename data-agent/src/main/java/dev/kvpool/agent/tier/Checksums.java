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

    /**
     * CRC32C of a block's key and layer number (8 + 4 bytes, little-endian) followed by the layer's bytes: as
     * {@link #crc32c(long, MemorySegment)}, a layer's bytes that belong to another block or another layer fail it.
     */
    public static int layerCrc32c(long key, int layer, MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(java.nio.ByteBuffer.allocate(12).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(key).putInt(layer)
                .flip());
        c.update(s.asByteBuffer());
        return (int) c.getValue();
    }

    /**
     * The per-layer CRC32C of blocks where {@code which} is null or true, into {@code out[i * layers + l]}, and per
     * block the check the index keeps for it: CRC32C over its layers' values (so a whole-block load verifies every
     * layer at the cost of one pass over the bytes).
     */
    public static int[] layerCrc32c(long[] keys, MemorySegment[] blocks, boolean[] which, int layers, int[] out) {
        int[] block = new int[blocks.length];
        long total = 0;
        for (int i = 0; i < blocks.length; i++) {
            total += which == null || which[i] ? blocks[i].byteSize() : 0;
        }
        HostParallel.forEach(blocks.length, total, i -> {
            if (which == null || which[i]) {
                long lb = blocks[i].byteSize() / layers;
                CRC32C c = new CRC32C(); // one per block, not per layer: 64 layers of 4 KiB are many small calls
                java.nio.ByteBuffer head = java.nio.ByteBuffer.allocate(12).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                java.nio.ByteBuffer bytes = blocks[i].asByteBuffer();
                for (int l = 0; l < layers; l++) {
                    c.reset();
                    c.update(head.clear().putLong(keys[i]).putInt(l).flip());
                    c.update(bytes.limit((int) ((l + 1) * lb)).position((int) (l * lb)));
                    out[i * layers + l] = (int) c.getValue();
                }
                block[i] = ofLayers(out, i * layers, layers);
            }
        });
        return block;
    }

    /** A block's check from its layers' CRC32C values {@code crcs[from .. from + layers)}. */
    public static int ofLayers(int[] crcs, int from, int layers) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(layers * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int l = 0; l < layers; l++) {
            b.putInt(crcs[from + l]);
        }
        CRC32C c = new CRC32C();
        c.update(b.flip());
        return (int) c.getValue();
    }
}
