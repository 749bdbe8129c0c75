package dev.kvpool.meta.store.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.StoreDump;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot format 2 (columns as they lie in memory): what it restores, the older format it still reads, a changed
 * shard count, damage found rather than loaded, the snapshot a clean close leaves, and the journal's block reader.
 */
class SnapshotFormatTest {
    private static final List<String> SECTIONS = List.of("instances");
    private static final int NOW = 1_700_000_000;

    @TempDir
    Path dir;

    private final List<EmbeddedStore> opened = new ArrayList<>();
    private long nextId = 1;
    private int nextSession = 1;

    private EmbeddedStore open(int shards) {
        EmbeddedStore s = new EmbeddedStore(new EmbeddedStore.Options(dir, shards, false, Duration.ofMinutes(10),
                Long.MAX_VALUE));
        opened.add(s);
        return s;
    }

    @AfterEach
    void closeAll() {
        opened.forEach(EmbeddedStore::close);
    }

    private static String dump(EmbeddedStore s) {
        return StoreDump.of(s, SECTIONS);
    }

    private void serve(InstanceIndex ix, long from, int n, int minReplicas) {
        long[] keys = new long[n], a = new long[n], b = new long[n];
        for (int i = 0; i < n; i++) {
            long id = nextId++;
            keys[i] = from + i;
            a[i] = Loc.a(id, Loc.NEW, 1 + (int) (id % 5), (int) (id % 4));
            b[i] = id * 4096 + 17;
        }
        String sid = "s" + nextSession++;
        var r = ix.startWrite(keys, a, b, minReplicas, st -> true, 0, sid, NOW + 30_000L, NOW);
        boolean[] ok = new boolean[r.session().size()];
        Arrays.fill(ok, true);
        ix.finishWrite(sid, ok, NOW + 5);
    }

    /** Many keys (several chunks per column would need millions; several shards and growths suffice), extras, sessions. */
    private void populate(EmbeddedStore s) {
        InstanceIndex a = s.index("a");
        serve(a, 0, 50_000, 1);
        serve(a, 100, 40, 2); // a second replica on 40 keys: the side map
        InstanceIndex b = s.index("b");
        serve(b, -1_000, 3_000, 1);
        var open = b.startWrite(new long[] {7_000_000, 7_000_001}, new long[] {Loc.a(999_999, Loc.NEW, 1, 0),
                Loc.a(999_998, Loc.NEW, 1, 0)}, new long[] {1, 2}, 1, st -> true, 0, "open-session", NOW + 30_000L, NOW);
        assertEquals(2, open.session().size());
        s.index("empty");
        s.putRecord("instances", "a", "reg a".getBytes(StandardCharsets.UTF_8));
    }

