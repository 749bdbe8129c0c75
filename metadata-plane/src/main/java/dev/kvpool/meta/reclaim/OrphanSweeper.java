package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.ha.LostReplicas;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The leader's sweep for orphans and leftovers, a page per reclaimer round. Removes blocks whose only locations
 * are WRITING, older than {@code orphanAfterSec}, and named by no open session: a shared store (Redis) expires a
 * session by itself after its grace, and if no replica was alive to close it first, its locations would otherwise
 * stay WRITING for ever (never served, never evicted). On the way it resumes the purge of DELETING locations a lost
 * replica left. Keeps the queue of instances with sessions the store expired unclosed.
 */
final class OrphanSweeper {
    private static final Logger LOG = Logger.getLogger(Reclaimer.class); // the reclaimer's log, as before the split

    /** How often the leader asks the store for sessions it expired unclosed (one SMEMBERS per instance on Redis). */
    static final long UNCLOSED_CHECK_MS = 60_000;
    /** The safety-net sweep of every index: this long after becoming leader, then every FULL_SWEEP_PERIOD_MS. */
    static final long FIRST_FULL_SWEEP_MS = 3_600_000;
    static final long FULL_SWEEP_PERIOD_MS = 86_400_000;

    private final Registry registry;
    private final Deletions deletions;
    private final Recovery recovery;
    private final long orphanAfterSec;
    /** scanBlocks page per round (0: 65,536). */
    private final int page;
    final AtomicLong orphansRemoved = new AtomicLong();
    /** DELETING locations a lost replica left, found by a sweep and purged after their reader lease. */
    final AtomicLong leftoversResumed = new AtomicLong();

    /** When the leader next sweeps every index for orphans (the safety net; 0: not scheduled yet). */
    private long nextOrphanSweepMs;
    /** When the leader next asks the store which sessions it expired unclosed. */
    private long nextUnclosedCheckMs;
    /** Instances with sessions the store expired unclosed: when first seen, and their ids (reclaimer thread only). */
    private final Map<String, Unclosed> unclosed = new HashMap<>();
    /** Ids in {@link #unclosed}, for the metric (read from other threads). */
    private volatile int unclosedCount;
    /** The sweep in progress, a page per round (reclaimer thread only). */
    private Sweep sweep;
    /** Counts replicas lost without finishing their deletions; null: none to watch (a single process). */
    private volatile LostReplicas lostReplicas;

    OrphanSweeper(Registry registry, Deletions deletions, Recovery recovery, long orphanAfterSec, int passPage) {
        this.registry = registry;
        this.deletions = deletions;
        this.recovery = recovery;
        this.orphanAfterSec = orphanAfterSec;
        this.page = passPage > 0 ? passPage : 1 << 16;
    }

    /** First sight of an instance's sessions expired unclosed, and their ids. */
    private record Unclosed(long seenMs, Set<String> ids) {
    }

    void afterLostReplicas(LostReplicas l) {
        this.lostReplicas = l;
    }

    /** Sessions expired unclosed seen by this leader whose instance is not swept yet. */
    int unclosedPending() {
        return unclosedCount;
    }

    /** Not the leader (any more): the next leader starts afresh. */
    void forget() {
        nextOrphanSweepMs = 0;
        nextUnclosedCheckMs = 0;
        unclosed.clear();
        unclosedCount = 0;
        sweep = null;
    }

    /**
     * Orphans appear only where the store expired a session nobody closed (every replica down past its grace), and
     * the store lists those sessions ({@link InstanceIndex#expiredUnclosed}): so the leader sweeps just those
     * instances, once the locations are old enough to be orphans. A sweep of every index stays as a safety net,
     * an hour after becoming leader and then daily, instead of every half orphan age (at 10^8 keys a sweep is
     * minutes of HSCAN pages). A page per round; true while a sweep is under way.
     */
    boolean step(long nowMs) {
        long ageMs = orphanAfterSec * 1000;
        if (nowMs >= nextUnclosedCheckMs) {
            nextUnclosedCheckMs = nowMs + UNCLOSED_CHECK_MS;
            for (Instance i : registry.instances()) {
                List<String> ids = i.index.expiredUnclosed();
                if (!ids.isEmpty()) {
                    unclosed.computeIfAbsent(i.id, k -> new Unclosed(nowMs, new HashSet<>())).ids().addAll(ids);
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
            sweep = new Sweep(nowMs / 1000 - orphanAfterSec, registry.instances(), Map.of());
            sweep.settlesLost = lost;
        }
        if (sweep == null) {
            if (nowMs >= nextOrphanSweepMs) {
                nextOrphanSweepMs = nowMs + FULL_SWEEP_PERIOD_MS;
                sweep = new Sweep(nowMs / 1000 - orphanAfterSec, registry.instances(), Map.of());
                sweep.settlesLost = lost; // every index, so it covers the replicas lost so far as well
            } else {
                // a session's locations are at most its grace older than the moment Redis expired it, so one orphan
                // age after first sight every one of them is past the cutoff
                Map<String, Set<String>> due = new HashMap<>();
                unclosed.forEach((id, u) -> {
                    if (nowMs - u.seenMs() >= ageMs) {
                        due.put(id, Set.copyOf(u.ids()));
                    }
                });
                if (!due.isEmpty()) {
                    due.keySet().forEach(unclosed::remove);
                    List<Instance> insts = registry.instances().stream().filter(i -> due.containsKey(i.id)).toList();
                    sweep = new Sweep(nowMs / 1000 - orphanAfterSec, insts, due);
                }
            }
        }
        unclosedCount = unclosed.values().stream().mapToInt(u -> u.ids().size()).sum();
        if (sweep == null) {
            return false;
        }
        if (sweep.step(page)) { // a page per round
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

    /** The whole sweep of every index at once; returns the orphaned locations removed. */
    int sweepAll(long nowMs) {
        Sweep all = new Sweep(nowMs / 1000 - orphanAfterSec, registry.instances(), Map.of());
        while (!all.step(1 << 16)) {
        }
        return all.removed;
    }

    /**
     * A sweep for orphans over some instances, one scanBlocks page per step. When an instance is done, the store
     * stops listing the expired-unclosed session ids that sent the sweep there.
     */
    private final class Sweep {
        private final long cutoffSec;
        private final ArrayDeque<Instance> todo;
        private final Map<String, Set<String>> forget;
        private Set<Long> open;
        private long cursor;
        private int foundInInstance;
        int removed;
        /** A sweep of every index begun when this many replicas were lost (0: not such a sweep). */
        long settlesLost;
        final long startedNs = System.nanoTime();
        long resumed;

        Sweep(long cutoffSec, Collection<Instance> instances, Map<String, Set<String>> forget) {
            this.cutoffSec = cutoffSec;
            this.todo = new ArrayDeque<>(instances);
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
                open = new HashSet<>();
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
                recovery.resumeDeleting(inst, leftovers);
                leftoversResumed.addAndGet(leftovers.size());
                resumed += leftovers.size();
            }
            long[] keys = orphans.toArray();
            for (int off = 0; off < keys.length; off += 1024) {
                LocList moved = inst.index.markDeleting(keys, off, Math.min(1024, keys.length - off), null);
                deletions.submitDelete(inst, moved, 0);
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
}
