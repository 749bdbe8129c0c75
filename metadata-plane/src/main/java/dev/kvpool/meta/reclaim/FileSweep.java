package dev.kvpool.meta.reclaim;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Locations;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.slots.Slots;
import dev.kvpool.meta.storage.Storage;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Deletes the files of file-type storages that hold no block: slabs (and the agents' checksum records beside them)
 * left by a writer that wrote after its session had ended and the plane had deleted the slab, by a crash between
 * freeing a slab's last slot and deleting the file, or by an index lost with the store's data. KVCM never deletes
 * such files; here they would fill the storage for good.
 *
 * <p>A file is deleted only when all three hold: its number is below the allocator's frontier, which the sweep
 * first moves past every number it lists, so the number is never handed out afresh again; the allocator has no
 * used slot in it; and it was not modified for {@code minAge}, so a late writer still at work keeps its file until
 * it stops. Names that are not slab files are never touched, nor are directories of instances this plane does not
 * know. Directories are read as a stream, a batch at a time (a storage of one block per file may hold millions).
 */
public final class FileSweep implements AutoCloseable, MeterBinder {
    private static final Logger LOG = Logger.getLogger(FileSweep.class);
    /** Directory entries checked against the allocator per call (one round trip on Redis). */
    static final int BATCH = 4096;

    /**
     * @param interval how often the leader sweeps (zero: only on request)
     * @param minAge   a file that holds no block is kept until it has not been written for this long
     */
    public record Settings(Duration interval, Duration minAge) {
    }

    /** One directory (instance, storage, spec) of a sweep. */
    public record DirReport(String instance, String storage, String path, long slab_files, long live_files,
                            long orphan_files, long orphan_bytes, long recent_orphans, long deleted_files,
                            long deleted_bytes) {
    }

    /**
     * A sweep, running or done. {@code orphan_*} count every file found holding no block, {@code recent_orphans}
     * those kept because they were written less than {@code min_age_seconds} ago, {@code deleted_*} what went
     * (nothing in a dry run).
     */
    public record Report(String state, boolean dry_run, String trigger, long started_at_ms, long took_ms,
                         long min_age_seconds, int dirs_done, int dirs_total, long scanned, long orphan_files,
                         long orphan_bytes, long recent_orphans, long deleted_files, long deleted_bytes,
                         List<DirReport> dirs, List<String> unreadable_dirs, String error) {
    }

    private final Registry registry;
    private final BooleanSupplier leader;
    private final Settings settings;
    private final FailureLog failures;
    private final ScheduledExecutorService runner = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("kvpool-file-sweep").unstarted(r));
    /** Files and bytes deleted since start. */
    public final AtomicLong filesDeleted = new AtomicLong();
    public final AtomicLong bytesDeleted = new AtomicLong();
    /** Sweeps that ran to their end (dry runs included). */
    public final AtomicLong sweeps = new AtomicLong();
    private volatile Run current;
    private volatile Report last;

    public FileSweep(Registry registry, BooleanSupplier leader, Settings settings) {
        this.registry = registry;
        this.leader = leader;
        this.settings = settings;
        this.failures = new FailureLog(LOG, "storage file sweep", Duration.ofMinutes(5), e -> e instanceof IOException);
    }

    /**
     * Sweeps every {@code interval} on the leader; the first one soon after start, as a lost index leaves most.
     * Plain periodic work, but on its own executor rather than {@code @Scheduled}: quarkus-scheduler is not a
     * dependency of this module, the sweep exists only once the runtime has built the plane, and a manual run
     * (the storage sweep API) must not overlap a scheduled one on the same thread.
     */
    public void start() {
        long every = settings.interval().toMillis();
        if (every <= 0) {
            return;
        }
        runner.scheduleWithFixedDelay(() -> {
            if (leader.getAsBoolean() && current == null) {
                run(new Run(false, "schedule"));
            }
        }, Math.min(every, 30_000), every, TimeUnit.MILLISECONDS);
    }

    /**
     * Starts a sweep now on this replica (any replica may: what makes deleting safe is in the shared allocator).
     * Returns the new sweep's first view, or null when one is already running.
     */
    public synchronized Report request(boolean dryRun) {
        if (current != null) {
            return null;
        }
        Run r = new Run(dryRun, "request");
        current = r;
        try {
            runner.execute(() -> run(r));
        } catch (java.util.concurrent.RejectedExecutionException e) { // stopping
            current = null;
            throw new IllegalStateException("the metadata plane is stopping", e);
        }
        return r.report("running", null);
    }

    /** The sweep running now, else the last one; null before the first. */
    public Report status() {
        Run r = current;
        return r != null ? r.report("running", null) : last;
    }

    /** Runs a sweep on the calling thread and returns its report (tests). */
    public Report sweepNow(boolean dryRun) {
        synchronized (this) {
            if (current != null) {
                throw new IllegalStateException("a storage sweep is already running");
            }
            current = new Run(dryRun, "request");
        }
        return run(current);
    }

    private Report run(Run r) {
        synchronized (this) {
            if (current != null && current != r) {
                return null;
            }
            current = r;
        }
        Report done = null;
        try {
            r.sweep();
            done = r.report("done", null);
            failures.ok();
            if (done.orphan_files() > 0) {
                LOG.infof("storage sweep%s: %d files holding no block (%d bytes): %d deleted, %d kept as written "
                                + "less than %d s ago", r.dryRun ? " (dry run)" : "", done.orphan_files(),
                        done.orphan_bytes(), done.deleted_files(), done.recent_orphans(), done.min_age_seconds());
            }
        } catch (IOException | RuntimeException e) {
            done = r.report("failed", e.toString());
            failures.failed(e);
        } finally {
            sweeps.incrementAndGet();
            synchronized (this) {
                last = done != null ? done : r.report("failed", "stopped");
                current = null; // after last: status() never shows an older sweep in between
            }
        }
        return done;
    }

    @Override
    public void close() {
        runner.shutdownNow();
    }

    /** One sweep's state; counters are read by status() while it runs. */
    private final class Run {
        final boolean dryRun;
        final String trigger;
        final long startedMs = System.currentTimeMillis();
        final long minAgeMs = settings.minAge().toMillis();
        final AtomicLong scanned = new AtomicLong();
        final List<DirReport> dirs = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<String> unreadable = java.util.Collections.synchronizedList(new ArrayList<>());
        volatile int dirsTotal;
        volatile int dirsDone;

        Run(boolean dryRun, String trigger) {
            this.dryRun = dryRun;
            this.trigger = trigger;
        }

        void sweep() throws IOException {
            record Work(Instance inst, Storage st, Path dir) {
            }
            List<Work> work = new ArrayList<>();
            for (Storage st : registry.storages()) {
                if (!st.usesFiles()) {
                    continue;
                }
                for (Instance inst : registry.instances()) {
                    for (Path d : Locations.fileDirs(inst, st)) {
                        work.add(new Work(inst, st, d));
                    }
                }
            }
            dirsTotal = work.size();
            for (Work w : work) {
                if (registry.instance(w.inst().id) == w.inst()) { // removed meanwhile: its files went with it
                    try {
                        sweepDir(w.inst(), w.st(), w.dir());
                    } catch (IOException | java.nio.file.DirectoryIteratorException e) {
                        // one bad directory (permissions, a failing mount) does not stop the others
                        unreadable.add(w.dir() + ": " + e.getMessage());
                        LOG.warnf("storage sweep: cannot read %s: %s", w.dir(), e.toString());
                    }
                }
                dirsDone++;
            }
        }

        private void sweepDir(Instance inst, Storage st, Path dir) throws IOException {
            long[] c = new long[7]; // slab files, live, orphans, orphan bytes, recent, deleted, deleted bytes
            // asked for at the first slab name: a storage the instance never wrote to gets no allocator from here
            java.util.function.Supplier<Slots> slots = () -> inst.allocator(st);
            // no address could name a file at or above this (Redis counts slots in doubles): a stray name that
            // high is left alone, and does not move the frontier
            long limit = Math.min(1L << (63 - dev.kvpool.meta.slots.SlotAllocator.SLOT_BITS),
                    (1L << 53) / st.keyCountPerFile);
            long cutoff = System.currentTimeMillis() - minAgeMs;
            List<Path> names = new ArrayList<>(BATCH);
            long[] numbers = new long[BATCH];
            long[] frontier = {-1}; // numbers below it were passed to openFilesFrom by this sweep
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
                for (Path p : ds) {
                    long n = Locations.fileNumber(p.getFileName().toString());
                    if (n < 0 || n >= limit) {
                        continue;
                    }
                    numbers[names.size()] = n;
                    names.add(p);
                    if (names.size() == BATCH) {
                        batch(slots, names, numbers, frontier, cutoff, c);
                        names.clear();
                    }
                }
            } catch (NoSuchFileException e) {
                return; // nothing written there yet, or the storage is not mounted on this node
            }
            if (!names.isEmpty()) {
                batch(slots, names, numbers, frontier, cutoff, c);
            }
            if (c[0] > 0) {
                dirs.add(new DirReport(inst.id, st.name, dir.toString(), c[0], c[1], c[2], c[3], c[4], c[5], c[6]));
            }
        }

        private void batch(java.util.function.Supplier<Slots> allocator, List<Path> names, long[] numbers, long[] frontier, long cutoff, long[] c) {
            Slots slots = allocator.get();
            int n = names.size();
            long max = -1;
            for (int i = 0; i < n; i++) {
                max = Math.max(max, numbers[i]);
            }
            if (!dryRun && max >= frontier[0]) {
                // before the check: a number the allocator may still open cannot be called orphan
                slots.openFilesFrom(max + 1);
                frontier[0] = max + 1;
            }
            boolean[] live = slots.live(java.util.Arrays.copyOf(numbers, n));
            for (int i = 0; i < n; i++) {
                Path p = names.get(i);
                c[0]++;
                scanned.incrementAndGet();
                if (live[i]) {
                    c[1]++;
                    continue;
                }
                BasicFileAttributes at;
                try {
                    at = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (IOException e) {
                    continue; // gone meanwhile (the plane's own delete of an emptied slab)
                }
                if (!at.isRegularFile()) {
                    continue;
                }
                c[2]++;
                c[3] += at.size();
                if (at.lastModifiedTime().toMillis() > cutoff) {
                    c[4]++;
                    continue;
                }
                if (dryRun) {
                    continue;
                }
                try {
                    if (Files.deleteIfExists(p)) {
                        c[5]++;
                        c[6] += at.size();
                        filesDeleted.incrementAndGet();
                        bytesDeleted.addAndGet(at.size());
                    }
                } catch (IOException e) {
                    LOG.warnf("storage sweep: cannot delete %s: %s", p, e.getMessage());
                }
            }
        }

        Report report(String state, String error) {
            List<DirReport> ds;
            synchronized (dirs) {
                ds = List.copyOf(dirs);
            }
            List<String> bad;
            synchronized (unreadable) {
                bad = List.copyOf(unreadable);
            }
            long orphans = 0, bytes = 0, recent = 0, deleted = 0, deletedBytes = 0;
            for (DirReport d : ds) {
                orphans += d.orphan_files();
                bytes += d.orphan_bytes();
                recent += d.recent_orphans();
                deleted += d.deleted_files();
                deletedBytes += d.deleted_bytes();
            }
            return new Report(state, dryRun, trigger, startedMs, System.currentTimeMillis() - startedMs,
                    minAgeMs / 1000, dirsDone, dirsTotal, scanned.get(), orphans, bytes, recent, deleted,
                    deletedBytes, ds, bad, error);
        }
    }

    /** The sweep's counts, under the names the dashboards read. */
    @Override
    public void bindTo(MeterRegistry meters) {
        Gauge.builder("kvpool.meta.files.orphans.deleted", this, f -> f.filesDeleted.get())
                .description("files of file-type storages that held no block, deleted by the storage sweep")
                .strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.files.orphans.deleted.bytes", this, f -> f.bytesDeleted.get())
                .description("bytes of those files").strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.files.sweeps", this, f -> f.sweeps.get())
                .description("storage sweeps run to their end on this replica (dry runs included)")
                .strongReference(true).register(meters);
    }
}