    private List<String> files() throws IOException {
        try (Stream<Path> f = Files.list(dir)) {
            return f.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private Path snapshotFile() throws IOException {
        try (Stream<Path> f = Files.list(dir)) {
            return f.filter(p -> p.getFileName().toString().endsWith(SnapshotFile.SUFFIX)).findFirst().orElseThrow();
        }
    }

    @Test
    void aSnapshotRestoresEverythingAndTheJournalAfterItReplaysOnTop() throws IOException {
        EmbeddedStore s = open(4);
        populate(s);
        s.snapshot();
        serve(s.index("a"), 60_000, 500, 1); // into the new journal generation
        String before = dump(s);
        s.close();
        assertTrue(files().stream().anyMatch(n -> n.endsWith(".kvs")), files().toString());
        assertFalse(files().stream().anyMatch(n -> n.endsWith(".bin")), files().toString());
        EmbeddedStore again = open(4);
        assertEquals(before, dump(again));
        assertEquals(50_000 + 500, again.index("a").keyCount(), "key counts come from the loaded tables");
        assertEquals(3_002, again.index("b").keyCount());
        assertTrue(again.instanceIds().contains("empty"));
    }

    @Test
    void anotherShardCountReinsertsEveryKey() {
        EmbeddedStore s = open(16);
        populate(s);
        s.snapshot();
        String before = dump(s);
        s.close();
        EmbeddedStore again = open(4);
        assertEquals(before, dump(again));
        again.snapshot(); // and its own snapshot, in the new layout, reads back the same
        again.close();
        assertEquals(before, dump(open(4)));
    }

    @Test
    void aSnapshotOfTheOlderFormatIsStillRead() throws IOException {
        // format 1: [length][crc32c][payload] records of frames, as builds before format 2 wrote snapshot-N.bin
        Frame rec = new Frame("").recordPut("instances", "a", "old".getBytes(StandardCharsets.UTF_8));
        Frame blocks = new Frame("a");
        for (long k = 0; k < 1_000; k++) {
            blocks.block(k, new long[] {Loc.a(k + 1, Loc.SERVING, 1, 0), k * 4096}, Loc.meta(NOW, NOW));
        }
        blocks.block(5_000, new long[] {Loc.a(9_001, Loc.SERVING, 1, 0), 1, Loc.a(9_002, Loc.SERVING, 2, 0), 2},
                Loc.meta(NOW, NOW));
        Frame sessions = new Frame("a");
        try (FileChannel ch = FileChannel.open(dir.resolve("snapshot-000000000003.bin"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            for (Frame f : new Frame[] {rec, blocks, sessions, new Frame("").end()}) {
                ByteBuffer p = f.finish();
                CRC32C crc = new CRC32C();
                crc.update(p.duplicate());
                ByteBuffer head = ByteBuffer.allocate(8).putInt(p.remaining()).putInt((int) crc.getValue()).flip();
                ch.write(new ByteBuffer[] {head, p});
            }
        }
        EmbeddedStore s = open(4);
        assertEquals(1_001, s.index("a").keyCount());
        assertEquals(2, s.index("a").get(5_000).size(), "both replicas of the multi-replica key");
        String before = dump(s);
        s.snapshot();
        assertEquals(List.of("journal-000000000004.log", "lock", "snapshot-000000000004.kvs"), files(),
                "the new snapshot replaces the older format");
        s.close();
        assertEquals(before, dump(open(4)));
    }

    @Test
    void aDamagedColumnIsRefusedNotLoaded() throws IOException {
        EmbeddedStore s = open(4);
        populate(s);
        s.snapshot();
        s.close();
        Path snap = snapshotFile();
        long size = Files.size(snap);
        try (FileChannel ch = FileChannel.open(snap, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, size / 2);
            one.flip();
            byte flipped = (byte) (one.get() ^ 0x5a);
            ch.write(ByteBuffer.wrap(new byte[] {flipped}), size / 2);
        }
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> open(4));
        assertTrue(String.valueOf(e.getCause()).contains("damaged"), String.valueOf(e.getCause()));
    }

    @Test
    void aTruncatedSnapshotIsRefused() throws IOException {
        EmbeddedStore s = open(4);
        populate(s);
        s.snapshot();
        s.close();
        Path snap = snapshotFile();
        try (FileChannel ch = FileChannel.open(snap, StandardOpenOption.WRITE)) {
            ch.truncate(Files.size(snap) - 1); // the END section cut
        }
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> open(4));
        assertTrue(String.valueOf(e.getCause()).contains("damaged"), String.valueOf(e.getCause()));
    }

    @Test
    void aCleanCloseLeavesASnapshotAndAnEmptyJournal() throws IOException {
        EmbeddedStore s = open(4);
        serve(s.index("a"), 0, 20_000, 1); // > 1 MiB of journal
        String before = dump(s);
        s.close();
        List<String> f = files();
        assertTrue(f.stream().anyMatch(n -> n.endsWith(".kvs")), "close wrote a snapshot: " + f);
        Path journal = dir.resolve(f.stream().filter(n -> n.startsWith("journal-")).findFirst().orElseThrow());
        assertEquals(0, Files.size(journal), "nothing left to replay");
        assertEquals(before, dump(open(4)));
    }

    @Test
    void recoveryReportsTheBytesItRead() throws IOException {
        EmbeddedStore s = open(4);
        populate(s);
        s.snapshot();
        serve(s.index("a"), 60_000, 100, 1);
        s.releaseLockLikeAKill(); // snapshot + journal both to read
        long bytes = 0;
        for (String f : files()) {
            bytes += f.startsWith("snapshot-") || f.startsWith("journal-") ? Files.size(dir.resolve(f)) : 0;
        }
        dev.kvpool.meta.backend.LoadProgress progress = new dev.kvpool.meta.backend.LoadProgress();
        EmbeddedStore again = new EmbeddedStore(new EmbeddedStore.Options(dir, 4, false, Duration.ofMinutes(10),
                Long.MAX_VALUE), progress);
        opened.add(again);
        assertEquals(bytes, progress.total(), "the snapshot and the journal after it");
        assertEquals(bytes, progress.read());
    }

    @Test
    void aSmallJournalIsNotSnapshottedOnClose() throws IOException {
        EmbeddedStore s = open(4);
        serve(s.index("a"), 0, 10, 1);
        s.close();
        assertFalse(files().stream().anyMatch(n -> n.startsWith("snapshot-")), files().toString());
    }

    @Test
    void theBackgroundThresholdFollowsTheSnapshotSize() {
        EmbeddedStore s = new EmbeddedStore(new EmbeddedStore.Options(dir, 4, false, Duration.ofMinutes(10),
                256L << 20));
        opened.add(s);
        assertEquals(EmbeddedStore.MIN_JOURNAL_BYTES, s.snapshotThreshold(), "no snapshot yet: the floor");
        populate(s);
        s.snapshot();
        assertEquals(EmbeddedStore.MIN_JOURNAL_BYTES, s.snapshotThreshold(), "a small snapshot: still the floor");
        EmbeddedStore capped = new EmbeddedStore(new EmbeddedStore.Options(dir.resolve("capped"), 4, false,
                Duration.ofMinutes(10), 64 * 1024));
        opened.add(capped);
        assertEquals(64 * 1024, capped.snapshotThreshold(), "snapshot-bytes caps it");
    }

    @Test
    void journalRecordsSpanningReadBlocksAndLargerThanABlockReplay() throws IOException {
        EmbeddedStore s = open(4);
        InstanceIndex a = s.index("a");
        // 40 records of ~300 KB (a 10,000-key start + finish each): many cross the 8 MiB read-block boundary
        for (int i = 0; i < 40; i++) {
            serve(a, i * 10_000L, 10_000, 1);
        }
        // and one frame larger than a read block (~ 250,000 keys x 37 B ≈ 9 MB)
        serve(a, 1_000_000, 250_000, 1);
        String before = dump(s);
        s.releaseLockLikeAKill(); // no close: no snapshot, everything in the journal
        EmbeddedStore again = open(4);
        assertEquals(before, dump(again));
        assertEquals(650_000, again.index("a").keyCount());
    }
}
