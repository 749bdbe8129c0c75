package dev.kvpool.meta.sim;

import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.ReclaimPolicy;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;

/**
 * Hit rate of an eviction policy at a capacity: one replay of a trace through a fresh {@link TraceSimulation} (the
 * real read path, write path and reclaimer). The one replay both {@code ./kvpool bench policies} and the console's
 * what-if jobs ({@code dev.kvpool.meta.whatif}) run, so their hit rates are the same for the same trace, capacity
 * and policy.
 *
 * <p>Each run is one instance whose group has a hard quota of {@code capacity} blocks and a soft water level of
 * {@code water} of it, fed the whole trace on the trace's own clock: prefix query (which refreshes access time),
 * two-phase write of the missed blocks, then reclaimer rounds until under the water level, each round
 * {@code stepPercentage} of the blocks. The "unbounded" run (a quota far above the trace's total block count,
 * nothing ever evicted) gives the trace's ceiling.
 */
public final class PolicySweep {
    /** An arbitrary fixed epoch for the trace clock (timestamps in the traces start at 0 ms). */
    public static final long T0 = 1_763_800_000_000L;
    /** Cached blocks whose parent is not cached are sampled every this many requests (when parents are known). */
    public static final int ORPHAN_SAMPLE_EVERY = 100;
    /** The LFU decay period the bench and the what-if use unless told otherwise (seconds). */
    public static final int LFU_DECAY = 60;

    private PolicySweep() {
    }

    /**
     * A trace ready to replay.
     *
     * @param file   where it was read from; null for recorded traffic
     * @param blocks blocks asked over all requests (the replay's block accesses)
     * @param parent hash id → the id before it in a request (ids are prefix-chained); null when not computed (it is
     *               only needed for the bench's orphan sampling)
     * @param ops    recorded operations replayed as they happened, or null: each request queries, then writes what
     *               it missed
     */
    public record Trace(String name, Path file, List<MooncakeTrace.Request> requests, long blocks, long distinct,
                        Map<Long, Long> parent, int blockTokens, List<CacheEventTrace.Op> ops) {

        /** Counts blocks and distinct ids, and the parent map when {@code withParents}. */
        public static Trace of(String name, Path file, List<MooncakeTrace.Request> reqs, int blockTokens,
                               List<CacheEventTrace.Op> ops, boolean withParents) {
            long blocks = 0;
            Set<Long> distinct = new HashSet<>();
            Map<Long, Long> parent = withParents ? new HashMap<>() : null;
            for (var r : reqs) {
                long[] h = r.hashIds();
                blocks += h.length;
                for (int i = 0; i < h.length; i++) {
                    distinct.add(h[i]);
                    if (parent != null && i > 0) {
                        parent.putIfAbsent(h[i], h[i - 1]);
                    }
                }
            }
            return new Trace(name, file, reqs, blocks, distinct.size(), parent, blockTokens, ops);
        }

        /** Block accesses one replay makes: the blocks its queries ask for. */
        public long accesses() {
            if (ops == null) {
                return blocks;
            }
            long n = 0;
            for (CacheEventTrace.Op op : ops) {
                if (!op.write()) {
                    n += op.keys().length;
                }
            }
            return n;
        }

        /** Blocks written as recorded that no query asked for first (recorded traffic only; else 0). */
        public long recordedWrites() {
            return ops == null ? 0 : ops.stream().filter(CacheEventTrace.Op::write).mapToLong(op -> op.keys().length).sum();
        }
    }

    /**
     * A Mooncake trace: {@code conversation} and {@code synthetic} are the shipped examples, anything else a path.
     * The name is the example's, or the file name without {@code _trace.jsonl}.
     */
    public static Trace load(String which, int limit, boolean withParents) {
        Path file = switch (which) {
            case "conversation" -> MooncakeTrace.conversation();
            case "synthetic" -> MooncakeTrace.synthetic();
            default -> Path.of(which);
        };
        String name = which.equals("conversation") || which.equals("synthetic") ? which
                : file.getFileName().toString().replaceFirst("(_trace)?\\.jsonl$", "");
        return load(name, file, limit, withParents);
    }

    public static Trace load(String name, Path file, int limit, boolean withParents) {
        return Trace.of(name, file, MooncakeTrace.read(file, limit), MooncakeTrace.BLOCK_SIZE, null, withParents);
    }

