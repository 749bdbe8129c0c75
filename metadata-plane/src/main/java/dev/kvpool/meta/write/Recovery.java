package dev.kvpool.meta.write;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * What is derived from the index, rebuilt and checked: group usage and slot maps rebuilt at start-up, deletions a
 * crash or a lost replica left DELETING resumed through {@link Deletions}, and the usage audit, which recounts a
 * group's usage as the rebuild does.
 */
public final class Recovery {
    private static final Logger LOG = Logger.getLogger(Recovery.class);

    private final Registry registry;
    private final QuotaLedger ledger;
    private final Deletions deletions;

    public Recovery(Registry registry, QuotaLedger ledger, Deletions deletions) {
        this.registry = registry;
        this.ledger = ledger;
        this.deletions = deletions;
    }

    /**
     * Rebuilds what is derived from the index — group usage and slot maps — and resumes deletions a crash
     * interrupted, reading up to {@code threads} instances' indexes at once (one HSCAN stream each on Redis, where
     * one instance's read is bound by round trips and decoding, not by the server). Open sessions were recovered
     * with the index; the expiry loop fails those past their deadline. Only for a process alone with its store: a
     * replica joining others over a shared one reads nothing (their usage and slots are in use), and what a lost
     * replica left DELETING is found by the leader's sweep
     * ({@link dev.kvpool.meta.reclaim.Reclaimer#sweepAfterLostReplicas}).
     */
    public void recover(int threads) {
        recover(threads, Runtime.getRuntime().maxMemory() / 2);
    }

