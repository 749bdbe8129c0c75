package dev.kvpool.meta.index.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.jboss.logging.Logger;

/**
 * Snapshot + append log on local disk. Files are numbered by generation: {@code snapshot-N.bin} holds the state
 * as of some moment after {@code journal-N.log} was opened, so recovery loads the newest complete snapshot and
 * replays journal N and later. Each record is {@code [length][crc32c][payload]}; a torn tail (a crash mid-write)
 * fails its CRC, and the log is cut there.
 *
 * <p>Appends reach the OS with one write() before the caller proceeds, so a killed process loses nothing;
 * {@link Durability#ALWAYS} also forces them to the device before returning, {@link Durability#INTERVAL} does so
 * from a background thread.
 */
final class Journal implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Journal.class);

    enum Durability { ALWAYS, INTERVAL }

    private final Path dir;
    private final Durability durability;
    private FileChannel log;
    /** Length of the intact prefix of the current log: where the next record starts. */
    private long end;
    /** Set when a failed append could not be cut back off the log; later appends would land behind garbage. */
    private IOException broken;
    private long generation;
    private long bytesSinceSnapshot;
    private volatile boolean dirty;

    Journal(Path dir, Durability durability) {
        this.dir = dir;
        this.durability = durability;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create index directory " + dir, e);
        }
    }

    /** Replays snapshot and logs into the sink, then opens the newest log for appending. */
    void recover(Consumer<ByteBuffer> sink) {
        try {
            long snapGen = newest("snapshot-", ".bin");
            List<Long> logs = generations("journal-", ".log");
            long startGen = snapGen >= 0 ? snapGen : (logs.isEmpty() ? 0 : logs.get(0));
            if (snapGen >= 0) {
                readFile(file("snapshot-", snapGen, ".bin"), sink, false);
            }
            generation = startGen;
            for (long g : logs) {
                if (g < startGen) {
                    continue;
                }
                long good = readFile(file("journal-", g, ".log"), sink, true);
                generation = g;
                try (FileChannel ch = FileChannel.open(file("journal-", g, ".log"), StandardOpenOption.WRITE)) {
                    if (ch.size() > good) {
                        LOG.warnf("journal %d: cutting a torn tail of %d bytes", g, ch.size() - good);
                        ch.truncate(good);
                    }
                }
                bytesSinceSnapshot += good;
            }
            log = FileChannel.open(file("journal-", generation, ".log"), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE, StandardOpenOption.APPEND);
            end = log.size();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot recover index from " + dir, e);
        }
    }

    private Path file(String prefix, long gen, String suffix) {
        return dir.resolve(prefix + String.format("%012d", gen) + suffix);
    }

    private List<Long> generations(String prefix, String suffix) throws IOException {
        List<Long> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith(prefix) && n.endsWith(suffix))
                    .forEach(n -> out.add(Long.parseLong(n.substring(prefix.length(), n.length() - suffix.length()))));
        }
        out.sort(null);
        return out;
    }

    private long newest(String prefix, String suffix) throws IOException {
        List<Long> g = generations(prefix, suffix);
        return g.isEmpty() ? -1 : g.get(g.size() - 1);
    }

    /** Returns the offset after the last intact record. */
    private static long readFile(Path p, Consumer<ByteBuffer> sink, boolean tolerateTornTail) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            long size = ch.size();
            ByteBuffer head = ByteBuffer.allocate(8);
            long pos = 0;
            CRC32C crc = new CRC32C();
            while (pos + 8 <= size) {
                head.clear();
                ch.read(head, pos);
                head.flip();
                int len = head.getInt();
                int sum = head.getInt();
                if (len < 0 || pos + 8 + len > size) {
                    break;
                }
                ByteBuffer payload = ByteBuffer.allocate(len);
                while (payload.hasRemaining()) {
                    if (ch.read(payload, pos + 8 + payload.position()) < 0) {
                        break;
                    }
                }
                crc.reset();
                crc.update(payload.array(), 0, len);
                if ((int) crc.getValue() != sum) {
                    break;
                }
                payload.flip();
                sink.accept(payload);
                pos += 8 + len;
            }
            if (pos != size && !tolerateTornTail) {
                throw new IOException(p + " is damaged at offset " + pos);
            }
            return pos;
        }
    }

    private static ByteBuffer record(ByteBuffer payload) {
        CRC32C crc = new CRC32C();
        crc.update(payload.array(), payload.arrayOffset() + payload.position(), payload.remaining());
        ByteBuffer head = ByteBuffer.allocate(8);
        head.putInt(payload.remaining()).putInt((int) crc.getValue()).flip();
        return head;
    }

    void append(ByteBuffer payload) {
        ByteBuffer head = record(payload);
        long n = 8L + payload.remaining();
        synchronized (this) {
            if (broken != null) {
                throw new UncheckedIOException("index journal unusable after a failed write", broken);
            }
            try {
                ByteBuffer[] both = {head, payload};
                while (payload.hasRemaining()) {
                    log.write(both);
                }
                if (durability == Durability.ALWAYS) {
                    log.force(false);
                } else {
                    dirty = true;
                }
                end += n;
                bytesSinceSnapshot += n;
            } catch (IOException e) {
                // The caller will not apply this frame, so it must not survive in the log either; and a torn
                // record left in the middle would make recovery cut every later record with it.
                try {
                    log.truncate(end);
                } catch (IOException e2) {
                    e.addSuppressed(e2);
                    broken = e;
                }
                throw new UncheckedIOException("index journal write failed", e);
            }
        }
    }

    synchronized long bytesSinceSnapshot() {
        return bytesSinceSnapshot;
    }

    void sync() {
        if (!dirty) {
            return;
        }
        synchronized (this) {
            try {
                dirty = false;
                log.force(false);
            } catch (IOException e) {
                throw new UncheckedIOException("index journal sync failed", e);
            }
        }
    }

    /**
     * Starts a new journal generation, then lets the writer dump the current state into a new snapshot of that
     * generation; older files are deleted once the snapshot is durable.
     */
    void snapshot(Consumer<Consumer<ByteBuffer>> writer) {
        long gen;
        synchronized (this) {
            try {
                log.force(false);
                log.close();
                gen = ++generation;
                log = FileChannel.open(file("journal-", gen, ".log"), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, StandardOpenOption.APPEND);
                end = log.size();
                bytesSinceSnapshot = 0;
            } catch (IOException e) {
                throw new UncheckedIOException("journal rotation failed", e);
            }
        }
        Path tmp = dir.resolve("snapshot.tmp");
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            writer.accept(payload -> {
                try {
                    ByteBuffer[] both = {record(payload), payload};
                    while (payload.hasRemaining()) {
                        out.write(both);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            out.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException("snapshot write failed", e);
        }
        try {
            Files.move(tmp, file("snapshot-", gen, ".bin"), StandardCopyOption.ATOMIC_MOVE);
            try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                d.force(true);
            } catch (IOException ignored) {
                // directory fsync is not supported everywhere; the rename is still atomic
            }
            for (long g : generations("journal-", ".log")) {
                if (g < gen) {
                    Files.deleteIfExists(file("journal-", g, ".log"));
                }
            }
            for (long g : generations("snapshot-", ".bin")) {
                if (g < gen) {
                    Files.deleteIfExists(file("snapshot-", g, ".bin"));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("snapshot install failed", e);
        }
    }

    @Override
    public synchronized void close() {
        try {
            if (log != null && log.isOpen()) {
                log.force(false);
                log.close();
            }
        } catch (IOException e) {
            LOG.warn("closing journal", e);
        }
    }
}