    /**
     * One replay's outcome.
     *
     * @param tokens   the capacity asked for in tokens; negative for the unbounded run
     * @param orphaned mean share of cached blocks whose parent was not cached (0 when parents are not known)
     * @param seconds  the replay's own time (orphan sampling left out)
     */
    public record Result(String trace, long tokens, long capacityBlocks, String policy, double hitRate, long hitBlocks,
                         long queried, long written, long refused, long evicted, double orphaned, double seconds) {
        public boolean unbounded() {
            return tokens < 0;
        }
    }

    /** What a caller sees of a replay in flight: it may stop it, and it hears how far it got. */
    public interface Control {
        /** Checked between requests: true stops the replay with a {@link CancellationException}. */
        boolean cancelled();

        /** After each request: the blocks asked so far in this replay. */
        void progress(long accessesDone);
    }

    /** No cancel, no progress. */
    public static final Control NONE = new Control() {
        @Override
        public boolean cancelled() {
            return false;
        }

        @Override
        public void progress(long accessesDone) {
        }
    };

    /** The reclaim strategy of a run; reader lease 0: the simulation's clock is the trace's, not the wall clock. */
    public static ReclaimConfig config(ReclaimPolicy p, double water, int stepPct, int lfuDecay) {
        return new ReclaimConfig(p, water, 0, 0, 0, stepPct, 0, 0, lfuDecay);
    }

    /** A capacity in blocks the trace cannot fill even at the water level: nothing is ever evicted. */
    public static long unboundedBlocks(Trace t, double water) {
        return (long) Math.ceil((t.blocks() + t.recordedWrites()) / Math.max(0.01, water)) + 1024;
    }

    /** The ceiling: the unbounded run; throws when it evicted or refused anything (it must not). */
    public static Result unbounded(Trace t, double water, int stepPct, int lfuDecay, Control control) {
        Result u = replay(t, ReclaimPolicy.LRU, -1, unboundedBlocks(t, water), water, stepPct, lfuDecay, control);
        if (u.evicted() != 0 || u.refused() != 0) {
            throw new IllegalStateException("unbounded run evicted or refused blocks: " + u);
        }
        return u;
    }

    /**
     * One run of trace {@code t} with policy {@code p} and a hard quota of {@code capBlocks} blocks.
     *
     * @param tokens the capacity as asked for, in tokens (reported back); negative marks the unbounded run
     */
    public static Result replay(Trace t, ReclaimPolicy p, long tokens, long capBlocks, double water, int stepPct,
                                int lfuDecay, Control control) {
        long t0 = System.nanoTime();
        try (TraceSimulation sim = new TraceSimulation(config(p, water, stepPct, lfuDecay), capBlocks, t.blockTokens())) {
            long orphans = 0, sampled = 0, sampleNanos = 0;
            Map<Long, Long> parent = t.parent();
            List<CacheEventTrace.Op> ops = t.ops();
            List<MooncakeTrace.Request> reqs = t.requests();
            int n = ops != null ? ops.size() : reqs.size();
            for (int i = 0; i < n; i++) {
                if (control.cancelled()) {
                    throw new CancellationException("cancelled after " + sim.requests + " requests");
                }
                long before = sim.requests;
                if (ops == null) {
                    var r = reqs.get(i);
                    sim.request(T0 + r.timestampMs(), r.hashIds());
                } else if (ops.get(i).write()) {
                    sim.write(T0 + ops.get(i).tsMs(), ops.get(i).keys());
                } else {
                    sim.query(T0 + ops.get(i).tsMs(), ops.get(i).keys());
                }
                control.progress(sim.queriedBlocks);
                if (parent != null && sim.requests != before && sim.requests % ORPHAN_SAMPLE_EVERY == 0) {
                    long s0 = System.nanoTime();
                    Set<Long> cached = sim.cached();
                    for (long k : cached) {
                        Long up = parent.get(k);
                        if (up != null && !cached.contains(up)) {
                            orphans++;
                        }
                    }
                    sampled += cached.size();
                    sampleNanos += System.nanoTime() - s0;
                }
            }
            return new Result(t.name(), tokens, capBlocks, tokens < 0 ? "unbounded" : p.name(), sim.hitRate(),
                    sim.hitBlocks, sim.queriedBlocks, sim.writtenBlocks, sim.refusedBlocks, sim.evictedBlocks,
                    sampled == 0 ? 0 : (double) orphans / sampled, (System.nanoTime() - t0 - sampleNanos) / 1e9);
        }
    }
}
