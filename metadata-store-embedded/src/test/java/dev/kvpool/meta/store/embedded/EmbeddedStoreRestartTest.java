package dev.kvpool.meta.store.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.InstanceIndex.StartResult;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.index.StoreDump;
import dev.kvpool.meta.index.WriteSession;
import java.io.IOException;
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
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Restart of the directory-backed store: clean close, snapshot, torn journal tail, crash without close. */
class EmbeddedStoreRestartTest {
    private static final List<String> SECTIONS = List.of("instances", "groups");
    private static final int NOW = 1_700_000_000;

    @TempDir
    Path dir;

    private final List<EmbeddedStore> opened = new ArrayList<>();
    private long nextId = 1;
    private int nextSession = 1;

    private EmbeddedStore open() {
        return open(Long.MAX_VALUE, Duration.ofMinutes(10));
    }

    private EmbeddedStore open(long snapshotBytes, Duration syncInterval) {
        EmbeddedStore s = new EmbeddedStore(new EmbeddedStore.Options(dir, 4, false, syncInterval, snapshotBytes));
        opened.add(s);
        return s;
    }

    @AfterEach
    void closeAll() {
        opened.forEach(EmbeddedStore::close); // closing twice is harmless
    }

    private static String dump(IndexStore s) {
        return StoreDump.of(s, SECTIONS);
    }

    private EmbeddedStore reopen(EmbeddedStore s) {
        s.close();
        return open();
    }

