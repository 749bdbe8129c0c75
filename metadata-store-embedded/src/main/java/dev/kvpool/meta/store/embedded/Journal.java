package dev.kvpool.meta.store.embedded;

import java.io.IOException;
import java.io.RandomAccessFile;
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
 * Snapshot + append log on local disk. Files are numbered by generation: {@code snapshot-N.kvs} ({@link
 * SnapshotFile}; {@code snapshot-N.bin}, a record stream of frames, from builds before it is still read) holds the
 * state as of some moment after {@code journal-N.log} was opened, so recovery loads the newest complete snapshot and
 * replays journal N and later. Each record is {@code [length][crc32c][payload]}; a torn tail (a crash mid-write)
 * fails its CRC, and the log is cut there.
 *
 * <p>Appends reach the OS with one write() before the caller proceeds, so a killed process loses nothing;
 * {@link Durability#ALWAYS} also forces them to the device before returning, {@link Durability#INTERVAL} does so
 * from a background thread.
 *
 * <p>The log is written through a {@link RandomAccessFile}, not a {@link FileChannel}: a FileChannel is closed for
 * good when a thread blocked in it is interrupted (ClosedByInterruptException), so one interrupted request thread,
 * or the executor shutdown interrupting the background fsync, would leave the index unable to journal anything.
 */
final class Journal implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Journal.class);

    enum Durability { ALWAYS, INTERVAL }

    private final Path dir;
    private final Durability durability;
    private RandomAccessFile log;
    /** Length of the intact prefix of the current log: where the next record starts. */
    private long end;
    /** Set when a failed append could not be cut back off the log; later appends would land behind garbage. */
    private IOException broken;
    private long generation;
    private long bytesSinceSnapshot;
    private long lastSnapshotBytes;
    private volatile boolean dirty;
    /** Holds the directory's lock while the journal is open (no I/O goes through it). */
    private FileChannel lockChannel;

    private final dev.kvpool.meta.backend.LoadProgress progress;

    Journal(Path dir, Durability durability, dev.kvpool.meta.backend.LoadProgress progress) {
        this.dir = dir;
        this.durability = durability;
        this.progress = progress;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create index directory " + dir, e);
        }
    }

    /**
     * Replays snapshot and logs into the sink, then opens the newest log for appending. Refuses a directory that
     * another process (or another store in this one) has open: two writers would cut each other's "torn" tails
     * and interleave their records.
     */
    void recover(SnapshotLoader format2, Consumer<ByteBuffer> sink) {
        try {
            lockDir();
            long snapGen = Math.max(newest("snapshot-", ".bin"), newest("snapshot-", SnapshotFile.SUFFIX));
            List<Long> logs = generations("journal-", ".log");
            long startGen = snapGen >= 0 ? snapGen : (logs.isEmpty() ? 0 : logs.get(0));
            long total = 0;
            for (String suffix : new String[] {".bin", SnapshotFile.SUFFIX}) {
                Path f = file("snapshot-", snapGen, suffix);
                if (snapGen >= 0 && Files.exists(f)) {
                    total += Files.size(f);
                    break;
                }
            }
            for (long g : logs) {
                total += g >= startGen ? Files.size(file("journal-", g, ".log")) : 0;
            }
            progress.total(total);
            if (snapGen >= 0) {
                Path v2 = file("snapshot-", snapGen, SnapshotFile.SUFFIX);
                if (Files.exists(v2)) {
                    format2.load(v2);
                    lastSnapshotBytes = Files.size(v2);
                } else { // format 1, as written before format 2 existed: a record stream of frames
                    Path v1 = file("snapshot-", snapGen, ".bin");
                    readFile(v1, sink, false, progress);
                    lastSnapshotBytes = Files.size(v1);
                }
            }
            generation = startGen;
            for (long g : logs) {
                if (g < startGen) {
                    continue;
                }
                long good = readFile(file("journal-", g, ".log"), sink, true, progress);
                generation = g;
                try (FileChannel ch = FileChannel.open(file("journal-", g, ".log"), StandardOpenOption.WRITE)) {
                    if (ch.size() > good) {
                        LOG.warnf("journal %d: cutting a torn tail of %d bytes", g, ch.size() - good);
                        ch.truncate(good);
                    }
                }
                bytesSinceSnapshot += good;
            }
            log = openLog(generation);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot recover index from " + dir, e);
        }
    }

    /** Loads a format-2 snapshot file (see {@link SnapshotFile}). */
    interface SnapshotLoader {
        void load(Path file) throws IOException;
    }

    /** Writes the state into a format-2 snapshot. */
    interface SnapshotBody {
        void write(SnapshotFile.Writer out) throws IOException;
    }

    /** Size of the newest snapshot (loaded or written), for the policy of when to write the next one. */
    synchronized long lastSnapshotBytes() {
        return lastSnapshotBytes;
    }

    private void lockDir() throws IOException {
        Path p = dir.resolve("lock");
        FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        java.nio.channels.FileLock l;
        try {
            l = ch.tryLock();
        } catch (java.nio.channels.OverlappingFileLockException e) {
            l = null; // held by this process already
        }
        if (l == null) {
            ch.close();
            throw new IllegalStateException("index directory " + dir + " is in use by another metadata plane (" + p
                    + " is locked): give each plane a data directory of its own, or share an index with "
                    + "kvpool.meta.store=redis");
        }
        lockChannel = ch;
    }

    /** Opens a log generation for appending at its end; callers hold the monitor (or are the constructor). */
    private RandomAccessFile openLog(long gen) throws IOException {
        RandomAccessFile f = new RandomAccessFile(file("journal-", gen, ".log").toFile(), "rw");
        end = f.length();
        f.seek(end);
        return f;
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

    /**
     * Returns the offset after the last intact record. Reads the file in 8 MiB blocks and hands each payload out as a
     * view of the block: one read per block, not two per record (a journal of small frames cost ~2 syscalls per
     * record before).
     */
    private static long readFile(Path p, Consumer<ByteBuffer> sink, boolean tolerateTornTail,
                                 dev.kvpool.meta.backend.LoadProgress progress) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            long size = ch.size();
            byte[] block = new byte[(int) Math.min(8 << 20, Math.max(64, size))];
            ByteBuffer bb = ByteBuffer.wrap(block);
            long blockAt = 0; // file offset of block[0]
            int filled = 0, at = 0; // bytes valid in block; start of the next record in block
            long pos = 0;
            CRC32C crc = new CRC32C();
            while (pos + 8 <= size) {
                if (filled - at < 8) {
                    // compact and refill: the record header is not all in the block
                    System.arraycopy(block, at, block, 0, filled - at);
                    filled -= at;
                    blockAt += at;
                    at = 0;
                    filled = fill(ch, block, filled, blockAt, progress);
                    if (filled < 8) {
                        break;
                    }
                }
                int len = bb.getInt(at);
                int sum = bb.getInt(at + 4);
                if (len < 0 || pos + 8 + len > size) {
                    break;
                }
                if (filled - at < 8 + len) {
                    if (8 + len > block.length) { // a record larger than the block: a block of its own
                        byte[] bigger = new byte[8 + len];
                        System.arraycopy(block, at, bigger, 0, filled - at);
                        filled -= at;
                        blockAt += at;
                        at = 0;
                        block = bigger;
                        bb = ByteBuffer.wrap(block);
                    } else {
                        System.arraycopy(block, at, block, 0, filled - at);
                        filled -= at;
                        blockAt += at;
                        at = 0;
                    }
                    filled = fill(ch, block, filled, blockAt, progress);
                    if (filled - at < 8 + len) {
                        break;
                    }
                }
                crc.reset();
                crc.update(block, at + 8, len);
                if ((int) crc.getValue() != sum) {
                    break;
                }
                sink.accept(ByteBuffer.wrap(block, at + 8, len).slice());
                at += 8 + len;
                pos += 8 + len;
            }
            if (pos != size && !tolerateTornTail) {
                throw new IOException(p + " is damaged at offset " + pos);
            }
            return pos;
        }
    }

    /** Reads from the file at {@code fileAt + filled} until the block is full or the file ends; returns filled. */
    private static int fill(FileChannel ch, byte[] block, int filled, long fileAt, dev.kvpool.meta.backend.LoadProgress progress)
            throws IOException {
        ByteBuffer b = ByteBuffer.wrap(block, filled, block.length - filled);
        while (b.hasRemaining()) {
            int r = ch.read(b, fileAt + b.position());
            if (r < 0) {
                break;
            }
            progress.read(r);
        }
        return b.position();
    }

    dev.kvpool.meta.backend.LoadProgress progress() {
        return progress;
    }

    /** {@code [length][crc32c][payload]} in one array, so that one write() puts the whole record down. */
    private static byte[] record(ByteBuffer payload) {
        int len = payload.remaining();
        byte[] rec = new byte[8 + len];
        System.arraycopy(payload.array(), payload.arrayOffset() + payload.position(), rec, 8, len);
        CRC32C crc = new CRC32C();
        crc.update(rec, 8, len);
        ByteBuffer.wrap(rec).putInt(len).putInt((int) crc.getValue());
        payload.position(payload.limit());
        return rec;
    }

    void append(ByteBuffer payload) {
        byte[] rec = record(payload);
        synchronized (this) {
            if (broken != null) {
                throw new UncheckedIOException("index journal unusable after a failed write", broken);
            }
            if (log == null) {
                throw new UncheckedIOException(new IOException("index journal is closed"));
            }
            try {
                log.write(rec);
                if (durability == Durability.ALWAYS) {
                    log.getFD().sync();
                } else {
                    dirty = true;
                }
                end += rec.length;
                bytesSinceSnapshot += rec.length;
            } catch (IOException e) {
                // The caller will not apply this frame, so it must not survive in the log either; and a torn
                // record left in the middle would make recovery cut every later record with it.
                try {
                    log.setLength(end);
                    log.seek(end);
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
            if (log == null) {
                return; // closed: close() synced
            }
            try {
                dirty = false;
                log.getFD().sync();
            } catch (IOException e) {
                dirty = true;
                throw new UncheckedIOException("index journal sync failed", e);
            }
        }
    }

    /**
     * Starts a new journal generation, then lets the writer dump the current state into a new snapshot of that
     * generation; older files are deleted once the snapshot is durable.
     */
    void snapshot(SnapshotBody writer) {
        long gen;
        synchronized (this) {
            if (log == null) {
                throw new UncheckedIOException(new IOException("index journal is closed"));
            }
            try {
                // open the next generation first: if that fails, appends carry on in the current one
                RandomAccessFile next = new RandomAccessFile(file("journal-", generation + 1, ".log").toFile(), "rw");
                try {
                    log.getFD().sync();
                    log.close();
                } catch (IOException e) {
                    next.close();
                    throw e;
                }
                gen = ++generation;
                log = next;
                end = next.length();
                next.seek(end);
                dirty = false;
                bytesSinceSnapshot = 0;
            } catch (IOException e) {
                throw new UncheckedIOException("journal rotation failed", e);
            }
        }
        Path tmp = dir.resolve("snapshot.tmp");
        long bytes;
        try (SnapshotFile.Writer out = new SnapshotFile.Writer(tmp)) {
            writer.write(out);
            out.end();
            out.force();
            bytes = out.bytes();
        } catch (IOException e) {
            throw new UncheckedIOException("snapshot write failed", e);
        }
        try {
            Files.move(tmp, file("snapshot-", gen, SnapshotFile.SUFFIX), StandardCopyOption.ATOMIC_MOVE);
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
            for (String suffix : new String[] {".bin", SnapshotFile.SUFFIX}) {
                for (long g : generations("snapshot-", suffix)) {
                    if (g < gen) {
                        Files.deleteIfExists(file("snapshot-", g, suffix));
                    }
                }
            }
            synchronized (this) {
                lastSnapshotBytes = bytes;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("snapshot install failed", e);
        }
    }

    @Override
    public synchronized void close() {
        if (log == null) {
            unlockDir();
            return;
        }
        try {
            log.getFD().sync();
        } catch (IOException e) {
            LOG.warn("syncing journal on close", e);
        }
        try {
            log.close();
        } catch (IOException e) {
            LOG.warn("closing journal", e);
        }
        log = null;
        unlockDir();
    }

    /** See {@link EmbeddedStore#releaseLockLikeAKill()}. */
    synchronized void releaseLockLikeAKill() {
        unlockDir();
    }

    private void unlockDir() {
        if (lockChannel != null) {
            try {
                lockChannel.close(); // releases the lock
            } catch (IOException e) {
                LOG.warn("releasing the index directory lock", e);
            }
            lockChannel = null;
        }
    }
}
