package dev.kvpool.meta.write;

import dev.kvpool.api.storage.SlabFiles;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Locations;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The deletion pipeline (§3.7): RemoveCache, TrimCache, an instance or storage leaving, and every location that
 * leaves service on the way (failed and expired writes, evictions, resumed deletions). Locations move to DELETING;
 * after the reader lease their bytes are deleted on the deleter thread, slots and quota are released, then the
 * metadata is purged.
 */
public final class Deletions implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Deletions.class);

    private final Registry registry;
    private final QuotaLedger ledger;
    private final ExecutorService deleter = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "kvpool-deleter");
        t.setDaemon(true);
        return t;
    });
    private final java.util.concurrent.ScheduledThreadPoolExecutor delayed =
            new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "kvpool-delete-lease");
                t.setDaemon(true);
                return t;
            });
    private final QuotaLedger leaving = QuotaLedger.inMemory();
    private final AtomicLong locationsDeleted = new AtomicLong();
    private final AtomicLong filesDeleted = new AtomicLong();

    private final java.time.InstantSource clock;

    public Deletions(Registry registry, QuotaLedger ledger) {
        this(registry, ledger, java.time.InstantSource.system());
    }

    /** With a clock of its own: the one the write path's session deadlines are set by (simulations replay a trace). */
    public Deletions(Registry registry, QuotaLedger ledger, java.time.InstantSource clock) {
        this.registry = registry;
        this.ledger = ledger;
        this.clock = clock;
    }

    /**
     * RemoveCache: unmasked keys leave service at once; bytes and metadata go asynchronously. A location still being
     * written goes too (KVCM: any status → DELETING; its session's finish then fails it), but its slot is freed only
     * after the session's deadline: its writer may still be writing to it, and a slot given to the next write at
     * once would take those late bytes over the new block's.
     */
    public void remove(Instance inst, long[] keys, Mask mask) {
        LocList moved = inst.index.markDeleting(keys, 0, keys.length, mask::masked, true);
        LocList served = new LocList(), writing = new LocList();
        for (int i = 0; i < moved.size(); i++) {
            (moved.wasWriting(i) ? writing : served).add(moved.key(i), moved.a(i), moved.b(i), false);
        }
        submitDelete(inst, served);
        if (writing.size() > 0) {
            submitDelete(inst, writing, untilWritersAreDone(inst, writing));
        }
    }

    /** Milliseconds until the sessions that opened these locations are past their deadline (a second's grace). */
    private long untilWritersAreDone(Instance inst, LocList locs) {
        java.util.Set<Long> ids = new java.util.HashSet<>();
        for (int i = 0; i < locs.size(); i++) {
            ids.add(Loc.id(locs.a(i)));
        }
        long now = clock.millis(), last = now;
        for (var s : inst.index.sessions()) {
            for (long id : s.locIds()) {
                if (ids.contains(id)) {
                    last = Math.max(last, s.deadlineMs());
                    break;
                }
            }
        }
        return last > now ? last - now + 1_000 : 0;
    }

    public void trim(Instance inst, Trim strategy, int begin, int end) {
        switch (strategy) {
            // what is cached: sessions in flight (on any replica) keep their WRITING locations — moving those to
            // DELETING freed their slots while their writers still wrote to them — and serve them when they finish
            case REMOVE_ALL_CACHE -> removeAll(inst, true, false);
            // metadata only: the storage's files stay (their slots are free for new blocks). Location by location, as
            // for REMOVE_ALL_CACHE, and not by clearing the index: a clear also dropped the WRITING locations of
            // sessions in flight and freed every slot, theirs too, so a slot could be handed out while its writer
            // still wrote to it, and the usage those sessions reserved was never given back
            case REMOVE_ALL_META -> removeAll(inst, false, false);
            case TIMESTAMP -> {
                if (end <= begin) {
                    throw MetaException.invalid("TS_TIMESTAMP needs begin_timestamp < end_timestamp (epoch seconds), got ["
                            + begin + ", " + end + ")");
                }
                long[] keys = inst.index.keysWhere(meta -> {
                    int w = Loc.writeSec(meta);
                    return w >= begin && w < end;
                });
                for (int off = 0; off < keys.length; off += 1024) {
                    submitDelete(inst, inst.index.markDeleting(keys, off, Math.min(1024, keys.length - off), null, false));
                }
            }
        }
    }

    /** Before an instance is forgotten: every location goes, those of sessions in flight too (their finish fails). */
    public void removeEverything(Instance inst) {
        removeAll(inst, true, true);
    }

    /**
     * Every SERVING location of the instance leaves service at once; bytes (if {@code deleteFiles}), slots, usage
     * and metadata go asynchronously. WRITING locations, unless {@code writing}, are left to their session, which
     * finishes or expires them as usual.
     */
    private void removeAll(Instance inst, boolean deleteFiles, boolean writing) {
        // a scan is exact only on a quiet index: purges running meanwhile move keys, so repeat passes until one
        // finds nothing left to move (bounded, in case writes keep arriving)
        long[] page = new long[1024];
        for (int pass = 0; pass < 8; pass++) {
            long moved = 0, cursor = 0;
            do {
                int[] n = {0};
                cursor = inst.index.scan(cursor, page.length, k -> page[n[0]++] = k);
                LocList m = inst.index.markDeleting(page, 0, n[0], null, writing);
                moved += m.size();
                submitDelete(inst, m, 0, deleteFiles);
            } while (cursor != 0);
            if (moved == 0) {
                break;
            }
        }
    }

    /**
     * A storage deleted from the configuration: every block with a location on it leaves service and is deleted
     * through the normal path (reader lease, bytes, slots, usage, metadata). A block that also has replicas on other
     * storages goes whole: the index moves keys, not single replicas, to DELETING. Returns the locations moved.
     */
    public long removeBlocksOn(Storage st) {
        long moved = 0;
        for (Instance inst : registry.instances()) {
            long cursor = 0;
            do {
                List<Long> page = new ArrayList<>(1024);
                cursor = inst.index.scan(cursor, 1024, page::add);
                long[] keys = page.stream().mapToLong(Long::longValue).toArray();
                Block[] blocks = new Block[keys.length];
                inst.index.getAll(keys, 0, keys.length, blocks);
                int n = 0;
                for (int i = 0; i < keys.length; i++) {
                    Block bl = blocks[i];
                    boolean on = false;
                    for (int j = 0; bl != null && j < bl.size() && !on; j++) {
                        on = Loc.storage(bl.a(j)) == st.number;
                    }
                    if (on) {
                        keys[n++] = keys[i];
                    }
                }
                if (n > 0) {
                    // WRITING ones stay with their session, which finishes them as failed (the storage is gone
                    // from the configuration) or expires them, releasing what it reserved
                    LocList m = inst.index.markDeleting(keys, 0, n, null, false);
                    moved += m.size();
                    submitDelete(inst, m, readerLeaseMs(inst));
                }
            } while (cursor != 0);
        }
        LOG.infof("storage %s deleted from the configuration: %d locations on it leave service and are deleted",
                st.name, moved);
        return moved;
    }

    void submitDelete(Instance inst, LocList deleting) {
        submitDelete(inst, deleting, 0);
    }

    public void submitDelete(Instance inst, LocList deleting, long delayMs) {
        submitDelete(inst, deleting, delayMs, true);
    }

    /**
     * Deletes locations already moved to DELETING: after {@code delayMs} (the reader lease: a reader that got the
     * location just before it left service can still finish its read), bytes and slots are freed, then each
     * location is removed if it is still DELETING.
     */
    private void submitDelete(Instance inst, LocList deleting, long delayMs, boolean deleteFiles) {
        if (deleting.size() == 0) {
            return;
        }
        // until the purge releases it, usage still counts what is leaving: keep it apart so the reclaimer does
        // not evict it twice over
        long keys = 0, prev = 0;
        for (int i = 0; i < deleting.size(); i++) {
            if (i == 0 || deleting.key(i) != prev) {
                keys++;
                prev = deleting.key(i);
            }
            Storage st = registry.storageByNumber(Loc.storage(deleting.a(i)));
            if (st != null) {
                leaving.add(inst.group, 0, st.kind, inst.bytesOf(Loc.specGroup(deleting.a(i))));
            }
        }
        long total = keys * inst.bytesPerKey;
        leaving.add(inst.group, total, null, 0);
        Runnable job = () -> {
            try {
                purge(inst, deleting, deleteFiles);
            } finally {
                leaving.add(inst.group, -total, null, 0);
                for (int i = 0; i < deleting.size(); i++) {
                    Storage st = registry.storageByNumber(Loc.storage(deleting.a(i)));
                    if (st != null) {
                        leaving.add(inst.group, 0, st.kind, -inst.bytesOf(Loc.specGroup(deleting.a(i))));
                    }
                }
            }
        };
        // a replica's local copy of the index may serve a DELETING location this much longer than Redis does
        delayMs += registry.readerStalenessMs();
        if (delayMs <= 0) {
            deleter.execute(job);
        } else {
            delayed.schedule(() -> deleter.execute(job), delayMs, TimeUnit.MILLISECONDS);
        }
    }

    /** Usage already on its way out (DELETING, purge pending), per group; subtract it from the ledger's. */
    public QuotaLedger.Usage leaving(String group) {
        return leaving.usage(group);
    }

    /** Locations per purge batch: what a failed call can leave unreleased until the next start-up rebuild. */
    private static final int PURGE_BATCH = 1024;

    private void purge(Instance inst, LocList deleting, boolean deleteFiles) {
        try {
            for (int off = 0; off < deleting.size(); off += PURGE_BATCH) {
                LocList batch = new LocList();
                for (int i = off; i < Math.min(deleting.size(), off + PURGE_BATCH); i++) {
                    batch.add(deleting.key(i), deleting.a(i), deleting.b(i), deleting.keyGone(i));
                }
                LocList gone = inst.index.purgeAll(batch);
                release(inst, gone, deleteFiles);
                locationsDeleted.addAndGet(gone.size());
            }
        } catch (RuntimeException e) {
            LOG.errorf(e, "deleting %d locations of instance %s failed", deleting.size(), inst.id);
        }
    }

    /**
     * Returns quota and slots of locations that left the index, in one ledger update per storage and one batched
     * free per slot allocator (a shared ledger and allocator live in Redis: a round trip per location made
     * evicting or failing big batches slow); deletes files that no block uses any more.
     */
    void release(Instance inst, LocList removed) {
        release(inst, removed, true);
    }

    private void release(Instance inst, LocList removed, boolean deleteFiles) {
        Map<Integer, long[]> quota = new HashMap<>(); // storage number -> {key bytes, type bytes}
        Map<Integer, long[]> slots = new HashMap<>(); // storage number -> {count, addresses...}
        for (int i = 0; i < removed.size(); i++) {
            long a = removed.a(i);
            Storage st = registry.storageByNumber(Loc.storage(a));
            if (st == null) {
                continue;
            }
            long[] q = quota.computeIfAbsent(st.number, n -> new long[2]);
            q[0] += removed.keyGone(i) ? inst.bytesPerKey : 0;
            q[1] += inst.bytesOf(Loc.specGroup(a));
            if (st.usesFiles()) {
                long[] list = slots.computeIfAbsent(st.number, n -> new long[1 + removed.size()]);
                list[1 + (int) list[0]++] = removed.b(i);
            }
        }
        quota.forEach((number, q) -> {
            Storage st = registry.storageByNumber(number);
            if (st != null) {
                ledger.add(inst.group, -q[0], st.kind, -q[1]);
            }
        });
        slots.forEach((number, list) -> {
            Storage st = registry.storageByNumber(number);
            if (st != null) {
                freeSlots(inst, st, Arrays.copyOfRange(list, 1, 1 + (int) list[0]), deleteFiles);
            }
        });
    }

    void freeSlots(Instance inst, Storage st, long[] addresses) {
        freeSlots(inst, st, addresses, true);
    }

    private void freeSlots(Instance inst, Storage st, long[] addresses, boolean deleteFiles) {
        dev.kvpool.meta.slots.Slots alloc = inst.allocatorIfAny(st.number);
        if (alloc == null || addresses.length == 0) {
            return;
        }
        long[] emptied = alloc.freeAll(addresses);
        if (emptied.length == 0 || !deleteFiles) {
            return;
        }
        List<Path> files = new ArrayList<>();
        for (long address : emptied) {
            files.addAll(Locations.localFiles(inst, st, 0, address, 0));
        }
        deleter.execute(() -> {
            for (Path p : files) {
                try {
                    if (Files.deleteIfExists(p)) {
                        filesDeleted.incrementAndGet();
                    }
                    Files.deleteIfExists(SlabFiles.checksums(p)); // the agents' checksum records of that slab
                } catch (IOException e) {
                    LOG.warnf("cannot delete %s: %s", p, e.getMessage());
                }
            }
        });
    }

    /**
     * Frees slots allocated for a start that will not use them: at once when they are here (the usual case, the
     * quota check took as long), else when they arrive, off the Redis client's thread.
     */
    void giveBack(Instance inst, Storage st, java.util.concurrent.CompletableFuture<long[]> slots) {
        if (!st.usesFiles()) {
            return;
        }
        if (!slots.isDone()) {
            slots.thenAcceptAsync(a -> freeSlots(inst, st, a), deleter);
        } else if (!slots.isCompletedExceptionally()) {
            freeSlots(inst, st, slots.join());
        }
    }

    /** The group's reader lease: how long a location that left service may still be read. */
    long readerLeaseMs(Instance inst) {
        GroupConfig g = registry.group(inst.group);
        return (g == null ? dev.kvpool.meta.registry.ReclaimConfig.DEFAULT : g.reclaim()).delayBeforeDeleteMs();
    }

    /** Waits for queued deletions, delayed ones included (tests, shutdown). */
    public void drain() {
        long until = System.currentTimeMillis() + 30_000;
        while (delayed.getQueue().size() > 0
                && System.currentTimeMillis() < until) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        try {
            deleter.submit(() -> { }).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("deleter did not drain", e);
        }
    }

    /**
     * A clean stop: purges whose reader lease is still running are let run for at most {@code maxMs} instead of
     * being dropped. False when some were left (the replica should then be counted as lost, so the leader sweeps).
     */
    public boolean finishDeletions(long maxMs) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMs);
        delayed.shutdown(); // delayed tasks still run after shutdown (the executor's default policy)
        try {
            if (!delayed.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return false;
            }
            deleter.shutdown();
            return deleter.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void close() {
        delayed.shutdownNow();
        deleter.shutdown();
        try {
            deleter.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public void bindTo(MeterRegistry meters) {
        Gauge.builder("kvpool.meta.locations.deleted", this, d -> d.locationsDeleted.get()).strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.files.deleted", this, d -> d.filesDeleted.get()).strongReference(true)
                .register(meters);
    }
}
