package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Locations;
import dev.kvpool.meta.store.redis.RedisSlots;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.support.LocalRedis;
import dev.kvpool.meta.support.RedisGroup;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.WritePath;
import dev.kvpool.testing.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The storage sweep on real files and a real Redis index, with the in-process slot allocator (embedded store) and
 * the one shared in Redis (replicas): only slab files that hold no block and were not written for the minimum age
 * go; a sweep's numbers are never handed out again; a dry run deletes nothing; other names are never touched.
 */
class FileSweepIT {
    private static final Duration MIN_AGE = Duration.ofHours(1);
    private static final FileTime OLD = FileTime.fromMillis(System.currentTimeMillis() - 2 * 3_600_000L);
    private static LocalRedis local;

    @TempDir
    Path dir;

    enum Allocator { IN_PROCESS, REDIS }

    @BeforeAll
    static void connect() {
        local = new LocalRedis();
    }

    @AfterAll
    static void close() throws Exception {
        local.close();
    }

    private static RedisGroup group(Path dir, Allocator a) throws Exception {
        RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o);
        if (a == Allocator.REDIS) {
            rg.registry.slotsFactory((id, st) -> new RedisSlots(local.redis, rg.prefix + ":", id, st.number,
                    st.keyCountPerFile, Duration.ofSeconds(5)));
        }
        return rg;
    }

    private static Path file(Path d, long number, boolean checksums) {
        Path slab = d.resolve(Locations.slabName(number));
        return checksums ? dev.kvpool.api.storage.SlabFiles.checksums(slab) : slab;
    }

    /** What a writer leaves: the slab and its checksum records, last written at {@code mtime}. */
    private static void written(Path d, long number, FileTime mtime) throws Exception {
        for (boolean crc : new boolean[] {false, true}) {
            Path p = file(d, number, crc);
            Files.createDirectories(d);
            Files.write(p, new byte[crc ? 32 : 4000]);
            Files.setLastModifiedTime(p, mtime);
        }
    }

    private static FileSweep.DirReport only(FileSweep.Report r) {
        assertEquals("done", r.state(), () -> "sweep failed: " + r.error());
        assertEquals(1, r.dirs().size(), () -> "dirs: " + r.dirs());
        return r.dirs().getFirst();
    }

    @ParameterizedTest
    @EnumSource(Allocator.class)
    void onlyOldFilesWithoutABlockGoAndTheirNumbersAreNeverHandedOutAgain(Allocator alloc) throws Exception {
        try (RedisGroup rg = group(dir, alloc)) {
            Instance inst = rg.inst;
            Storage st = rg.registry.storages().iterator().next();
            Path d = Locations.fileDirs(inst, st).getFirst();
            try (Deletions deletions = new Deletions(rg.registry, rg.ledger)) {
                WritePath w = new WritePath(rg.registry, rg.ledger, deletions, new WritePath.Settings(30, 3600));
                rg.save(w, inst, 0, 12, 12); // files 0, 1, 2 (4 keys each)
                for (long f = 0; f < 3; f++) {
                    written(d, f, OLD); // age alone never makes a file holding blocks go
                }
                // empties file 2: the plane deletes it
                deletions.remove(inst, LongStream.range(8, 12).toArray(), Mask.EMPTY);
                deletions.drain();
                // the slab, then its records, on the deleter thread
                Await.within(Duration.ofSeconds(10), () -> !Files.exists(file(d, 2, false))
                        && !Files.exists(file(d, 2, true)));
                assertFalse(Files.exists(file(d, 2, false)), "the plane deletes an emptied slab");
                assertFalse(Files.exists(file(d, 2, true)), "and its checksum records");

                written(d, 2, OLD); // a writer past its deadline wrote it again
                written(d, 9, OLD); // left by an index that was lost: above the allocator's frontier
                Files.write(file(d, 7, false), new byte[4000]); // no block, but written just now
                Path notes = Files.writeString(d.resolve("notes.txt"), "not ours");
                Path upper = Files.writeString(d.resolve("slab_0000000A"), "not a name the plane gives");
                Path sub = Files.createDirectory(file(d, 8, false));
                Path huge = Files.writeString(d.resolve("slab_ffffffffff"), "no address can name it");
                for (Path p : List.of(notes, upper, sub, huge)) {
                    Files.setLastModifiedTime(p, OLD);
                }

                FileSweep sweep = new FileSweep(rg.registry, () -> true, new FileSweep.Settings(Duration.ZERO, MIN_AGE));
                FileSweep.DirReport dry = only(sweep.sweepNow(true));
                assertEquals(inst.id, dry.instance());
                assertEquals(st.name, dry.storage());
                assertEquals(4, dry.live_files(), "slabs 0 and 1 and their records");
                assertEquals(5, dry.orphan_files(), "2 and 9 with their records, and 7");
                assertEquals(3 * 4000 + 2 * 32, dry.orphan_bytes());
                assertEquals(1, dry.recent_orphans());
                assertEquals(0, dry.deleted_files());
                assertTrue(Files.exists(file(d, 2, false)) && Files.exists(file(d, 9, true)), "a dry run deletes nothing");

                FileSweep.Report real = sweep.sweepNow(false);
                FileSweep.DirReport r = only(real);
                assertEquals(4, r.deleted_files());
                assertEquals(2 * 4000 + 2 * 32, r.deleted_bytes());
                assertEquals(4, sweep.filesDeleted.get());
                for (long f : new long[] {2, 9}) {
                    assertFalse(Files.exists(file(d, f, false)), "orphan slab " + f);
                    assertFalse(Files.exists(file(d, f, true)), "orphan records " + f);
                }
                for (long f : new long[] {0, 1}) {
                    assertTrue(Files.exists(file(d, f, false)) && Files.exists(file(d, f, true)), "live slab " + f);
                }
                assertTrue(Files.exists(file(d, 7, false)), "written less than the minimum age ago");
                for (Path p : List.of(notes, upper, sub, huge)) {
                    assertTrue(Files.exists(p), "not a slab file: " + p);
                }

                // new blocks never land in a number the sweep saw: it may have deleted that file meanwhile
                var next = w.start(inst, LongStream.range(100, 106).toArray(), List.of(), 30, 1);
                for (var loc : next.locations()) {
                    String uri = loc.getLocationSpecs(0).getUri();
                    long number = Long.parseLong(uri.substring(uri.indexOf("slab_") + 5, uri.indexOf('?')), 16);
                    assertTrue(number > 9, "handed out file " + number + " after a sweep saw up to 9: " + uri);
                    assertTrue(number < 100, "a stray name moved the frontier: " + uri);
                }
                rg.finishAll(w, inst, next);
                assertEquals(0, only(sweep.sweepNow(false)).deleted_files(), "nothing more to delete");
            }
        }
    }

    /** Redis lost its data: the index is empty, so every file the instance had holds no block now. */
    @ParameterizedTest
    @EnumSource(Allocator.class)
    void filesOfALostIndexGoAndNewWritesStartAboveThem(Allocator alloc) throws Exception {
        Path d;
        try (RedisGroup before = group(dir, alloc)) {
            Storage st = before.registry.storages().iterator().next();
            d = Locations.fileDirs(before.inst, st).getFirst();
            try (Deletions deletions = new Deletions(before.registry, before.ledger)) {
                WritePath w = new WritePath(before.registry, before.ledger, deletions,
                        new WritePath.Settings(30, 3600));
                before.save(w, before.inst, 0, 20, 10); // files 0 to 4
            }
        }
        for (long f = 0; f < 5; f++) {
            written(d, f, OLD);
        }
        try (RedisGroup after = group(dir, alloc)) { // same files, new (empty) keys in Redis
            Storage st = after.registry.storages().iterator().next();
            assertEquals(d, Locations.fileDirs(after.inst, st).getFirst());
            FileSweep sweep = new FileSweep(after.registry, () -> true, new FileSweep.Settings(Duration.ZERO, MIN_AGE));
            FileSweep.DirReport r = only(sweep.sweepNow(false));
            assertEquals(0, r.live_files());
            assertEquals(10, r.deleted_files());
            try (var left = Files.list(d)) {
                assertEquals(0, left.count());
            }
            try (Deletions deletions = new Deletions(after.registry, after.ledger)) {
                WritePath w = new WritePath(after.registry, after.ledger, deletions,
                        new WritePath.Settings(30, 3600));
                var o = w.start(after.inst, LongStream.range(0, 3).toArray(), List.of(), 30, 1);
                long[] used = o.locations().stream().mapToLong(l -> {
                    String u = l.getLocationSpecs(0).getUri();
                    return Long.parseLong(u.substring(u.indexOf("slab_") + 5, u.indexOf('?')), 16);
                }).toArray();
                assertTrue(LongStream.of(used).allMatch(f -> f >= 5), "new writes reuse swept numbers: "
                        + java.util.Arrays.toString(used));
            }
        }
    }

    /** A directory that cannot be read (here: a file where it should be) is reported; the others are swept. */
    @ParameterizedTest
    @EnumSource(Allocator.class)
    void anUnreadableDirectoryIsReportedAndTheOthersAreStillSwept(Allocator alloc) throws Exception {
        try (RedisGroup rg = group(dir, alloc)) {
            Storage st = rg.registry.storages().iterator().next();
            Instance other = RedisGroup.register(rg.registry, "i2");
            Path good = Locations.fileDirs(rg.inst, st).getFirst();
            Path bad = Locations.fileDirs(other, st).getFirst();
            written(good, 3, OLD);
            Files.createDirectories(bad.getParent());
            Files.writeString(bad, "a file where a directory should be");
            FileSweep sweep = new FileSweep(rg.registry, () -> true, new FileSweep.Settings(Duration.ZERO, MIN_AGE));
            FileSweep.Report r = sweep.sweepNow(false);
            assertEquals("done", r.state());
            assertEquals(1, r.unreadable_dirs().size(), () -> "unreadable: " + r.unreadable_dirs());
            assertTrue(r.unreadable_dirs().getFirst().startsWith(bad.toString()), r.unreadable_dirs().getFirst());
            assertEquals(2, only(r).deleted_files());
            assertEquals(r.dirs_total(), r.dirs_done());
            assertTrue(Files.exists(bad), "left alone");
        }
    }

    /** The schedule sweeps on the leader only, and deletes as a request does. */
    @ParameterizedTest
    @EnumSource(Allocator.class)
    void theScheduleSweepsOnTheLeaderOnly(Allocator alloc) throws Exception {
        try (RedisGroup rg = group(dir, alloc)) {
            Storage st = rg.registry.storages().iterator().next();
            Path d = Locations.fileDirs(rg.inst, st).getFirst();
            written(d, 5, OLD);
            java.util.concurrent.atomic.AtomicBoolean leader = new java.util.concurrent.atomic.AtomicBoolean();
            try (FileSweep sweep = new FileSweep(rg.registry, leader::get,
                    new FileSweep.Settings(Duration.ofMillis(100), MIN_AGE))) {
                sweep.start();
                Thread.sleep(500); // real time: rounds every 100 ms get their chances to sweep, and must not
                assertTrue(Files.exists(file(d, 5, false)), "not the leader: no sweep");
                assertEquals(null, sweep.status());
                leader.set(true);
                Await.within(Duration.ofSeconds(10), () -> !Files.exists(file(d, 5, true)));
                assertFalse(Files.exists(file(d, 5, false)));
                assertFalse(Files.exists(file(d, 5, true)));
                Await.within(Duration.ofSeconds(10), () -> sweep.status() != null);
                assertEquals("schedule", sweep.status().trigger());
            }
        }
    }
}
