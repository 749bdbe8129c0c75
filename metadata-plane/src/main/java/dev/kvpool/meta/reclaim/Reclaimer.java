package dev.kvpool.meta.reclaim;

import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.meta.index.StoreException;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.storage.StorageKind;
import dev.kvpool.meta.write.WritePath;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Evicts blocks when a group crosses a water level. Runs on the leader only. Each group is checked every
 * {@link ReclaimConfig#periodMs()}; a triggered group loses up to one step of blocks per round (no more than brings
 * it under the level by 1 % of the level), shared among its instances in proportion to their usage, each instance's
 * share chosen by the group's policy. Eviction is SERVING → DELETING at once (readers stop seeing the block), then
 * after the reader lease the bytes and slots are freed and the metadata removed if still DELETING
 * ({@link WritePath#submitDelete}). WRITING locations are never evicted.
 *
 * <p>Selection is exact up to {@code exactLimit} keys, and sampled above that (like Redis' approximated LRU).
 * PREFIX_LRU is always exact: its guarantee — never a cached block without its prefix — rests on prefix touches (a
 * hit or a write refreshes the whole prefix, so a prefix is never older than what extends it) plus all-or-nothing
 * eviction of the blocks sharing the boundary access second. Exact LRU, TTL and PREFIX_LRU take their rounds from
 * an {@link AccessQueue} that one pass fills, so a large index is not read whole every round; LFU, whose scores
 * decay with time, makes a pass per round up to the limit.
 */
public final class Reclaimer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Reclaimer.class);
    private static final int DEFAULT_STEP_PER_INSTANCE = 100;

    /** Why a round ran: the label of the eviction metrics. */
    public enum Reason {
        WATER_LEVEL, TYPE_WATER_LEVEL, KEY_COUNT, TTL
    }

    /** Receives what was evicted (metrics, kvpool.cache events). */
    public interface Listener {
        void evicted(Instance inst, ReclaimPolicy policy, Reason reason, long[] keys, int blocks, long bytes);
    }

    /**
     * @param orphanAfterSec a WRITING location older than this that no open session names is an orphan (its
     *                       session expired in a shared store while no replica was alive to close it); 0 = never
     * @param queueLimit     keys an access queue may hold (at least two rounds' worth; 0: no queue)
     * @param passPage       on a shared store, an index larger than this is passed over this many keys per round, so
     *                       a huge index does not hold up the other groups (0: always in one go)
     */
    public record Settings(int exactLimit, int sampleSize, long orphanAfterSec, int queueLimit, int passPage) {
        public static final Settings DEFAULT = new Settings(262_144, 4096, 0);

        public Settings(int exactLimit, int sampleSize, long orphanAfterSec) {
            this(exactLimit, sampleSize, orphanAfterSec, 1 << 23, 1 << 16);
        }
    }

    /** How often the leader asks the store for sessions it expired unclosed (one SMEMBERS per instance on Redis). */
    static final long UNCLOSED_CHECK_MS = 60_000;
    /** The safety-net sweep of every index: this long after becoming leader, then every FULL_SWEEP_PERIOD_MS. */
    static final long FIRST_FULL_SWEEP_MS = 3_600_000;
    static final long FULL_SWEEP_PERIOD_MS = 86_400_000;

    /** Replicas' clocks may differ this much: a queue holds only seconds at least this far before its pass. */
    static final int CLOCK_MARGIN_SEC = 2;
    /** A queue older than this is rebuilt even if it still yields (bounds what a clock step could spoil). */
    static final int QUEUE_MAX_AGE_SEC = 600;

    private final Registry registry;
    private final QuotaLedger ledger;
    private final WritePath write;
    private final BooleanSupplier leader;
    private final Listener listener;
    private final Settings settings;
    private final Map<String, Long> nextDue = new ConcurrentHashMap<>();
    /** Epoch ms when each TTL group's expiry pass is next due. */
    private final Map<String, Long> nextExpiry = new ConcurrentHashMap<>();
    /** Epoch ms since which each group has been over its water level (absent: under). */
    private final Map<String, Long> overSince = new ConcurrentHashMap<>();
    public final AtomicLong rounds = new AtomicLong();
    public final AtomicLong orphansRemoved = new AtomicLong();
    /** DELETING locations a lost replica left, found by a sweep and purged after their reader lease. */
    public final AtomicLong leftoversResumed = new AtomicLong();
    /** Rounds (one group, one step) that evicted something. */
    public final AtomicLong evictingRounds = new AtomicLong();
    /** Full passes over an instance's index made to choose victims. */
    public final AtomicLong scans = new AtomicLong();
    /** Victims in waiting, per instance id (leader only). */
    private final Map<String, AccessQueue> queues = new ConcurrentHashMap<>();
    /** Passes over a large index in progress, a page per round, per instance id (leader only). */
    private final Map<String, PagedPass> passes = new ConcurrentHashMap<>();
    /** TTL expiry passes in progress: the next scanBlocks cursor per instance id (leader only). */
    private final Map<String, Long> expiryCursors = new ConcurrentHashMap<>();
    /** Set by a round that read a page of an unfinished pass (reclaimer thread only). */
    private boolean paging;
    /** When the leader next sweeps every index for orphans (the safety net; 0: not scheduled yet). */
    private volatile long nextOrphanSweepMs;
    /** When the leader next asks the store which sessions it expired unclosed. */
    private long nextUnclosedCheckMs;
    /** Instances with sessions the store expired unclosed: when first seen, and their ids (reclaimer thread only). */
    private final Map<String, Unclosed> unclosed = new java.util.HashMap<>();
    /** Ids in {@link #unclosed}, for the metric (read from other threads). */
    private volatile int unclosedCount;
    /** The orphan sweep in progress, a page per round (reclaimer thread only). */
    private OrphanSweep sweep;
    /** Counts replicas lost without finishing their deletions; null: none to watch (a single process). */
    private volatile dev.kvpool.meta.ha.LostReplicas lostReplicas;
    private volatile Thread thread;
    private volatile boolean closed;

    /** How often the leader checks each group's usage against its index (0: never); see {@link #auditUsage}. */
    private volatile long auditEveryMs;
    private long nextAuditMs;
    /** The difference each group's last quiet audit found (audit thread only). */
    private final Map<String, Long> lastDifference = new java.util.HashMap<>();
    /** Audits whose difference was confirmed by the next one: usage that no block accounts for (or the reverse). */
    public final AtomicLong auditDrifts = new AtomicLong();
    /** An audit reads whole indexes: on its own thread, so eviction rounds do not wait for it; one at a time. */
    private final java.util.concurrent.ExecutorService auditor = java.util.concurrent.Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name("kvpool-usage-audit").unstarted(r));
    private final java.util.concurrent.atomic.AtomicBoolean auditing = new java.util.concurrent.atomic.AtomicBoolean();

    public void auditEvery(java.time.Duration d) {
        auditEveryMs = d == null ? 0 : d.toMillis();
        nextAuditMs = System.currentTimeMillis() + auditEveryMs;
    }

    /**
     * The usage invariant: every group's ledger equals what its index holds. A difference is reported (log, the
     * {@code kvpool_meta_usage_audit_drifts} metric) only when two quiet audits in a row find the same one: a
     * count that raced a write would not repeat exactly.
     */
    void auditUsage() {
        for (GroupConfig g : registry.groups()) {
            WritePath.Audit a = write.auditUsage(g.name());
            if (a.totalDifference() == null) {
                continue; // busy: compared nothing
            }
            long d = a.totalDifference();
            Long prev = lastDifference.put(g.name(), d);
            if (d != 0 && prev != null && prev == d) {
                auditDrifts.incrementAndGet();
                LOG.warnf("usage audit of instance group %s: the ledger holds %,d bytes %s than its blocks account "
                        + "for, in two audits in a row (per storage type: %s); a restart recounts usage from the "
                        + "index", g.name(), Math.abs(d), d > 0 ? "more" : "less", a.typeDifferences());
            }
        }
    }

    public Reclaimer(Registry registry, QuotaLedger ledger, WritePath write, BooleanSupplier leader,
                     Listener listener, Settings settings) {
        this.registry = registry;
        this.ledger = ledger;
        this.write = write;
        this.leader = leader;
        this.listener = listener;
        this.settings = settings;
    }

    /**
     * Sweeps every index, as the leader, each time {@code l} counts a replica lost that the last sweep did not
     * cover: what it left DELETING (its purges were queued in its own process) is purged here after the reader
     * lease, instead of by every replica that joins reading every index.
     */
    public void sweepAfterLostReplicas(dev.kvpool.meta.ha.LostReplicas l) {
        this.lostReplicas = l;
    }

    /** Share of the time the reclaimer works while busy (see {@link #pauseMs}); 1 = back to back. */
    private volatile double dutyCycle = 1.0;
    /** Usage at which the duty cycle gives way: writes are about to be refused, so eviction runs flat out. */
    static final double URGENT_SHARE = 0.95;
    /** The last tick evicted from a group near a hard limit (no pause after it). */
    private volatile boolean urgent;

    /**
     * Whether the group is at {@link #URGENT_SHARE} of its hard quota, a storage type quota or its key limit
     * (blocks already leaving not counted): past there a paused reclaimer would let writes be refused.
     */
    boolean nearHardLimit(GroupConfig g) {
        QuotaLedger.Usage u = ledger.usage(g.name());
        QuotaLedger.Usage out = write.leaving(g.name());
        if (g.capacity() > 0 && u.total() - out.total() >= URGENT_SHARE * g.capacity()) {
            return true;
        }
        for (Map.Entry<StorageKind, Long> q : g.typeQuotas().entrySet()) {
            if (q.getValue() > 0 && u.byType(q.getKey()) - out.byType(q.getKey()) >= URGENT_SHARE * q.getValue()) {
                return true;
            }
        }
        if (g.maxKeyCount() > 0) {
            for (long k : registry.keyCounts(registry.instancesOf(g.name()))) {
                if (k >= URGENT_SHARE * g.maxKeyCount()) {
                    return true;
                }
            }
        }
        return false;
    }

    public void dutyCycle(double share) {
        if (!(share > 0 && share <= 1)) {
            throw new IllegalArgumentException("kvpool.meta.reclaim.duty-cycle must be in (0, 1], got " + share);
        }
        this.dutyCycle = share;
    }

    /**
     * The pause after a busy round of {@code spentMs} that keeps the reclaimer's work at {@code share} of the time
     * (at most 10 s, so a very slow round does not stall recovery for long).
     */
    static long pauseMs(double spentMs, double share) {
        if (share >= 1 || spentMs <= 0) {
            return 0;
        }
        return Math.min(10_000, Math.round(spentMs * (1 - share) / share));
    }

    public synchronized void start() {
        if (thread != null) {
            return;
        }
        thread = Thread.ofPlatform().daemon().name("kvpool-reclaimer").start(this::loop);
    }

    private final FailureLog failures =
            new FailureLog(LOG, "reclaimer round", java.time.Duration.ofSeconds(30),
                    StoreException.class::isInstance);

    private void loop() {
        long backoffMs = 0;
        while (!closed) {
            boolean busy = false;
            long pause = 0;
            try {
                if (leader.getAsBoolean()) {
                    long t0 = System.nanoTime();
                    busy = tick(System.currentTimeMillis());
                    failures.ok(); // only a round that ran says the store works again
                    backoffMs = 0;
                    pause = busy && !urgent ? pauseMs((System.nanoTime() - t0) / 1e6, dutyCycle) : 0;
                } else {
                    overSince.clear();
                    queues.clear();
                    passes.clear();
                    expiryCursors.clear();
                    nextOrphanSweepMs = 0;
                    nextUnclosedCheckMs = 0;
                    unclosed.clear();
                    unclosedCount = 0;
                    sweep = null;
                }
            } catch (RuntimeException e) {
                failures.failed(e);
                // a store that is down fails every round alike: wait longer each time, up to 5 s
                backoffMs = Math.min(5_000, Math.max(100, backoffMs * 2));
                busy = false;
            }
            if (!busy || pause > 0) {
                try {
                    // idle: the next check; busy under a duty cycle: leave Redis to the lookups for a while
                    Thread.sleep(busy ? pause : Math.max(20, backoffMs));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /**
     * Runs every group whose period is due; true when some group evicted (it is then due again at once, as
     * KVCM does right after a round that triggered).
     */
    public boolean tick(long nowMs) {
        urgent = false;
        if (auditEveryMs > 0 && nowMs >= nextAuditMs && auditing.compareAndSet(false, true)) {
            nextAuditMs = nowMs + auditEveryMs;
            auditor.execute(() -> {
                try {
                    auditUsage();
                } catch (RuntimeException e) {
                    LOG.warnf("usage audit failed: %s", e.toString());
                } finally {
                    auditing.set(false);
                }
            });
        }
        if (registry.sharedStore()) {
            registry.refreshIfOlderThan(1000); // water levels changed on another replica take effect here too
        }
        boolean sweeping = false;
        if (settings.orphanAfterSec() > 0) {
            sweeping = orphans(nowMs);
        }
        if (!queues.isEmpty() || !passes.isEmpty()) { // their memory goes with the instance, or when the group turns LFU
            Set<String> live = new java.util.HashSet<>();
            for (Instance i : registry.instances()) {
                GroupConfig g = registry.group(i.group);
                if (g != null && g.reclaim().policy() != ReclaimPolicy.LFU) {
                    live.add(i.id);
                }
            }
            queues.keySet().retainAll(live);
            passes.keySet().retainAll(live);
        }
        if (!expiryCursors.isEmpty()) {
            Set<String> ids = new java.util.HashSet<>();
            registry.instances().forEach(i -> ids.add(i.id));
            expiryCursors.keySet().retainAll(ids);
        }
        boolean any = false;
        for (GroupConfig g : registry.groups()) {
            long due = nextDue.getOrDefault(g.name(), 0L);
            if (nowMs < due) {
                continue;
            }
            paging = false;
            int evicted = runGroup(g, nowMs);
            if (evicted > 0 && dutyCycle < 1 && nearHardLimit(g)) { // (a usage read: only when it can matter)
                urgent = true;
            }
            // a round that evicted, or read a page of a pass, is followed by the next at once
            boolean again = evicted > 0 || paging;
            nextDue.put(g.name(), again ? nowMs : nowMs + g.reclaim().periodMs());
            any |= again;
        }
        rounds.incrementAndGet();
        return any || sweeping;
    }

    /**
     * The water-level check of one group (§3.10.1 with every field honoured): why it is over, and by how much: {@code excessBytes} (total or, for TYPE_WATER_LEVEL, the
     * largest over its type's level) or {@code excessKeys} (KEY_COUNT) is what must go to bring it strictly under.
     */
    public record Trigger(Reason reason, Set<StorageKind> exceededTypes, long excessBytes, long excessKeys) {
    }

    /**
     * A round aims this far (a fraction of the water level) under the level: with no margin, every write past the
     * line triggered a round of its own, and LFU, which ranks the index afresh each round, made a pass for each.
     */
    static final double MARGIN = 0.01;

    /**
     * What must leave for {@code used} to be under {@code level} × {@code cap} (the trigger fires at or above it),
     * plus the margin.
     */
    private static long over(long used, double level, long cap) {
        long line = (long) Math.ceil((level - 1e-9) * cap);
        return Math.max(0, used - line + 1) + (long) Math.ceil(MARGIN * line);
    }

    public Trigger trigger(GroupConfig g) {
        ReclaimConfig r = g.reclaim();
        double p = r.usedPercentage();
        QuotaLedger.Usage u = ledger.usage(g.name());
        QuotaLedger.Usage out = write.leaving(g.name()); // evicted, bytes not yet deleted: already reclaimed
        long total = Math.max(0, u.total() - out.total());
        EnumSet<StorageKind> types = EnumSet.noneOf(StorageKind.class);
        long typeExcess = 0;
        if (p > 0) {
            for (Map.Entry<StorageKind, Long> q : g.typeQuotas().entrySet()) {
                long cap = q.getValue();
                long used = Math.max(0, u.byType(q.getKey()) - out.byType(q.getKey()));
                if (cap > 0 && used > 0 && (double) used / cap + 1e-9 >= p) {
                    types.add(q.getKey());
                    typeExcess = Math.max(typeExcess, over(used, p, cap));
                }
            }
        }
        if (total > 0) {
            long excess = 0;
            if (p > 0 && (double) total / g.capacity() + 1e-9 >= p) {
                excess = over(total, p, g.capacity());
            }
            if (r.usedSize() > 0 && total >= r.usedSize()) {
                excess = Math.max(excess, total - r.usedSize() + 1 + (long) Math.ceil(MARGIN * r.usedSize()));
            }
            if (excess > 0) {
                return new Trigger(Reason.WATER_LEVEL, types, excess, 0);
            }
            if (p > 0 && g.maxKeyCount() > 0) {
                List<Instance> insts = registry.instancesOf(g.name());
                long keys = java.util.Arrays.stream(registry.keyCounts(insts)).sum();
                long bpk = insts.stream().mapToLong(i -> i.bytesPerKey).max().orElse(1);
                keys = Math.max(0, keys - out.total() / Math.max(1, bpk)); // DELETING keys are on their way out
                long cap = g.maxKeyCount() * Math.max(1, insts.size());
                if ((double) keys / cap + 1e-9 >= p) {
                    return new Trigger(Reason.KEY_COUNT, types, 0, over(keys, p, cap));
                }
            }
        }
        return types.isEmpty() ? null : new Trigger(Reason.TYPE_WATER_LEVEL, types, typeExcess, 0);
    }

    /** One round for one group: TTL expiry, then a water-level step if triggered. Returns blocks evicted. */
    public int runGroup(GroupConfig g, long nowMs) {
        int nowSec = (int) (nowMs / 1000);
        ReclaimConfig r = g.reclaim();
        int evicted = 0;
        List<Instance> insts = registry.instancesOf(g.name());
        if (r.policy() == ReclaimPolicy.TTL && r.ttlSeconds() > 0) {
            // expiry reads the whole index: a tenth of the TTL late (at most a minute) is close enough, and keeps a
            // large index from being read every trigger period; a pass in progress goes on a page per round
            boolean start = nowMs >= nextExpiry.getOrDefault(g.name(), 0L);
            if (start) {
                nextExpiry.put(g.name(), nowMs + Math.max(r.periodMs(), Math.min(r.ttlSeconds() * 100, 60_000)));
            }
            for (Instance inst : insts) {
                evicted += expire(inst, r, nowSec, start);
            }
        }
        Trigger t = trigger(g);
        if (t == null) {
            overSince.remove(g.name());
            return evicted;
        }
        overSince.putIfAbsent(g.name(), nowMs);
        long[] weight = new long[insts.size()];
        long[] counts = registry.keyCounts(insts);
        long keys = 0, sum = 0;
        for (int i = 0; i < weight.length; i++) {
            Instance inst = insts.get(i);
            long k = counts[i];
            keys += k;
            weight[i] = k * Math.max(1, inst.bytesPerKey);
            sum += weight[i];
        }
        if (sum == 0) {
            return evicted;
        }
        long budget = r.stepSize() > 0 || r.stepPercentage() > 0
                ? Math.max(r.stepSize(), (keys * r.stepPercentage() + 99) / 100)
                : (long) DEFAULT_STEP_PER_INSTANCE * insts.size();
        // a step is at most what brings the group under its water level (and the margin): a larger step evicted
        // blocks that fit, so a group just over the line lost a whole step (100 blocks per instance by default).
        // Bytes become blocks at the group's mean block size; a short estimate is made up by the next round
        long meanBytes = Math.max(1, sum / Math.max(1, keys));
        long needed = t.excessKeys() > 0 ? t.excessKeys() : (t.excessBytes() + meanBytes - 1) / meanBytes;
        budget = Math.max(1, Math.min(budget, needed));
        long[] share = fairShares(budget, weight, sum);
        for (int i = 0; i < weight.length; i++) {
            if (share[i] > 0) {
                evicted += evictFrom(insts.get(i), r, t, (int) Math.min(share[i], Integer.MAX_VALUE - 8), nowSec);
            }
        }
        if (evicted > 0) {
            evictingRounds.incrementAndGet();
        }
        return evicted;
    }

    /**
     * {@code budget} blocks split in proportion to usage (a small instance is not stripped for a big one), summing to
     * the budget exactly: whole shares first, the blocks left to the largest remainders.
     */
    static long[] fairShares(long budget, long[] weight, long sum) {
        long[] share = new long[weight.length];
        double[] rest = new double[weight.length];
        long given = 0;
        for (int i = 0; i < weight.length; i++) {
            double exact = (double) budget * weight[i] / sum;
            share[i] = (long) exact;
            rest[i] = exact - share[i];
            given += share[i];
        }
        Integer[] order = new Integer[weight.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (x, y) -> Double.compare(rest[y], rest[x]));
        for (int j = 0; given < budget && j < order.length; j++) {
            if (weight[order[j]] > 0) {
                share[order[j]]++;
                given++;
            }
        }
        return share;
    }

    /** Sessions expired unclosed seen by this leader whose instance is not swept yet. */
    public int unclosedPending() {
        return unclosedCount;
    }

    /** First sight of an instance's sessions expired unclosed, and their ids. */
    private record Unclosed(long seenMs, Set<String> ids) {
    }

    /**
     * Orphans appear only where the store expired a session nobody closed (every replica down past its grace), and
     * the store lists those sessions ({@link InstanceIndex#expiredUnclosed}): so the leader sweeps just those
     * instances, once the locations are old enough to be orphans. A sweep of every index stays as a safety net,
     * an hour after becoming leader and then daily, instead of every half orphan age (at 10^8 keys a sweep is
     * minutes of HSCAN pages). A page per round; true while a sweep is under way.
     */
    private boolean orphans(long nowMs) {
        long ageMs = settings.orphanAfterSec() * 1000;
        if (nowMs >= nextUnclosedCheckMs) {
            nextUnclosedCheckMs = nowMs + UNCLOSED_CHECK_MS;
            for (Instance i : registry.instances()) {
                List<String> ids = i.index.expiredUnclosed();
                if (!ids.isEmpty()) {
                    unclosed.computeIfAbsent(i.id, k -> new Unclosed(nowMs, new java.util.HashSet<>())).ids().addAll(ids);
                }
            }
        }
        if (nextOrphanSweepMs == 0) {
            nextOrphanSweepMs = nowMs + FIRST_FULL_SWEEP_MS;
        }
        var lw = lostReplicas;
        long lost = lw == null ? 0 : lw.replicasLost();
        if (sweep == null && lw != null && lost > lw.lostSwept()) {
            LOG.infof("%d replica(s) lost since the last sweep: sweeping every index for what they left",
                    lost - lw.lostSwept());
            sweep = new OrphanSweep(nowMs / 1000 - settings.orphanAfterSec(), registry.instances(), Map.of());
            sweep.settlesLost = lost;
        }
        if (sweep == null) {
            if (nowMs >= nextOrphanSweepMs) {
                nextOrphanSweepMs = nowMs + FULL_SWEEP_PERIOD_MS;
                sweep = new OrphanSweep(nowMs / 1000 - settings.orphanAfterSec(), registry.instances(), Map.of());
                sweep.settlesLost = lost; // every index, so it covers the replicas lost so far as well
            } else {
                // a session's locations are at most its grace older than the moment Redis expired it, so one orphan
                // age after first sight every one of them is past the cutoff
                Map<String, Set<String>> due = new java.util.HashMap<>();
                unclosed.forEach((id, u) -> {
                    if (nowMs - u.seenMs() >= ageMs) {
                        due.put(id, Set.copyOf(u.ids()));
                    }
                });
                if (!due.isEmpty()) {
                    due.keySet().forEach(unclosed::remove);
                    List<Instance> insts = registry.instances().stream().filter(i -> due.containsKey(i.id)).toList();
                    sweep = new OrphanSweep(nowMs / 1000 - settings.orphanAfterSec(), insts, due);
                }
            }
        }
        unclosedCount = unclosed.values().stream().mapToInt(u -> u.ids().size()).sum();
        if (sweep == null) {
            return false;
        }
        if (sweep.step(settings.passPage() > 0 ? settings.passPage() : 1 << 16)) { // a page per round
            if (sweep.settlesLost > 0 && lw != null) {
                lw.lostSwept(sweep.settlesLost);
                LOG.infof("sweep of every index done in %.1f s: %d locations left DELETING resumed, %d orphans removed",
                        (System.nanoTime() - sweep.startedNs) / 1e9, sweep.resumed, sweep.removed);
            }
            sweep = null;
            return false;
        }
        return true;
    }

    /**
     * Removes blocks whose only locations are WRITING, older than {@code orphanAfterSec}, and named by no open
     * session: a shared store (Redis) expires a session by itself after its grace, and if no replica was alive to
     * close it first, its locations would otherwise stay WRITING for ever (never served, never evicted). The whole
     * sweep at once; the leader's rounds run it a page at a time ({@link OrphanSweep}).
     */
    public int sweepOrphans(long nowMs) {
        OrphanSweep sweep = new OrphanSweep(nowMs / 1000 - settings.orphanAfterSec(), registry.instances(), Map.of());
        while (!sweep.step(1 << 16)) {
        }
        return sweep.removed;
    }

    /**
     * A sweep for orphans over some instances, one scanBlocks page per step. When an instance is done, the store
     * stops listing the expired-unclosed session ids that sent the sweep there.
     */
    final class OrphanSweep {
        private final long cutoffSec;
        private final java.util.ArrayDeque<Instance> todo;
        private final Map<String, Set<String>> forget;
        private java.util.Set<Long> open;
        private long cursor;
        private int foundInInstance;
        int removed;
        /** A sweep of every index begun when this many replicas were lost (0: not such a sweep). */
        long settlesLost;
        final long startedNs = System.nanoTime();
        long resumed;

        OrphanSweep(long cutoffSec, java.util.Collection<Instance> instances, Map<String, Set<String>> forget) {
            this.cutoffSec = cutoffSec;
            this.todo = new java.util.ArrayDeque<>(instances);
            this.forget = forget;
        }

        /** One page of the current instance; true when every instance is done. */
        boolean step(int page) {
            Instance inst = todo.peek();
            if (inst == null) {
                return true;
            }
            if (open == null) {
                // a live session's locations are younger than the cutoff anyway (orphan age > longest timeout)
                open = new java.util.HashSet<>();
                for (var s : inst.index.sessions()) {
                    for (long id : s.locIds()) {
                        open.add(id);
                    }
                }
            }
            LongList orphans = new LongList();
            LocList leftovers = new LocList();
            cursor = inst.index.scanBlocks(cursor, page, b -> {
                boolean orphan = b.size() > 0 && b.writeSec() < cutoffSec;
                for (int i = 0; i < b.size(); i++) {
                    long a = b.a(i);
                    if (Loc.status(a) == Loc.DELETING) {
                        // a lost replica's, or one a live replica purges meanwhile: purges are idempotent
                        leftovers.add(b.key(), a, b.b(i), false);
                    }
                    if (Loc.status(a) != Loc.WRITING || open.contains(Loc.id(a))) {
                        orphan = false;
                    }
                }
                if (orphan) {
                    orphans.add(b.key());
                }
            });
            if (leftovers.size() > 0) {
                write.resumeDeleting(inst, leftovers);
                leftoversResumed.addAndGet(leftovers.size());
                resumed += leftovers.size();
            }
            long[] keys = orphans.toArray();
            for (int off = 0; off < keys.length; off += 1024) {
                LocList moved = inst.index.markDeleting(keys, off, Math.min(1024, keys.length - off), null);
                write.submitDelete(inst, moved, 0);
                removed += moved.size();
                orphansRemoved.addAndGet(moved.size());
            }
            foundInInstance += keys.length;
            if (cursor == 0) {
                if (foundInInstance > 0) {
                    LOG.warnf("instance %s: removed %d orphaned WRITING locations (their sessions expired unclosed)",
                            inst.id, foundInInstance);
                }
                Set<String> done = forget.get(inst.id);
                if (done != null) {
                    inst.index.forgetExpiredUnclosed(done);
                }
                todo.poll();
                open = null;
                foundInInstance = 0;
            }
            return todo.isEmpty();
        }
    }

    /** Epoch ms since when the group has been over its water level, or 0. */
    public long overSince(String group) {
        return overSince.getOrDefault(group, 0L);
    }

    /** Largest time any group has spent over its water level right now (the reclaimer's lag). */
    public long lagMs(long nowMs) {
        return overSince.values().stream().mapToLong(s -> nowMs - s).max().orElse(0);
    }

    int evictFrom(Instance inst, ReclaimConfig r, Trigger t, int share, int nowSec) {
        Set<StorageKind> only = t.reason() == Reason.TYPE_WATER_LEVEL ? t.exceededTypes() : null;
        long[] victims = select(inst, r, only, share, nowSec);
        return victims.length == 0 ? 0 : evict(inst, r, t.reason(), victims);
    }

    /**
     * One page ({@code passPage} keys; 0: the whole index) of the instance's expiry pass: a new pass when
     * {@code start}, else the one in progress if any. What the page finds older than the TTL is read again and
     * evicted at once: expiry needs no ranking, so it need not wait for the pass to end.
     */
    private int expire(Instance inst, ReclaimConfig r, int nowSec, boolean start) {
        Long from = expiryCursors.get(inst.id);
        if (from == null && !start) {
            return 0;
        }
        long cursor = from == null ? 0 : from;
        long cutoff = (long) nowSec - r.ttlSeconds();
        LongList found = new LongList();
        do {
            cursor = inst.index.scanBlocks(cursor, settings.passPage() > 0 ? settings.passPage() : 1 << 16, b -> {
                if (Loc.writeSec(b.meta()) < cutoff) {
                    found.add(b.key());
                }
            });
        } while (cursor != 0 && settings.passPage() <= 0);
        if (cursor == 0) {
            expiryCursors.remove(inst.id);
            scans.incrementAndGet();
        } else {
            expiryCursors.put(inst.id, cursor);
            paging = true;
        }
        long[] old = found.toArray();
        if (old.length == 0) {
            return 0;
        }
        Block[] blocks = new Block[old.length];
        inst.index.getAll(old, 0, old.length, blocks);
        long[] keep = new long[old.length];
        int n = 0;
        for (int i = 0; i < old.length; i++) {
            if (evictable(blocks[i], null) && Loc.writeSec(blocks[i].meta()) < cutoff) {
                keep[n++] = old[i];
            }
        }
        return n == 0 ? 0 : evict(inst, r, Reason.TTL, Arrays.copyOf(keep, n));
    }

    private int evict(Instance inst, ReclaimConfig r, Reason reason, long[] keys) {
        int done = 0;
        for (int off = 0; off < keys.length; off += 1024) {
            int len = Math.min(1024, keys.length - off);
            LocList moved = inst.index.markDeleting(keys, off, len, null);
            if (moved.size() == 0) {
                continue;
            }
            long bytes = 0;
            int blocks = 0;
            long prev = 0;
            for (int i = 0; i < moved.size(); i++) {
                bytes += inst.bytesOf(Loc.specGroup(moved.a(i)));
                if (i == 0 || moved.key(i) != prev) {
                    blocks++;
                    prev = moved.key(i);
                }
            }
            write.submitDelete(inst, moved, r.delayBeforeDeleteMs());
            done += blocks;
            listener.evicted(inst, r.policy(), reason, Arrays.copyOfRange(keys, off, off + len), blocks, bytes);
        }
        return done;
    }

    /** A block may go when it has a SERVING replica (of an exceeded type, if given) and nothing being written. */
    private boolean evictable(Block b, Set<StorageKind> only) {
        if (b == null || b.count(Loc.WRITING) > 0) {
            return false;
        }
        for (int i = 0; i < b.size(); i++) {
            if (Loc.status(b.a(i)) != Loc.SERVING) {
                continue;
            }
            if (only == null) {
                return true;
            }
            Storage st = registry.storageByNumber(Loc.storage(b.a(i)));
            if (st != null && only.contains(st.kind.usageKind())) {
                return true;
            }
        }
        return false;
    }

    /** The {@code share} keys the policy ranks lowest (PREFIX_LRU: see the class comment). */
    long[] select(Instance inst, ReclaimConfig r, Set<StorageKind> only, int share, int nowSec) {
        ReclaimPolicy pol = r.policy();
        InstanceIndex ix = inst.index;
        boolean exact = pol == ReclaimPolicy.PREFIX_LRU || ix.keyCount() <= settings.exactLimit();
        if (exact && pol != ReclaimPolicy.LFU) {
            return selectQueued(inst, pol, only, share, nowSec); // LFU's scores decay with time: no queue
        }
        int decay = r.lfuDecaySeconds();
        TopK top = new TopK(share);
        if (exact) {
            scans.incrementAndGet();
            ix.forEach(b -> {
                if (evictable(b, only)) {
                    top.offer(pol.score(b, nowSec, decay), b.key());
                }
            });
        } else {
            Block[] blocks = ix.sampleBlocks(Math.max(settings.sampleSize(), share * 4), ThreadLocalRandom.current());
            for (Block b : blocks) {
                if (evictable(b, only)) {
                    top.offer(pol.score(b, nowSec, decay), b.key());
                }
            }
        }
        return top.keys();
    }

    /**
     * LRU, TTL and PREFIX_LRU, exactly: from the instance's {@link AccessQueue} while it yields; else one pass over
     * the index that both rebuilds the queue and, when nothing is old enough to queue, selects from the newest
     * seconds. PREFIX_LRU there: blocks sharing the boundary second go together or not at all. Every key scoring
     * below the boundary is in the top k, so those go and the boundary second stays. If the top k all share one
     * second, it is the lowest of all and goes whole, however many keys it has (else nothing could ever go).
     */
    private long[] selectQueued(Instance inst, ReclaimPolicy pol, Set<StorageKind> only, int share, int nowSec) {
        InstanceIndex ix = inst.index;
        java.util.function.Predicate<Block> ok = b -> evictable(b, only);
        AccessQueue q = queues.get(inst.id);
        if (q != null && q.index == ix && q.policy == pol && nowSec >= q.builtSec
                && nowSec - q.readySec <= QUEUE_MAX_AGE_SEC) {
            long[] got = q.take(share, ok);
            if (got.length > 0) {
                return got;
            }
        }
        int cutoff = nowSec - CLOCK_MARGIN_SEC;
        long keyCount = ix.keyCount();
        long cap = queueCapacity(settings.queueLimit(), share, keyCount);
        int capacity = (int) Math.min(cap, Integer.MAX_VALUE - 8);
        if (cap > 0 && registry.sharedStore() && settings.passPage() > 0 && keyCount > settings.passPage()) {
            return pagedPass(inst, pol, share, nowSec, capacity, ok);
        }
        passes.remove(inst.id); // the index shrank below a page meanwhile: one go
        TopK oldest = new TopK(capacity);
        TopK top = new TopK(share);
        boolean prefix = pol == ReclaimPolicy.PREFIX_LRU;
        long[] minScore = {Long.MAX_VALUE};
        LongList atMin = new LongList();
        scans.incrementAndGet();
        ix.forEach(b -> {
            long s = pol.score(b.meta(), nowSec, 0);
            if (s < cutoff) {
                oldest.offer(s, b.key()); // any status: whether it may go is read again when taken
            }
            if (evictable(b, only)) {
                top.offer(s, b.key());
                if (prefix && s <= minScore[0]) {
                    if (s < minScore[0]) {
                        minScore[0] = s;
                        atMin.clear();
                    }
                    atMin.add(b.key());
                }
            }
        });
        q = AccessQueue.of(ix, pol, nowSec, nowSec, oldest);
        queues.put(inst.id, q);
        long[] got = q.take(share, ok);
        if (got.length > 0 || top.size() == 0) {
            return got;
        }
        // nothing old enough to queue: the newest seconds, exactly, from this same pass
        if (!prefix || top.size() < share) {
            return top.keys();
        }
        long[] below = top.keysBelow(top.maxScore());
        return below.length > 0 ? below : atMin.toArray();
    }

    /**
     * Keys a pass queues: 256 rounds' worth or a sixteenth of the index, whichever is more, within the limit, and
     * never less than two rounds (a huge step would otherwise need a pass for every part of one round). The
     * sixteenth is what keeps eviction ahead of the pass on a huge index: a pass costs in proportion to the index
     * (~1.5 s per million keys on Redis), so a queue of a fixed number of rounds would let 10^8 keys evict only
     * 256 rounds per ~150 s pass, while a sixteenth evicts at ~40 k blocks/s whatever the size (16 bytes of heap per
     * queued key: one byte per key of the index).
     */
    static long queueCapacity(int queueLimit, int share, long keyCount) {
        if (queueLimit <= 0) {
            return 0; // off: a pass every round
        }
        long wanted = Math.max(Math.max(4096L, share * 256L), keyCount / 16);
        long cap = Math.max(2L * share, Math.min(queueLimit, wanted));
        // the heap is allocated whole: no bigger than the index (and what a pass may see added to it)
        return Math.min(cap, keyCount + keyCount / 8 + 1024);
    }

    /**
     * A large index on a shared store: one page of the pass per round, nothing evicted from this instance until
     * the pass is done (other groups and instances go on meanwhile). The queue counts from the pass's start: a key
     * touched during the pass is either read after the touch (too new to queue) or queued with its old second,
     * which the re-read when taking finds changed; a key present and unchanged throughout is seen (HSCAN's promise).
     * Nothing is ever too new to queue in such an index, so there is no exact fallback here.
     */
    private long[] pagedPass(Instance inst, ReclaimPolicy pol, int share, int nowSec, int capacity,
                             java.util.function.Predicate<Block> ok) {
        PagedPass p = passes.get(inst.id);
        if (p == null || p.index != inst.index || p.policy != pol || nowSec < p.startSec
                || nowSec - p.lastStepSec > QUEUE_MAX_AGE_SEC) {
            p = new PagedPass(inst.index, pol, nowSec, capacity);
            passes.put(inst.id, p);
        }
        if (!p.step(settings.passPage(), nowSec)) {
            paging = true;
            return new long[0];
        }
        passes.remove(inst.id);
        scans.incrementAndGet();
        AccessQueue q = AccessQueue.of(inst.index, pol, p.startSec, nowSec, p.oldest);
        queues.put(inst.id, q);
        return q.take(share, ok);
    }

    /** A pass over an index a page at a time ({@link InstanceIndex#scanBlocks}: one HSCAN page on Redis). */
    static final class PagedPass {
        final InstanceIndex index;
        final ReclaimPolicy policy;
        final int startSec;
        final TopK oldest;
        int lastStepSec;
        private long cursor;
        private boolean begun;

        PagedPass(InstanceIndex index, ReclaimPolicy policy, int startSec, int capacity) {
            this.index = index;
            this.policy = policy;
            this.startSec = startSec;
            this.lastStepSec = startSec;
            this.oldest = new TopK(capacity);
        }

        /** Reads about {@code hint} more blocks; true when the pass is complete. */
        boolean step(int hint, int nowSec) {
            lastStepSec = nowSec;
            if (begun && cursor == 0) {
                return true;
            }
            begun = true;
            int cutoff = startSec - CLOCK_MARGIN_SEC;
            cursor = index.scanBlocks(cursor, hint, b -> {
                long s = policy.score(b.meta(), startSec, 0);
                if (s < cutoff) {
                    oldest.offer(s, b.key());
                }
            });
            return cursor == 0;
        }
    }

    /** A growable list of longs, no boxing. */
    static final class LongList {
        private long[] v = new long[16];
        private int n;

        void add(long x) {
            if (n == v.length) {
                v = Arrays.copyOf(v, n * 2);
            }
            v[n++] = x;
        }

        int size() {
            return n;
        }

        void truncate(int size) {
            n = Math.min(n, size);
        }

        void clear() {
            n = 0;
        }

        long[] toArray() {
            return Arrays.copyOf(v, n);
        }
    }

    @Override
    public void close() {
        closed = true;
        auditor.shutdownNow();
        Thread t = thread;
        if (t != null) {
            t.interrupt();
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The k smallest (score, key) pairs: a max-heap on score, no boxing. */
    static final class TopK {
        private final int k;
        private final long[] score;
        private final long[] key;
        private int n;

        TopK(int k) {
            this.k = Math.max(0, k);
            this.score = new long[this.k];
            this.key = new long[this.k];
        }

        int size() {
            return n;
        }

        void offer(long s, long kk) {
            if (k == 0) {
                return;
            }
            if (n < k) {
                score[n] = s;
                key[n] = kk;
                up(n++);
            } else if (s < score[0]) {
                score[0] = s;
                key[0] = kk;
                down(0);
            }
        }

        long maxScore() {
            return score[0];
        }

        boolean full() {
            return k > 0 && n == k;
        }

        /** Heap sort in place: afterwards {@link #scores} and {@link #keysInOrder} ascend; no more offers. */
        int sortAscending() {
            int m = n;
            while (n > 1) {
                swap(0, --n);
                down(0);
            }
            n = m;
            return m;
        }

        long[] scores() {
            return score;
        }

        long[] keysInOrder() {
            return key;
        }

        long[] keys() {
            return Arrays.copyOf(key, n);
        }

        long[] keysBelow(long s) {
            long[] out = new long[n];
            int m = 0;
            for (int i = 0; i < n; i++) {
                if (score[i] < s) {
                    out[m++] = key[i];
                }
            }
            return Arrays.copyOf(out, m);
        }

        private void up(int i) {
            while (i > 0) {
                int p = (i - 1) >>> 1;
                if (score[p] >= score[i]) {
                    break;
                }
                swap(i, p);
                i = p;
            }
        }

        private void down(int i) {
            while (true) {
                int l = 2 * i + 1, r = l + 1, m = i;
                if (l < n && score[l] > score[m]) {
                    m = l;
                }
                if (r < n && score[r] > score[m]) {
                    m = r;
                }
                if (m == i) {
                    return;
                }
                swap(i, m);
                i = m;
            }
        }

        private void swap(int a, int b) {
            long s = score[a];
            score[a] = score[b];
            score[b] = s;
            long kk = key[a];
            key[a] = key[b];
            key[b] = kk;
        }
    }
}
