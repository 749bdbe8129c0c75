package dev.kvpool.agent.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;

/** The lock that keeps a second agent off files one agent owns (slot tables, the event spool). */
public final class FileLocks {
    private FileLocks() {
    }

    /**
     * An exclusive lock on the whole file, or null when another process holds one, or this process does (the JDK
     * throws for that case instead of returning null; both mean "in use").
     */
    public static FileLock tryLock(FileChannel ch) throws IOException {
        try {
            return ch.tryLock();
        } catch (OverlappingFileLockException e) {
            return null;
        }
    }
}
