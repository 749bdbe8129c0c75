package dev.kvpool.agent.api;

import dev.kvpool.agent.io.FileLocks;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The block-bytes segment shared with engines: a file in /dev/shm that both sides mmap. The lower half belongs to
 * the engine (it chooses offsets for save and for load destinations); the upper half is a ring the agent uses when
 * a load names no destination offsets (the returned offsets stay valid until the ring wraps). Offsets are 4 KiB
 * aligned; the mapping itself is page aligned.
 */
public final class SharedMemory implements AutoCloseable {
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(SharedMemory.class.getName());
    private final Path path;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;
    private final long ringStart;
    private final boolean takenOver;
    private final FileChannel channel;
    private final FileLock lock;
    private boolean closed;
    private long ringNext;

    /**
     * Maps the segment at {@code path}, creating it, or taking over the file a killed agent left there (same inode:
     * an engine that kept its mapping across the agent's restart keeps working). Refuses, touching nothing, when
     * another agent holds the file's lock.
     */
    public SharedMemory(Path path, long bytes) {
        this.path = path;
        FileChannel ch = null;
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            boolean existed = Files.exists(path, LinkOption.NOFOLLOW_LINKS);
            ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            // before the size is touched: a second agent on this path would cut the running one's segment
            FileLock l = FileLocks.tryLock(ch);
            if (l == null) {
                throw new IllegalStateException("the shared segment " + path + " is in use by another agent: give this"
                        + " one another kvpool.agent.shm.path (or http-port), or stop the other");
            }
            if (ch.size() != bytes) {
                ch.truncate(Math.min(ch.size(), bytes));
                if (ch.size() < bytes) {
                    ch.write(java.nio.ByteBuffer.wrap(new byte[1]), bytes - 1);
                }
            }
            segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            channel = ch;
            lock = l;
            takenOver = existed;
        } catch (IOException e) {
            closeQuietly(ch);
            arena.close();
            throw new UncheckedIOException("cannot map the shared segment " + path, e);
        } catch (RuntimeException e) {
            closeQuietly(ch);
            arena.close();
            throw e;
        }
        if (takenOver) {
            LOG.info("shared segment " + path + ": taken over from an agent that did not stop cleanly (same file, so"
                    + " engines that kept it mapped keep working)");
        }
        this.ringStart = bytes / 2 / 4096 * 4096;
        this.ringNext = ringStart;
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing was mapped from it
            }
        }
    }

    /** Whether a file was already at the path (left by an agent killed before it could remove it). */
    public boolean takenOver() {
        return takenOver;
    }

    /** Whether the segment is mapped (false once closed). */
    public synchronized boolean mapped() {
        return !closed;
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

    /**
     * Unmaps the segment and removes its file: a clean stop leaves nothing in /dev/shm (engines that still map it
     * keep their pages until they unmap; a new agent creates a new file, which clients detect by its inode). The file
     * goes while the lock is still held, so a starting agent is either refused or creates a fresh one.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        arena.close();
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warning("shared segment " + path + ": not removed at stop: " + e);
        }
        try {
            lock.release();
        } catch (IOException ignored) {
            // closing the channel releases it
        }
        closeQuietly(channel);
    }
}