    private StartResult write(InstanceIndex ix, String session, int minReplicas, long... keys) {
        long[] a = new long[keys.length], b = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            long id = nextId++;
            a[i] = Loc.a(id, Loc.NEW, 1 + (int) (id % 5), (int) (id % 4));
            b[i] = id * 4096 + 17;
        }
        return ix.startWrite(keys, a, b, minReplicas, st -> true, 0, session, NOW + 30_000L, NOW);
    }

    private String sid() {
        return "sess-" + nextSession++;
    }

    private void serve(InstanceIndex ix, long... keys) {
        String s = sid();
        int n = write(ix, s, 1, keys).session().size();
        boolean[] ok = new boolean[n];
        Arrays.fill(ok, true);
        ix.finishWrite(s, ok, NOW + 5);
    }

    private static long[] range(long from, int n) {
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = from + i;
        }
        return k;
    }

    /** A bit of everything: every status, multi-replica keys, open and empty sessions, records, drop, clear. */
    private void populate(EmbeddedStore s, int salt) {
        InstanceIndex a = s.index("inst-a");
        InstanceIndex b = s.index("inst-b");
        s.index("inst-empty-" + salt);
        serve(a, range(salt * 10_000L, 500));
        serve(a, 0, -1, Long.MIN_VALUE, Long.MAX_VALUE);
        write(a, sid(), 1, range(salt * 10_000L + 400, 200));       // 100 new keys WRITING, session open
        write(a, sid(), 2, range(salt * 10_000L, 3));               // extra replicas on SERVING keys
        String failing = sid();
        write(a, failing, 1, range(salt * 10_000L + 700, 10));
        a.finishWrite(failing, new boolean[] {true, false, true, false, true, false, true, false, true, false}, NOW + 6);
        LocList del = a.markDeleting(range(salt * 10_000L + 100, 50), 0, 50, i -> i % 5 == 0);
        for (int i = 0; i < del.size(); i += 2) {
            a.purge(del.key(i), Loc.id(del.a(i))); // half of them purged, the rest stay DELETING
        }
        write(a, sid(), 1, range(salt * 10_000L, 10));              // all exist: an empty session
        serve(b, range(-500, 300));
        write(b, sid(), 1, range(0, 5));
        InstanceIndex c = s.index("inst-c-" + salt);
        serve(c, range(1, 100));
        c.clear();
        serve(c, range(50, 20));
        InstanceIndex d = s.index("inst-dropped-" + salt);
        serve(d, range(1, 30));
        write(d, sid(), 1, range(100, 3));
        s.drop("inst-dropped-" + salt);
        s.putRecord("instances", "i" + salt, ("registration " + salt).getBytes(StandardCharsets.UTF_8));
        s.putRecord("instances", "shared", new byte[] {(byte) salt});
        s.putRecord("groups", "g" + salt, new byte[0]);
        s.putRecord("groups", "tmp", new byte[] {9});
        s.removeRecord("groups", "tmp");
    }

    private Path newestJournal() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().matches("journal-\\d+\\.log"))
                    .max(Path::compareTo).orElseThrow();
        }
    }

    private List<String> files() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void closeAndReopenRestoresEverything() {
        EmbeddedStore s = open();
        populate(s, 1);
        String before = dump(s);
        assertTrue(before.contains("CLS_WRITING") && before.contains("CLS_SERVING") && before.contains("CLS_DELETING"));
        assertTrue(before.contains("inst-empty-1"));
        assertFalse(before.contains("inst-dropped-1"));
        s = reopen(s);
        assertEquals(before, dump(s));
        // and the reopened store keeps working and persisting
        populate(s, 2);
        String second = dump(s);
        s = reopen(s);
        assertEquals(second, dump(s));
        // sessions carried over can be finished after the restart
        InstanceIndex a = s.index("inst-a");
        WriteSession open = a.sessions().stream().filter(x -> x.size() == 100).findFirst().orElseThrow();
        boolean[] ok = new boolean[open.size()];
        Arrays.fill(ok, true);
        assertEquals(100, a.finishWrite(open.id(), ok, NOW + 9).served());
        String third = dump(s);
        s = reopen(s);
        assertEquals(third, dump(s));
    }

    @Test
    void snapshotThenMoreWritesThenReopen() throws IOException {
        EmbeddedStore s = open();
        populate(s, 1);
        s.snapshot();
        List<String> f = files();
        assertEquals(1, f.stream().filter(n -> n.startsWith("snapshot-")).count(), f.toString());
        assertEquals(1, f.stream().filter(n -> n.startsWith("journal-")).count(), "older generations deleted: " + f);
        populate(s, 2);
        s.index("inst-a").clear();
        serve(s.index("inst-a"), range(77, 7));
        s.drop("inst-b");
        String before = dump(s);
        s = reopen(s);
        assertEquals(before, dump(s));
        // snapshot right after recovery, twice, then reopen again
        s.snapshot();
        s.snapshot();
        assertEquals(before, dump(s));
        s = reopen(s);
        assertEquals(before, dump(s));
        // a snapshot of the empty-journal state, then writes into the new generation only
        populate(s, 3);
        s.snapshot();
        populate(s, 4);
        String last = dump(s);
        s = reopen(s);
        assertEquals(last, dump(s));
    }

    @Test
    void aDroppedInstanceStaysDroppedAndAnEmptyOneStaysAcrossSnapshots() {
        EmbeddedStore s = open();
        serve(s.index("x"), 1, 2, 3);
        s.index("empty");
        s.drop("x");
        s.snapshot();
        s = reopen(s);
        assertNull(s.existing("x"));
        assertNotNull(s.existing("empty"));
        // re-created after the drop: starts empty, and survives
        serve(s.index("x"), 4);
        s.snapshot();
        s = reopen(s);
        assertEquals(1, s.existing("x").keyCount());
        assertNotNull(s.existing("x").get(4));
        assertNull(s.existing("x").get(1));
    }

    @Test
    void aDroppedIndexRefusesNewWritesAndIgnoresLateOnes() {
        EmbeddedStore s = open();
        InstanceIndex x = s.index("x");
        String open = sid();
        write(x, open, 1, 1, 2);
        serve(x, 3);
        s.drop("x");
        assertThrows(IllegalStateException.class, () -> write(x, sid(), 1, 9));
        // what the service may still do with its old reference is a no-op, not a resurrection
        assertNull(x.finishWrite(open, new boolean[] {true, true}, NOW));
        assertEquals(0, x.markDeleting(new long[] {3}, 0, 1, null).size());
        assertEquals(0, x.purge(3, 1).size());
        x.clear();
        s = reopen(s);
        assertNull(s.existing("x"));
        assertFalse(s.instanceIds().contains("x"));
    }

    /** The last operation: one frame, so cutting into it must lose exactly it. */
    private void lastFrame(EmbeddedStore s) {
        write(s.index("inst-a"), "the-last-session", 1, 123_456_789L, 123_456_790L);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 8, 9, 40})
    void aTornJournalTailIsCutAndEverythingBeforeItIsIntact(int cut) throws IOException {
        EmbeddedStore s = open();
        populate(s, 1);
        String before = dump(s);
        lastFrame(s);
        s.close();
        Path log = newestJournal();
        long size = Files.size(log);
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
            ch.truncate(size - cut);
        }
        s = open();
        assertEquals(before, dump(s));
        assertNull(s.sessionOwner("the-last-session"));
        assertTrue(Files.size(log) < size - cut || cut >= size, "the torn record was cut off the file");
        // appends after the cut are not hidden behind the torn record
        lastFrame(s);
        String after = dump(s);
        s = reopen(s);
        assertEquals(after, dump(s));
        assertEquals("inst-a", s.sessionOwner("the-last-session"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"short", "random", "plausible-header", "huge-length", "negative-length"})
    void garbageAfterTheLastRecordIsCut(String kind) throws IOException {
        EmbeddedStore s = open();
        populate(s, 1);
        lastFrame(s);
        String before = dump(s);
        s.close();
        Path log = newestJournal();
        long size = Files.size(log);
        SplittableRandom r = new SplittableRandom(kind.hashCode());
        ByteBuffer junk = switch (kind) {
            case "short" -> ByteBuffer.wrap(new byte[] {1, 2, 3});
            case "random" -> {
                byte[] b = new byte[100];
                r.nextBytes(b);
                b[0] = 0; // keep the length positive and small enough to be read and CRC-checked
                b[1] = 0;
                b[2] = 0;
                b[3] = 50;
                yield ByteBuffer.wrap(b);
            }
            case "plausible-header" -> {
                ByteBuffer b = ByteBuffer.allocate(8 + 40);
                b.putInt(40).putInt(0x12345678);
                while (b.hasRemaining()) {
                    b.put((byte) 7);
                }
                yield b.flip();
            }
            case "huge-length" -> ByteBuffer.allocate(12).putInt(Integer.MAX_VALUE).putInt(1).putInt(2).flip();
            default -> ByteBuffer.allocate(12).putInt(-5).putInt(1).putInt(2).flip();
        };
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            ch.write(junk);
        }
        s = open();
        assertEquals(before, dump(s));
        assertEquals(size, Files.size(log), "exactly the garbage was cut");
        serve(s.index("inst-a"), 987_654_321L);
        String after = dump(s);
        s = reopen(s);
        assertEquals(after, dump(s));
        assertNotNull(s.index("inst-a").get(987_654_321L));
    }

    @Test
    void aTornTailAfterASnapshotCutsOnlyTheNewGeneration() throws IOException {
        EmbeddedStore s = open();
        populate(s, 1);
        s.snapshot();
        populate(s, 2);
        String before = dump(s);
        lastFrame(s);
        s.close();
        Path log = newestJournal();
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
            ch.truncate(Files.size(log) - 5);
        }
        s = open();
        assertEquals(before, dump(s));
    }

    @Test
    void aCrashWithoutCloseLosesNothingThatWasAppended() {
        EmbeddedStore crashed = open(); // never closed before the second one opens: the process "died"
        populate(crashed, 1);
        crashed.snapshot();
        populate(crashed, 2);
        lastFrame(crashed);
        String before = dump(crashed);
        crashed.releaseLockLikeAKill();
        EmbeddedStore s = open();
        assertEquals(before, dump(s));
        // and the survivor goes on from there
        populate(s, 3);
        String after = dump(s);
        s = reopen(s);
        assertEquals(after, dump(s));
    }

    @Test
    void aSnapshotInterruptedBeforeItWasInstalledIsIgnored() throws IOException {
        EmbeddedStore s = open();
        populate(s, 1);
        s.snapshot();
        populate(s, 2);
        String before = dump(s);
        s.close();
        // a crash while writing the next snapshot: its temp file is half written and never renamed
        Files.write(dir.resolve("snapshot.tmp"), new byte[] {0, 0, 0, 100, 1, 2, 3});
        s = open();
        assertEquals(before, dump(s));
        s.snapshot();
        s = reopen(s);
        assertEquals(before, dump(s));
    }

    @Test
    @Timeout(30)
    void theBackgroundSnapshotKeepsTheJournalShort() throws Exception {
        EmbeddedStore s = open(64 * 1024, Duration.ofMillis(20));
        for (int round = 1; round <= 4; round++) {
            populate(s, round);
        }
        String before = dump(s);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (files().stream().noneMatch(n -> n.startsWith("snapshot-")) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(files().stream().anyMatch(n -> n.startsWith("snapshot-")), "no snapshot written: " + files());
        s = reopen(s);
        assertEquals(before, dump(s));
    }

    /**
     * Writers keep mutating while snapshots are taken: the snapshot is fuzzy (each shard at its own moment),
     * and replaying the new journal generation over it must still give exactly the final state.
     */
    @Test
    @Timeout(60)
    void snapshotsTakenDuringWritesRecoverTheFinalState() throws Exception {
        EmbeddedStore s = open();
        int threads = 4;
        AtomicReference<Throwable> err = new AtomicReference<>();
        AtomicInteger done = new AtomicInteger();
        AtomicInteger ids = new AtomicInteger(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            Thread th = new Thread(() -> {
                try {
                    SplittableRandom r = new SplittableRandom(tt);
                    InstanceIndex ix = s.index(tt % 2 == 0 ? "inst-a" : "inst-b");
                    for (int op = 0; op < 1500; op++) {
                        long[] keys = new long[1 + r.nextInt(20)];
                        for (int i = 0; i < keys.length; i++) {
                            keys[i] = r.nextInt(3000) - 1000;
                        }
                        int dice = r.nextInt(10);
                        if (dice < 5) {
                            long[] a = new long[keys.length], b = new long[keys.length];
                            for (int i = 0; i < keys.length; i++) {
                                int id = ids.getAndIncrement();
                                a[i] = Loc.a(id, Loc.NEW, 1, 0);
                                b[i] = id;
                            }
                            String sess = "w" + tt + "-" + op;
                            StartResult res = ix.startWrite(keys, a, b, 1 + r.nextInt(2), x -> true, 0, sess,
                                    NOW, NOW);
                            if (r.nextInt(4) > 0) {
                                boolean[] ok = new boolean[res.session().size()];
                                for (int i = 0; i < ok.length; i++) {
                                    ok[i] = r.nextInt(5) > 0;
                                }
                                ix.finishWrite(sess, ok, NOW + op);
                            }
                        } else if (dice < 8) {
                            LocList m = ix.markDeleting(keys, 0, keys.length, null);
                            for (int i = 0; i < m.size(); i++) {
                                if (r.nextBoolean()) {
                                    ix.purge(m.key(i), Loc.id(m.a(i)));
                                }
                            }
                        } else if (dice < 9) {
                            s.putRecord("instances", "t" + tt + "-" + r.nextInt(20), new byte[] {(byte) op});
                        } else {
                            s.removeRecord("instances", "t" + tt + "-" + r.nextInt(20));
                        }
                    }
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                } finally {
                    done.incrementAndGet();
                }
            }, "writer-" + t);
            th.start();
            ts.add(th);
        }
        int snapshots = 0;
        while (done.get() < threads) {
            s.snapshot();
            snapshots++;
            Thread.sleep(5);
        }
        for (Thread th : ts) {
            th.join(30_000);
        }
        if (err.get() != null) {
            throw new AssertionError("writer failed", err.get());
        }
        assertTrue(snapshots >= 1);
        String before = dump(s);
        EmbeddedStore again = reopen(s);
        assertEquals(before, dump(again));
    }

    @Test
    void fsyncOnEveryAppendPersistsTheSame() {
        EmbeddedStore s = new EmbeddedStore(new EmbeddedStore.Options(dir, 2, true, Duration.ofMinutes(10),
                Long.MAX_VALUE));
        opened.add(s);
        populate(s, 1);
        s.sync();
        String before = dump(s);
        s = reopen(s);
        assertEquals(before, dump(s));
    }

    /** An interrupted caller must not take the journal down with it (a FileChannel would close itself). */
    @Test
    void anInterruptedWriterDoesNotBreakTheJournal() {
        EmbeddedStore s = new EmbeddedStore(new EmbeddedStore.Options(dir, 2, true, Duration.ofMillis(10),
                Long.MAX_VALUE));
        opened.add(s);
        InstanceIndex a = s.index("inst-a");
        Thread.currentThread().interrupt();
        try {
            serve(a, 1, 2, 3);
            s.putRecord("instances", "x", new byte[] {1});
            s.sync();
            s.snapshot();
            serve(a, 4);
        } finally {
            assertTrue(Thread.interrupted(), "the flag is left to its owner");
        }
        serve(a, 5, 6);
        String before = dump(s);
        assertTrue(before.contains("keyCount=6"), before);
        s = reopen(s);
        assertEquals(before, dump(s));
    }

    @Test
    void touchIsAdvisoryAndNotJournaled() {
        EmbeddedStore s = open();
        serve(s.index("inst-a"), 1);
        s.index("inst-a").touch(new long[] {1}, 0, 1, NOW + 1000);
        assertEquals(NOW + 1000, s.index("inst-a").get(1).accessSec());
        s = reopen(s);
        Block b = s.index("inst-a").get(1);
        assertNotNull(b);
        assertEquals(Loc.SERVING, Loc.status(b.a(0)));
    }

    @Test
    void aSecondStoreOnTheSameDirectoryIsRefusedWhileTheFirstIsOpen() {
        EmbeddedStore first = open();
        populate(first, 1);
        String before = dump(first);
        IllegalStateException e = assertThrows(IllegalStateException.class, this::open);
        assertTrue(e.getMessage().contains("in use by another metadata plane"), e.getMessage());
        populate(first, 2); // the first one goes on undisturbed
        String after = dump(first);
        assertNotEquals(before, after);
        first.close();
        assertEquals(after, dump(open()), "free again once the first one closed");
    }
}
