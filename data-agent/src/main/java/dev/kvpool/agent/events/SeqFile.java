package dev.kvpool.agent.events;

import dev.kvpool.agent.io.SpoolLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Properties;

/**
 * Where an agent's {@code seq} goes on after a restart. Consumers dedupe on {@code ce_id = <agent>-<seq>}, so a seq
 * used again would make them drop new batches as duplicates. The file holds a reservation: seqs below it may have
 * been used. It is moved {@link #RESERVE} ahead (one fsync) whenever the publisher reaches it; a clean close writes
 * the exact next seq. After a crash the agent starts at the reservation, so the stream has a gap there, never a
 * repeat; the batches still spooled have smaller seqs and are sent first from the {@link SpoolLog}.
 */
public final class SeqFile {
    static final long RESERVE = 4096;

    private final Path path;
    private final long first;
    private final boolean clean;
    private long reserved;

    private SeqFile(Path path, long first, boolean clean) {
        this.path = path;
        this.first = first;
        this.clean = clean;
    }

    /** Reads the file (none: start at 0) and reserves the first seqs of this run. */
    public static SeqFile open(Path path) {
        long first = 0;
        boolean clean = true;
        if (Files.exists(path)) {
            Properties p = new Properties();
            try (var in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
                p.load(in);
                clean = Boolean.parseBoolean(p.getProperty("clean", "false"));
                first = Long.parseLong(p.getProperty(clean ? "next" : "reserved", "0").trim());
            } catch (IOException | NumberFormatException e) {
                throw new IllegalStateException("cannot read the event sequence file " + path + " (" + e.getMessage()
                        + "); delete it to start the sequence again, consumers then see seq restart", e);
            }
        }
        SeqFile f = new SeqFile(path, first, clean);
        f.reserve(first);
        return f;
    }

    /** The seq this run starts at. */
    public long first() {
        return first;
    }

    /** Whether the previous run closed the file (false after a crash, or for a new file). */
    public boolean cleanBefore() {
        return clean;
    }

    /** The publisher will use {@code next} next: reserve more when it reaches the reservation. */
    public void advanced(long next) {
        if (next >= reserved) {
            reserve(next);
        }
    }

    /** A clean stop: the next run starts at {@code next} exactly. */
    public void closed(long next) {
        write(next, next, true);
    }

    private void reserve(long next) {
        reserved = next + RESERVE;
        write(next, reserved, false);
    }

    private void write(long next, long reserved, boolean clean) {
        String text = "# KVPool data agent: the kvpool.blocks seq of this agent (do not edit)\n" + "next=" + next + "\n"
                + "reserved=" + reserved + "\n" + "clean=" + clean + "\n";
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
                ch.force(true); // on the disk before it replaces the old reservation
            }
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the event sequence file " + path, e);
        }
    }
}
