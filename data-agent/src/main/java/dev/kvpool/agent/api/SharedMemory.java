package dev.kvpool.agent.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The block-bytes segment shared with engines: a file in /dev/shm that both sides mmap. The lower half belongs to
 * the engine (it chooses offsets for save and for load destinations); the upper half is a ring the agent uses when
 * a load names no destination offsets (the returned offsets stay valid until the ring wraps). Offsets are 4 KiB
 * aligned; the mapping itself is page aligned.
 */
public final class SharedMemory implements AutoCloseable {
    private final Path path;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;
    private final long ringStart;
    private long ringNext;

    public SharedMemory(Path path, long bytes) {
        this.path = path;
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                if (ch.size() != bytes) {
                    ch.truncate(Math.min(ch.size(), bytes));
                    if (ch.size() < bytes) {
                        ch.write(java.nio.ByteBuffer.wrap(new byte[1]), bytes - 1);
                    }
                }
                segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map the shared segment " + path, e);
        }
        this.ringStart = bytes / 2 / 4096 * 4096;
        this.ringNext = ringStart;
    }

    public Path path() {
        return path;
    }

    public long size() {
        return segment.byteSize();
    }

    public MemorySegment segment() {
        return segment;
    }

    /** The bytes of one block at {@code offset}; 400 (IllegalArgumentException) when out of range or misaligned. */
    public MemorySegment slice(long offset, long len) {
        long size = segment.byteSize();
        // offset > size - len, not offset + len > size: an offset near Long.MAX_VALUE would overflow past the check
        if (offset < 0 || len < 0 || len > size || offset % 4096 != 0 || offset > size - len) {
            throw new IllegalArgumentException("offset " + offset + " (+" + len + " bytes) is not a 4 KiB-aligned range of the "
                    + segment.byteSize() + "-byte shared segment " + path);
        }
        return segment.asSlice(offset, len);
    }

    /** Consecutive offsets for {@code n} blocks in the agent's ring (upper half). */
    public synchronized long[] ringOffsets(int n, int blockBytes) {
        long span = segment.byteSize() - ringStart;
        if ((long) n * blockBytes > span) {
            throw new IllegalArgumentException(n + " blocks do not fit the agent's half of the shared segment ("
                    + span + " bytes); pass destination offsets");
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            if (ringNext + blockBytes > segment.byteSize()) {
                ringNext = ringStart;
            }
            out[i] = ringNext;
            ringNext += blockBytes;
        }
        return out;
    }

    @Override
    public void close() {
        arena.close();
    }
}
