package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.ReclaimConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.meta.index.StoreException;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.retry.Backoff;
import dev.kvpool.meta.index.StorageKind;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * Evicts blocks when a group crosses a water level. Runs on the leader only. Each group is checked every
 * {@link ReclaimConfig#periodMs()}; a triggered group loses up to one step of blocks per round (no more than brings
 * it under the level by 1 % of the level), shared among its instances in proportion to their usage, each instance's
 * share chosen by the group's policy. Eviction is SERVING → DELETING at once (readers stop seeing the block), then
 * after the reader lease the bytes and slots are freed and the metadata removed if still DELETING
 * ({@link Deletions#submitDelete}). WRITING locations are never evicted.
 *
 * <p>One job per class: this one is the trigger loop (water levels, TTL expiry, pacing); {@link VictimSelector}
 * chooses the blocks, {@link OrphanSweeper} sweeps orphans and leftovers, {@link UsageAudit} checks the ledger.
 */
public final class Reclaimer implements AutoCloseable, MeterBinder {
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

    private final Registry registry;
    private final QuotaLedger ledger;
    private final Deletions deletions;
    private final BooleanSupplier leader;
    private final Listener listener;
    private final Settings settings;
    private final Map<String, Long> nextDue = new ConcurrentHashMap<>();
    /** Epoch ms when each TTL group's expiry pass is next due. */
    private final Map<String, Long> nextExpiry = new ConcurrentHashMap<>();
    /** Epoch ms since which each group has been over its water level (absent: under). */
    private final Map<String, Long> overSince = new ConcurrentHashMap<>();
    public final AtomicLong rounds = new AtomicLong();
    /** The orphan sweep's counts (see {@link OrphanSweeper}). */
    public final AtomicLong orphansRemoved;
    /** DELETING locations a lost replica left, found by a sweep and purged after their reader lease. */
    public final AtomicLong leftoversResumed;
    /** Rounds (one group, one step) that evicted something. */
    public final AtomicLong evictingRounds = new AtomicLong();
    /** Full passes over an instance's index made to choose victims. */
    public final AtomicLong scans = new AtomicLong();
    private final VictimSelector selector;
    private final OrphanSweeper orphans;
    private final UsageAudit audit;
    /** TTL expiry passes in progress: the next scanBlocks cursor per instance id (leader only). */
    private final Map<String, Long> expiryCursors = new ConcurrentHashMap<>();
    /** Set by a round that read a page of an unfinished expiry pass (reclaimer thread only). */
    private boolean paging;
    private volatile Thread thread;
    private volatile boolean closed;

    /** Audits whose difference was confirmed by the next one (see {@link UsageAudit}). */
    public final AtomicLong auditDrifts;

    /** How often the leader checks each group's usage against its index (null or zero: never). */
    public void auditEvery(java.time.Duration d) {
        audit.every(d);
    }

    public Reclaimer(Registry registry, QuotaLedger ledger, Deletions deletions, Recovery recovery,
                     BooleanSupplier leader, Listener listener, Settings settings) {
        this.registry = registry;
        this.ledger = ledger;
        this.deletions = deletions;
        this.leader = leader;
        this.listener = listener;
        this.settings = settings;
        this.selector = new VictimSelector(registry, settings, scans);
        this.orphans = new OrphanSweeper(registry, deletions, recovery, settings.orphanAfterSec(),
                settings.passPage());
        this.audit = new UsageAudit(registry, recovery);
        this.orphansRemoved = orphans.orphansRemoved;
        this.leftoversResumed = orphans.leftoversResumed;
        this.auditDrifts = audit.drifts;
    }

    /**
     * Sweeps every index, as the leader, each time {@code l} counts a replica lost that the last sweep did not
     * cover: what it left DELETING (its purges were queued in its own process) is purged here after the reader
     * lease, instead of by every replica that joins reading every index.
     */
    public void sweepAfterLostReplicas(dev.kvpool.meta.ha.LostReplicas l) {
        orphans.afterLostReplicas(l);
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
        QuotaLedger.Usage out = deletions.leaving(g.name());
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

    /**
     * Starts the rounds on a thread of their own. Not {@code @Scheduled}: a busy round is followed by the next at once
     * (or after the duty cycle's pause), an idle one by a short wait, a failed one by a backoff; a fixed period
     * would either slow eviction under pressure or poll a store that is down.
     */
    public synchronized void start() {
        if (thread != null) {
            return;
        }
        thread = Thread.ofPlatform().daemon().name("kvpool-reclaimer").start(this::loop);
    }

    private final FailureLog failures =
            new FailureLog(LOG, "reclaimer round", java.time.Duration.ofSeconds(30),
                    StoreException.class::isInstance);

    /** The waits between rounds while they fail. */
    private static final Backoff STORE_DOWN = new Backoff(100, 5_000);

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
                    selector.forget();
                    expiryCursors.clear();
                    orphans.forget();
                }
            } catch (RuntimeException e) {
                failures.failed(e);
                // a store that is down fails every round alike: wait longer each time, up to 5 s
                backoffMs = STORE_DOWN.after(backoffMs);
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
        audit.maybeStart(nowMs);
        if (registry.sharedStore()) {
            registry.refreshIfOlderThan(1000); // water levels changed on another replica take effect here too
        }
        boolean sweeping = false;
        if (settings.orphanAfterSec() > 0) {
            sweeping = orphans.step(nowMs);
        }
        selector.retainLive();
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
            selector.clearPaging();
            int evicted = runGroup(g, nowMs);
            if (evicted > 0 && dutyCycle < 1 && nearHardLimit(g)) { // (a usage read: only when it can matter)
                urgent = true;
            }
            // a round that evicted, or read a page of a pass, is followed by the next at once
            boolean again = evicted > 0 || paging || selector.paging();
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
        QuotaLedger.Usage out = deletions.leaving(g.name()); // evicted, bytes not yet deleted: already reclaimed
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
        return orphans.unclosedPending();
    }

    /**
     * Removes every orphan at once (see {@link OrphanSweeper}; the leader's rounds sweep a page at a time). Returns
     * the orphaned locations removed.
     */
    public int sweepOrphans(long nowMs) {
        return orphans.sweepAll(nowMs);
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
        long[] victims = selector.select(inst, r, only, share, nowSec);
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
            if (selector.evictable(blocks[i], null) && Loc.writeSec(blocks[i].meta()) < cutoff) {
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
            deletions.submitDelete(inst, moved, r.delayBeforeDeleteMs());
            done += blocks;
            countEviction(inst.group, r.policy(), reason, blocks, bytes);
            listener.evicted(inst, r.policy(), reason, Arrays.copyOfRange(keys, off, off + len), blocks, bytes);
        }
        return done;
    }

    @Override
    public void close() {
        closed = true;
        audit.close();
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

    /** Where eviction counters go once bound (none before: tests that build a bare reclaimer count nothing). */
    private volatile MeterRegistry meters;
    /** Eviction counters by group, policy and reason. */
    private final Map<String, Counter> evictionCounters = new ConcurrentHashMap<>();

    /** The reclaimer's gauges, and the eviction counters of every round from here on. */
    @Override
    public void bindTo(MeterRegistry meters) {
        this.meters = meters;
        Gauge.builder("kvpool.meta.reclaim.lag.seconds", this, r -> r.lagMs(System.currentTimeMillis()) / 1000.0)
                .description("longest time a group has been over its water level").strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.reclaim.rounds", this, r -> r.evictingRounds.get())
                .description("reclaim rounds (one group, one step) that evicted blocks").strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.reclaim.scans", this, r -> r.scans.get())
                .description("full passes over an instance's index made to choose victims").strongReference(true)
                .register(meters);
        Gauge.builder("kvpool.meta.reclaim.leftovers.resumed", this, r -> r.leftoversResumed.get())
                .description("DELETING locations a lost replica left, purged after the leader's sweep found them")
                .strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.reclaim.orphans.removed", this, r -> r.orphansRemoved.get())
                .description("WRITING locations removed because their session expired unclosed")
                .strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.reclaim.orphans.pending.sessions", this, Reclaimer::unclosedPending)
                .description("sessions the store expired unclosed whose orphans await their sweep (leader)")
                .strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.usage.audit.drifts", this, r -> r.auditDrifts.get())
                .description("usage audits whose difference between ledger and index the next audit confirmed "
                        + "(should stay 0)").strongReference(true).register(meters);
    }

    private void countEviction(String group, ReclaimPolicy policy, Reason reason, int blocks, long bytes) {
        MeterRegistry m = meters;
        if (m == null) {
            return;
        }
        String tag = group + "/" + policy + "/" + reason;
        String why = reason.name().toLowerCase(java.util.Locale.ROOT);
        evictionCounters.computeIfAbsent("b:" + tag, k -> Counter.builder("kvpool.meta.reclaim.evicted.blocks")
                .description("blocks evicted by the reclaimer").tag("group", group).tag("policy", policy.name())
                .tag("reason", why).register(m)).increment(blocks);
        evictionCounters.computeIfAbsent("y:" + tag, k -> Counter.builder("kvpool.meta.reclaim.evicted.bytes")
                .description("bytes reclaimed by eviction").tag("group", group).tag("policy", policy.name())
                .tag("reason", why).register(m)).increment(bytes);
    }
}
