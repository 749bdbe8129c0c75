package dev.kvpool.agent.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/** An open O_DIRECT file: the raw fd (io_uring) or a channel (FileChannel path), whichever its BlockIo uses. */
public final class BlockFile implements AutoCloseable {
    private final Path path;
    private final int fd;
    private final FileChannel channel;
    private final long size;
    private final Runnable closer;

    public BlockFile(Path path, int fd, FileChannel channel, long size, Runnable closer) {
        this.path = path;
        this.fd = fd;
        this.channel = channel;
        this.size = size;
        this.closer = closer;
    }

    public Path path() {
        return path;
    }

    public int fd() {
        return fd;
    }

    public FileChannel channel() {
        return channel;
    }

    public long size() {
        return size;
    }

    @Override
    public void close() {
        closer.run();
    }

    static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // closing a read/write channel we opened; nothing to recover
        }
    }
}
