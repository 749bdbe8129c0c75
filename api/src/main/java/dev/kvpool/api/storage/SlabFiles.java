package dev.kvpool.api.storage;

import java.nio.file.Path;

/**
 * Files of a {@code file://} storage that the metadata plane and the data agents share by convention. The plane
 * hands out slots of slab files and deletes a slab when its last slot is freed; the agents keep a checksum record
 * per slot beside each slab, which must go with it (slab numbers only grow, so a record file left behind would
 * never be reused).
 */
public final class SlabFiles {
    private SlabFiles() {
    }

    /** What the checksum records' file name adds to its slab's. */
    public static final String SUFFIX = ".crc";

    /** The checksum records of {@code slab}: 8 bytes per slot, at {@code blkid × 8}. */
    public static Path checksums(Path slab) {
        return slab.resolveSibling(slab.getFileName() + SUFFIX);
    }
}