    /** @param heapBudget bytes the instances read at once may hold (their slot addresses, ~24 bytes a block) */
    void recover(int threads, long heapBudget) {
        for (GroupConfig g : registry.groups()) {
            ledger.reset(g.name());
        }
        List<Instance> insts = List.copyOf(registry.instances());
        if (insts.isEmpty()) {
            return;
        }
        Progress progress = new Progress("rebuilding usage and slots from the index", insts);
        recovering = progress;
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, insts.size())), r -> {
            Thread t = new Thread(r, "kvpool-recovery");
            t.setDaemon(true);
            return t;
        });
        // an instance's slot addresses are held while it is read (~24 bytes a block): instances read at once share
        // the budget (half the heap), and one larger than that is read alone, as it would be by a single thread
        int budgetKib = (int) Math.max(1, Math.min(Integer.MAX_VALUE, heapBudget / 1024));
        java.util.concurrent.Semaphore heap = new java.util.concurrent.Semaphore(budgetKib);
        try {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (Instance inst : insts) {
                int needKib = (int) Math.min(budgetKib, progress.keys(inst) * 24 / 1024 + 1);
                fs.add(pool.submit(() -> {
                    heap.acquireUninterruptibly(needKib);
                    try {
                        return recoverInstance(inst, progress);
                    } finally {
                        heap.release(needKib);
                    }
                }));
            }
            for (var f : fs) {
                f.get();
            }
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while recovering the index", e);
        } finally {
            pool.shutdownNow();
        }
        progress.finished();
    }

    /** How far {@link #recover} got (keys read of those the indexes held when it began), or null before it began. */
    public record RecoveryProgress(long keys, long totalKeys, int instancesDone, int instances, long elapsedMs) {
    }

    private volatile Progress recovering;

    public RecoveryProgress recoveryProgress() {
        Progress p = recovering;
        return p == null ? null : p.snapshot();
    }

    /**
     * Purges locations found DELETING by a sweep (a lost replica's, whose purges were queued in its own process),
     * each after its group's reader lease: the replica that marked one may be alive and a reader may still hold it;
     * purges are idempotent, so whichever of two runs second finds nothing left to do.
     */
    public void resumeDeleting(Instance inst, LocList deleting) {
        deletions.submitDelete(inst, deleting, deletions.readerLeaseMs(inst));
    }

    /** Reads one instance's index: its usage and slots, and its DELETING locations resumed. */
    private int recoverInstance(Instance inst, Progress progress) {
        // usage summed here and written once per instance and type: on a shared ledger each add is a round trip,
        // and one per block made a cold start of a Redis-backed cluster take ~3 minutes per million blocks
        QuotaLedger.Usage usage = new QuotaLedger.Usage();
        LocList deleting = new LocList();
        long[] keys = {0};
        // slot addresses per storage, unboxed: a cold start may find hundreds of millions
        Map<Integer, java.util.stream.LongStream.Builder> used = new HashMap<>();
        inst.index.forEach(bl -> {
            if ((++keys[0] & Progress.EVERY - 1) == 0) {
                progress.add(Progress.EVERY);
            }
            countUsage(inst, bl, usage);
            for (int i = 0; i < bl.size(); i++) {
                long a = bl.a(i);
                Storage st = registry.storageByNumber(Loc.storage(a));
                if (st == null) {
                    continue;
                }
                if (st.usesFiles()) {
                    used.computeIfAbsent(st.number, n -> java.util.stream.LongStream.builder()).add(bl.b(i));
                }
                if (Loc.status(a) == Loc.DELETING) {
                    deleting.add(bl.key(), a, bl.b(i), false);
                }
            }
        });
        progress.add(keys[0] & Progress.EVERY - 1);
        addUsage(inst.group, usage, 1); // before its deletions resume: their purge subtracts what is added here
        inst.resetSlots();
        for (var e : used.entrySet()) {
            inst.allocator(registry.storageByNumber(e.getKey())).rebuild(e.getValue().build().toArray());
        }
        resumeDeleting(inst, deleting);
        progress.instanceDone();
        LOG.infof("instance %s: %d keys, %d open write sessions, %d deletions resumed", inst.id, keys[0],
                inst.index.sessions().size(), deleting.size());
        return deleting.size();
    }

    /**
     * A read of every index, logged every 10 s by whichever reading thread passes the mark, so a start-up that
     * reads hundreds of millions of keys shows how far it got and how fast it goes.
     */
    private static final class Progress {
        static final int EVERY = 1 << 14;
        private static final long PERIOD_NS = 10_000_000_000L;
        private final String what;
        private final int instances;
        private final long total;
        private final long t0 = System.nanoTime();
        private final java.util.concurrent.atomic.LongAdder keys = new java.util.concurrent.atomic.LongAdder();
        private final java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
        private final AtomicLong nextLogNs = new AtomicLong(t0 + PERIOD_NS);

        private final Map<String, Long> keysOf = new HashMap<>();

        Progress(String what, List<Instance> insts) {
            this.what = what;
            this.instances = insts.size();
            long t = 0;
            for (Instance i : insts) {
                try {
                    long k = i.index.keyCount();
                    keysOf.put(i.id, k);
                    t += k;
                } catch (RuntimeException e) {
                    // only the estimate suffers
                }
            }
            this.total = t;
        }

        /** The instance's key count when the read began (0 if unknown). */
        long keys(Instance inst) {
            return keysOf.getOrDefault(inst.id, 0L);
        }

        void add(long n) {
            keys.add(n);
            long now = System.nanoTime(), next = nextLogNs.get();
            if (now >= next && nextLogNs.compareAndSet(next, now + PERIOD_NS)) {
                long k = keys.sum();
                LOG.infof("%s: %,d of ~%,d keys (%d%%), %,d keys/s, %d of %d instances done", what, k, total,
                        total == 0 ? 100 : Math.min(100, k * 100 / total), rate(k, now), done.get(), instances);
            }
        }

        void instanceDone() {
            done.incrementAndGet();
        }

        RecoveryProgress snapshot() {
            return new RecoveryProgress(keys.sum(), total, done.get(), instances, (System.nanoTime() - t0) / 1_000_000);
        }

        void finished() {
            long k = keys.sum(), now = System.nanoTime();
            LOG.infof("%s: %,d keys of %d instances in %.1f s (%,d keys/s)", what, k, instances,
                    (now - t0) / 1e9, rate(k, now));
        }

        private long rate(long k, long now) {
            return k * 1_000_000_000L / Math.max(1, now - t0);
        }
    }

    /**
     * Adds ({@code sign} 1) or takes away (-1) usage summed over many blocks: one ledger call for the total, one per
     * storage type.
     */
    private void addUsage(String group, QuotaLedger.Usage u, int sign) {
        ledger.add(group, sign * u.total(), null, 0);
        u.types().forEach((kind, bytes) -> ledger.add(group, 0, kind, sign * bytes));
    }

    /** Adds one block to a usage sum: the key once, each location by its storage type (§3.9.1). */
    private void countUsage(Instance inst, Block bl, QuotaLedger.Usage into) {
        into.add(inst.bytesPerKey, null, 0);
        for (int i = 0; i < bl.size(); i++) {
            Storage st = registry.storageByNumber(Loc.storage(bl.a(i)));
            if (st != null) {
                into.add(0, st.kind, inst.bytesOf(Loc.specGroup(bl.a(i))));
            }
        }
    }

    /** What one usage audit of a group found: null difference when the group was busy and nothing was compared. */
    public record Audit(String group, Long totalDifference, java.util.Map<StorageKind, Long> typeDifferences) {
    }

    /**
     * The usage invariant, checked: recounts a group's usage from its instances' indexes (as a cold start does)
     * and compares it with the ledger. Writes and deletions move both while the count runs, so the comparison
     * counts only when the ledger stood still and no write session was open from before the count to after it;
     * otherwise the group was busy and the result says nothing (null difference). Differences are ledger minus
     * index: positive when the ledger holds usage no block accounts for.
     */
    public Audit auditUsage(String group) {
        List<Instance> insts = registry.instancesOf(group);
        if (insts.stream().anyMatch(i -> i.index.sessionCount() > 0)) {
            return new Audit(group, null, java.util.Map.of());
        }
        QuotaLedger.Usage before = ledger.usage(group);
        QuotaLedger.Usage counted = new QuotaLedger.Usage();
        for (Instance inst : insts) {
            inst.index.forEach(bl -> countUsage(inst, bl, counted));
        }
        QuotaLedger.Usage after = ledger.usage(group);
        if (before.total() != after.total() || !before.types().equals(after.types())
                || insts.stream().anyMatch(i -> i.index.sessionCount() > 0)) {
            return new Audit(group, null, java.util.Map.of());
        }
        java.util.Map<StorageKind, Long> types = new java.util.EnumMap<>(StorageKind.class);
        java.util.Set<StorageKind> kinds = java.util.EnumSet.noneOf(StorageKind.class);
        kinds.addAll(after.types().keySet());
        kinds.addAll(counted.types().keySet());
        for (StorageKind k : kinds) {
            long d = after.byType(k) - counted.byType(k);
            if (d != 0) {
                types.put(k, d);
            }
        }
        return new Audit(group, after.total() - counted.total(), types);
    }
}
