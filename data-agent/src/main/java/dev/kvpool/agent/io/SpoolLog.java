package dev.kvpool.agent.io;

import dev.kvpool.agent.io.FileLocks;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * An append-only log of records waiting to be handed on, so that they survive a stop or a {@code kill -9} of the
 * agent: the event spool (batches waiting for Kafka; they used to live only in memory, and an agent restarted
 * during a Kafka outage lost them, a gap in {@code seq}) and the global-pool backlog (copies owed while the
 * metadata plane was out of reach).
 *
 * <p>Every record is appended with a growing seq and forgotten ({@link #done}) once handed on or dropped. The log is
 * a directory of segments named by their first seq; a segment rolls at {@code segmentBytes} and is deleted once all
 * its records are done, and the active segment is truncated whenever everything is done, so the log stays small
 * while the consumer keeps up. The last done seq is kept in the file {@code done} (which also holds the lock), so a
 * restart hands on nothing already done from a segment that was only partly done. Appends are plain writes to the
 * page cache: a killed process loses nothing (the kernel owns the pages); only {@link #close} forces them to the
 * disk, so a power loss may lose the last records (for events, the {@code seq} gap then says so). Each record
 * carries a CRC32C: a torn or damaged tail ends the recovery of its segment. Records done just before a crash may
 * be handed on again after it; consumers of events dedupe on {@code ce_id}, and a pool copy written twice is
 * skipped by the metadata plane.
 *
 * <p>Not thread-safe: its owner calls it under its lock.
 */
public final class SpoolLog implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SpoolLog.class.getName());
    static final int MAGIC = 0x4B565350; // "KVSP"
    /** magic, value length, seq, timestamp, CRC32C of (seq, timestamp, value). */
    static final int HEADER = 4 + 4 + 8 + 8 + 4;
    public static final long DEFAULT_SEGMENT_BYTES = 4L << 20;
    private static final String SUFFIX = ".seg";

    /** A record read back at start-up. */
    public record Batch(long seq, long tsMs, byte[] value) {
    }

    private static final class Segment {
        final Path path;
        long lastSeq = -1;
        long size;
        FileChannel ch; // the active (last) segment only

        Segment(Path path) {
            this.path = path;
        }
    }

    private final Path dir;
    private final String what; // for messages: "event spool", "global-pool backlog"
    private final long segmentBytes;
    private final FileChannel lockChannel; // the "done" file
    private final FileLock lock;
    private final ByteBuffer doneBuf = ByteBuffer.allocate(8);
    private long lastDone;
    private final ArrayDeque<Segment> segments = new ArrayDeque<>(); // oldest first
    private final List<Batch> recovered;
    private final ByteBuffer header = ByteBuffer.allocate(HEADER);
    private final CRC32C crc = new CRC32C();
    private Segment active;

    private SpoolLog(Path dir, String what, long segmentBytes, FileChannel lockChannel, FileLock lock)
            throws IOException {
        this.dir = dir;
        this.what = what;
        this.segmentBytes = segmentBytes;
        this.lockChannel = lockChannel;
        this.lock = lock;
        ByteBuffer b = ByteBuffer.allocate(8);
        this.lastDone = lockChannel.read(b, 0) == 8 ? b.getLong(0) : -1;
        this.recovered = recover();
    }

    /** The event spool. */
    public static SpoolLog open(Path dir) {
        return open(dir, DEFAULT_SEGMENT_BYTES);
    }

    public static SpoolLog open(Path dir, long segmentBytes) {
        return open(dir, segmentBytes, "event spool");
    }

    /**
     * Opens (creates) the log's directory and reads back what a previous run left. Fails if another process, or
     * another owner in this one, has it open: two agents appending to one log would mix their records.
     */
    public static SpoolLog open(Path dir, long segmentBytes, String what) {
        FileChannel ch = null;
        try {
            Files.createDirectories(dir);
            ch = FileChannel.open(dir.resolve("done"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            FileLock l = FileLocks.tryLock(ch);
            if (l == null) {
                throw new IllegalStateException("the " + what + " " + dir + " is in use by another agent; give"
                        + " each agent its own data directory");
            }
            return new SpoolLog(dir, what, Math.max(HEADER + 1, segmentBytes), ch, l);
        } catch (IOException e) {
            close(ch);
            throw new UncheckedIOException("cannot open the " + what + " " + dir, e);
        } catch (RuntimeException e) {
            close(ch);
            throw e;
        }
    }

    /** Records a previous run appended and never marked done, oldest first. */
    public List<Batch> recovered() {
        return recovered;
    }

    /** Appends a record; seqs must grow. */
    public void append(long seq, long tsMs, byte[] value) {
        try {
            if (active == null || active.size >= segmentBytes) {
                roll(seq);
            }
            crc.reset();
            header.clear().putLong(0, seq).putLong(8, tsMs).limit(16);
            crc.update(header);
            crc.update(value);
            header.clear();
            header.putInt(MAGIC).putInt(value.length).putLong(seq).putLong(tsMs).putInt((int) crc.getValue()).flip();
            ByteBuffer body = ByteBuffer.wrap(value);
            long pos = active.size;
            while (header.hasRemaining()) {
                pos += active.ch.write(header, pos);
            }
            while (body.hasRemaining()) {
                pos += active.ch.write(body, pos);
            }
            active.size = pos;
            active.lastSeq = seq;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the " + what + " " + dir, e);
        }
    }

    /** The highest seq a run marked done: the next run's seqs must be above it. */
    public long lastDone() {
        return lastDone;
    }

    /** Every record up to and including {@code seq} is handed on or dropped: its bytes may go. */
    public void done(long seq) {
        try {
            if (seq > lastDone) { // one 8-byte write to the page cache: atomic for a killed process
                lastDone = seq;
                lockChannel.write(doneBuf.clear().putLong(0, seq), 0);
            }
            while (!segments.isEmpty() && segments.peekFirst().lastSeq <= seq) {
                Segment s = segments.peekFirst();
                if (s == active) { // everything is done: empty it in place rather than create a file per batch
                    if (s.size > 0) {
                        s.ch.truncate(0);
                        s.size = 0;
                    }
                    return;
                }
                segments.pollFirst();
                Files.deleteIfExists(s.path);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot trim the " + what + " " + dir, e);
        }
    }

    /** Bytes on disk (for tests and status). */
    public long bytes() {
        long n = 0;
        for (Segment s : segments) {
            n += s.size;
        }
        return n;
    }

    public int segmentCount() {
        return segments.size();
    }

    public Path dir() {
        return dir;
    }

    private void roll(long firstSeq) throws IOException {
        if (active != null) {
            active.ch.close();
            active.ch = null;
            if (active.size == 0) { // emptied by done(): its name's seq is stale, replace it
                segments.remove(active);
                Files.deleteIfExists(active.path);
            }
        }
        Segment s = new Segment(dir.resolve(String.format("%020d", firstSeq) + SUFFIX));
        s.ch = FileChannel.open(s.path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
        segments.addLast(s);
        active = s;
    }

    private List<Batch> recover() throws IOException {
        List<Path> files;
        try (Stream<Path> list = Files.list(dir)) {
            files = list.filter(p -> p.getFileName().toString().endsWith(SUFFIX)).sorted().toList();
        }
        List<Batch> out = new ArrayList<>();
        long last = -1;
        for (Path f : files) {
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f));
            Segment seg = new Segment(f);
            while (b.remaining() >= HEADER) {
                int at = b.position();
                int magic = b.getInt(), len = b.getInt();
                long seq = b.getLong(), ts = b.getLong();
                int sum = b.getInt();
                if (magic != MAGIC || len < 0 || len > b.remaining()) {
                    b.position(at);
                    break;
                }
                byte[] value = new byte[len];
                b.get(value);
                crc.reset();
                crc.update(header.clear().putLong(0, seq).putLong(8, ts).limit(16));
                crc.update(value);
                if ((int) crc.getValue() != sum) {
                    b.position(at);
                    break;
                }
                if (seq > last) { // never send a seq twice or out of order, whatever the files say
                    if (seq > lastDone) {
                        out.add(new Batch(seq, ts, value));
                    }
                    last = seq;
                    seg.lastSeq = seq;
                }
                seg.size = b.position();
            }
            if (b.hasRemaining()) {
                LOG.warning(what + " " + f + ": " + b.remaining() + " bytes after the last whole record ignored"
                        + " (torn by a crash or damaged)");
            }
            if (seg.lastSeq <= lastDone) { // nothing in it left to send
                Files.deleteIfExists(f);
            } else {
                segments.addLast(seg); // read-only from now on: appends go to a new segment
            }
        }
        return List.copyOf(out);
    }

    @Override
    public void close() {
        try {
            if (active != null && active.ch != null) {
                active.ch.force(false);
                active.ch.close();
                if (active.size == 0) {
                    segments.remove(active);
                    Files.deleteIfExists(active.path);
                }
            }
        } catch (IOException e) {
            LOG.warning(what + " " + dir + ": " + e);
        } finally {
            try {
                lock.release();
            } catch (IOException ignored) {
                // closing the channel releases it too
            }
            close(lockChannel);
        }
    }

    private static void close(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }
}
