package dev.kvpool.agent.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * One agent per data directory: a lock on {@code <dir>/agent.lock} taken before anything in the directory is opened
 * or written (the event seq file would otherwise be moved under a running agent's feet by a second one that then
 * fails on the slot table). The file holds the holder's pid, so the refusal can name it; the lock, not the file,
 * decides: a file left by a killed agent is simply taken over.
 */
public final class DirLock implements AutoCloseable {
    public static final String FILE = "agent.lock";
    private final FileChannel ch;
    private final FileLock lock;
    private final Path path;

    private DirLock(Path path, FileChannel ch, FileLock lock) {
        this.path = path;
        this.ch = ch;
        this.lock = lock;
    }

    /** Takes the lock or throws {@link IllegalStateException} naming the directory and the agent that holds it. */
    public static DirLock acquire(Path dir, String setting) {
        Path p = dir.resolve(FILE);
        try {
            Files.createDirectories(dir);
            FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            FileLock l = FileLocks.tryLock(ch);
            if (l == null) {
                String holder = holder(ch);
                ch.close();
                throw new IllegalStateException(setting + " " + dir.toAbsolutePath() + " is in use by another agent"
                        + (holder.isEmpty() ? "" : " (pid " + holder + ")") + ": stop it, or give this one another "
                        + setting);
            }
            // ours now: the pid of this process for the next one's refusal (the bytes, not the lock, are advisory)
            ch.truncate(0);
            ch.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
            return new DirLock(p, ch, l);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock " + p + ": " + e.getMessage(), e);
        }
    }

    /** The pid the holder wrote, digits only (anything else in the file is not echoed), or "". */
    private static String holder(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(32);
        ch.read(b, 0);
        String s = new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII).trim();
        return s.matches("[0-9]{1,10}") ? s : "";
    }

    public Path path() {
        return path;
    }

    /** Releases the lock; the file stays (a later agent reads nothing from it but takes the lock again). */
    @Override
    public void close() {
        try {
            lock.release();
            ch.close();
        } catch (IOException e) {
            // closing the channel releases the lock in any case
        }
    }
}
