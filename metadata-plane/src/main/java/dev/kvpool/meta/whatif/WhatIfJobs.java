package dev.kvpool.meta.whatif;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.sim.PolicySweep;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * What-if jobs: a sweep of {@link PolicySweep#replay} runs (policies × capacities, plus the unbounded ceiling), run
 * in the background on a small pool of threads, with live progress, cancel, and the smallest capacity that reaches
 * a target hit rate (bisected with more real replays after the sweep).
 *
 * <p>At most {@code jobsKept} jobs are kept; at most {@code jobsRunning} run at a time and the others wait in a
 * queue, in submission order. A new job when every kept job is queued or running is refused
 * ({@link Busy}, 429); otherwise the oldest finished job is forgotten to make room. Jobs live in this plane's
 * memory: a browser that reloads finds them by id, a restarted plane has none.
 */
public final class WhatIfJobs implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(WhatIfJobs.class);
    public static final int MAX_CAPACITY_POINTS = 64;
    /** Capacities in tokens: at most this (a what-if of 10^13 tokens is not a question anyone asks). */
    public static final long MAX_CAPACITY_TOKENS = 10_000_000_000_000L;

    /** {@code target}: the smallest capacity for {@code policy} that reaches {@code hitRate}. */
    public record Target(String policy, Double hitRate) {
    }

    /** {@code capacityRange}: {@code points} capacities log-spaced from {@code min} to {@code max} tokens. */
    public record CapacityRange(Double min, Double max, Integer points) {
    }

    /** The body of POST /api/v1/whatif/runs. */
    public record RunRequest(String trace, List<String> policies, List<Long> capacities, CapacityRange capacityRange,
                             Double water, Integer stepPercentage, Integer lfuDecaySeconds, Target target) {
    }

    /** A request that cannot run: 400 naming {@code field}. */
    public static final class Invalid extends IllegalArgumentException {
        public final String field;

        public Invalid(String field, String message) {
            super(message);
            this.field = field;
        }
    }

    /** Every kept job is queued or running: 429. */
    public static final class Busy extends RuntimeException {
        Busy(String message) {
            super(message);
        }
    }

    public enum State {
        queued, running, done, cancelled, failed;

        boolean finished() {
            return this == done || this == cancelled || this == failed;
        }
    }

    // ---- views (the JSON of GET /api/v1/whatif/runs/{id}) --------------------------------------------------------

    public record TraceView(String name, long requests, long blocks, long distinct, int blockTokens) {
    }

    public record Progress(int runsDone, int runsTotal, long accessesDone, long accessesTotal, double fraction) {
    }

    public record Ceiling(double hitRate) {
    }

    public record ResultView(String policy, long capacityTokens, long capacityBlocks, double hitRate, long hitBlocks,
                             long queriedBlocks, long writtenBlocks, long evictedBlocks, long refusedBlocks,
                             double seconds) {
        static ResultView of(PolicySweep.Result r) {
            return new ResultView(r.policy(), r.tokens(), r.capacityBlocks(), r.hitRate(), r.hitBlocks(), r.queried(),
                    r.written(), r.evicted(), r.refused(), r.seconds());
        }
    }

    /** One bisection replay: its capacity and hit rate. */
    public record Probe(long capacityTokens, long capacityBlocks, double hitRate) {
    }

    /**
     * @param reached        whether some replayed capacity reached the target
     * @param capacityTokens the smallest replayed capacity that reached it (null when not reached)
     * @param achievedHitRate that capacity's hit rate
     * @param probes         the bisection's replays, in order
     */
    public record Smallest(String policy, double hitRate, boolean reached, Long capacityTokens, Long capacityBlocks,
                           Double achievedHitRate, List<Probe> probes, String note) {
    }

    /** The normalised request: what runs (capacities as a list, defaults filled in). */
    public record RequestView(String trace, List<String> policies, List<Long> capacities, double water,
                              int stepPercentage, int lfuDecaySeconds, Target target) {
    }

    public record View(String id, String state, String error, RequestView request, TraceView trace, Progress progress,
                       Instant createdAt, Instant startedAt, Instant finishedAt, double elapsedSeconds,
                       Double accessesPerSecond, Ceiling ceiling, List<ResultView> results, Smallest smallest) {
    }

    // ---- jobs ---------------------------------------------------------------------------------------------------

    private final class Job {
        final String id;
        final RequestView req;
        final List<ReclaimPolicy> policies;
        final Instant createdAt = Instant.now();
        volatile State state = State.queued;
        volatile String error;
        volatile boolean cancel;
        volatile Instant startedAt, finishedAt;
        volatile long startedNs, finishedNs;
        volatile PolicySweep.Trace trace;
        volatile int runsDone, runsTotal;
        volatile long accessesTotal;
        final AtomicLong accessesFinished = new AtomicLong();
        /** Blocks asked so far by each replay in flight. */
        final Map<Object, AtomicLong> inFlight = new java.util.concurrent.ConcurrentHashMap<>();
        volatile Double ceiling;
        final List<PolicySweep.Result> results = java.util.Collections.synchronizedList(new ArrayList<>());
        volatile Smallest smallest;
        volatile Future<?> future;

        Job(String id, RequestView req, List<ReclaimPolicy> policies) {
            this.id = id;
            this.req = req;
            this.policies = policies;
        }

        long accessesDone() {
            long n = accessesFinished.get();
            for (AtomicLong a : inFlight.values()) {
                n += a.get();
            }
            return n;
        }

        /** One replay on the pool's calling thread, counted in the progress. */
        PolicySweep.Result replay(ReclaimPolicy p, long tokens, long blocks) {
            PolicySweep.Trace t = trace;
            Object key = new Object();
            AtomicLong mine = new AtomicLong();
            inFlight.put(key, mine);
            try {
                PolicySweep.Control c = new PolicySweep.Control() {
                    @Override
                    public boolean cancelled() {
                        return cancel;
                    }

                    @Override
                    public void progress(long accessesDone) {
                        mine.lazySet(accessesDone);
                    }
                };
                PolicySweep.Result r = tokens < 0 ? PolicySweep.unbounded(t, req.water(), req.stepPercentage(),
                        req.lfuDecaySeconds(), c) : PolicySweep.replay(t, p, tokens, blocks, req.water(),
                        req.stepPercentage(), req.lfuDecaySeconds(), c);
                accessesFinished.addAndGet(r.queried());
                synchronized (this) {
                    runsDone++;
                }
                return r;
            } finally {
                inFlight.remove(key);
            }
        }

        View view() {
            long done = accessesDone();
            long total = Math.max(accessesTotal, done);
            long endNs = finishedNs != 0 ? finishedNs : System.nanoTime();
            double elapsed = startedNs == 0 ? 0 : (endNs - startedNs) / 1e9;
            PolicySweep.Trace t = trace;
            List<ResultView> rs;
            synchronized (results) {
                rs = results.stream().sorted(Comparator.comparingInt((PolicySweep.Result r) ->
                                req.policies().indexOf(r.policy())).thenComparingLong(PolicySweep.Result::tokens))
                        .map(ResultView::of).toList();
            }
            return new View(id, state.name(), error, req, t == null ? null : new TraceView(t.name(),
                    t.requests().size(), t.blocks(), t.distinct(), t.blockTokens()),
                    new Progress(runsDone, runsTotal, done, total, total == 0 ? 0 : Math.min(1, (double) done / total)),
                    createdAt, startedAt, finishedAt, elapsed, elapsed > 0 ? done / elapsed : null,
                    ceiling == null ? null : new Ceiling(ceiling), rs, smallest);
        }
    }

    private final WhatIfTraces traces;
    private final int kept, running, maxRuns, bisectSteps;
    private final ExecutorService jobPool;
    private final ExecutorService replays;
    private final LinkedHashMap<String, Job> jobs = new LinkedHashMap<>();
    private final int threads;

    public WhatIfJobs(WhatIfTraces traces, int kept, int running, int threads, int maxRuns, int bisectSteps) {
        this.traces = traces;
        this.kept = Math.max(1, kept);
        this.running = Math.max(1, running);
        this.maxRuns = maxRuns;
        this.bisectSteps = Math.max(0, bisectSteps);
        this.threads = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
        // one thread per running job drives it; the replays of every job share one pool (queued jobs wait for a
        // driver in submission order)
        this.jobPool = Executors.newFixedThreadPool(this.running, Thread.ofPlatform().name("kvpool-whatif-job-", 0)
                .daemon().factory());
        this.replays = Executors.newFixedThreadPool(this.threads, Thread.ofPlatform().name("kvpool-whatif-replay-", 0)
                .daemon().factory());
    }

    public int threads() {
        return threads;
    }

    /** Checks and queues a job; returns its first view. */
    public View submit(RunRequest in) {
        if (in == null) {
            throw new Invalid(null, "request body is required");
        }
        if (in.trace() == null || in.trace().isEmpty()) {
            throw new Invalid("trace", "trace is required (GET /api/v1/whatif/traces lists them)");
        }
        if (traces.entry(in.trace()) == null) {
            throw new Invalid("trace", "no trace named '" + dev.kvpool.api.naming.Text.safe(in.trace())
                    + "' (GET /api/v1/whatif/traces lists them)");
        }
        List<String> names = in.policies() == null || in.policies().isEmpty()
                ? List.of("LRU", "LFU", "TTL", "PREFIX_LRU") : in.policies();
        LinkedHashSet<ReclaimPolicy> pols = new LinkedHashSet<>();
        for (int i = 0; i < names.size(); i++) {
            String p = names.get(i);
            if (p == null) {
                throw new Invalid("policies", "policies[" + i + "] is null");
            }
            try {
                pols.add(ReclaimPolicy.parse(p));
            } catch (IllegalArgumentException e) {
                throw new Invalid("policies", "policies[" + i + "]: " + e.getMessage());
            }
        }
        List<Long> caps = capacities(in);
        double water = in.water() == null ? 0.9 : in.water();
        if (!(water > 0 && water <= 1)) {
            throw new Invalid("water", "water must be in (0, 1], got " + water);
        }
        int step = in.stepPercentage() == null ? 5 : in.stepPercentage();
        if (step < 1 || step > 100) {
            throw new Invalid("stepPercentage", "stepPercentage must be 1 to 100, got " + step);
        }
        int decay = in.lfuDecaySeconds() == null ? PolicySweep.LFU_DECAY : in.lfuDecaySeconds();
        if (decay < 0 || decay > 86_400) {
            throw new Invalid("lfuDecaySeconds", "lfuDecaySeconds must be 0 to 86400, got " + decay);
        }
        Target target = in.target();
        if (target != null) {
            if (target.policy() == null || target.hitRate() == null) {
                throw new Invalid("target", "target needs policy and hitRate");
            }
            ReclaimPolicy tp;
            try {
                tp = ReclaimPolicy.parse(target.policy());
            } catch (IllegalArgumentException e) {
                throw new Invalid("target.policy", e.getMessage());
            }
            if (!pols.contains(tp)) {
                throw new Invalid("target.policy", "target.policy " + tp + " is not one of the policies swept " + pols);
            }
            if (!(target.hitRate() > 0 && target.hitRate() <= 1)) {
                throw new Invalid("target.hitRate", "target.hitRate must be in (0, 1], got " + target.hitRate());
            }
            target = new Target(tp.name(), target.hitRate());
        }
        int runs = 1 + pols.size() * caps.size() + (target == null ? 0 : bisectSteps);
        if (runs > maxRuns) {
            throw new Invalid(in.capacities() != null ? "capacities" : "capacityRange", runs + " replays asked ("
                    + pols.size() + " policies × " + caps.size() + " capacities + the ceiling"
                    + (target == null ? "" : " + " + bisectSteps + " to bisect the target") + "); at most " + maxRuns
                    + " per job (kvpool.meta.whatif.max-runs)");
        }
        RequestView rv = new RequestView(in.trace(), pols.stream().map(Enum::name).toList(), caps, water, step, decay,
                target);
        Job j;
        synchronized (jobs) {
            if (jobs.size() >= kept) {
                String oldest = jobs.values().stream().filter(x -> x.state.finished()).map(x -> x.id).findFirst()
                        .orElse(null);
                if (oldest == null) {
                    throw new Busy(jobs.size() + " what-if jobs are queued or running (at most " + kept
                            + " are kept, kvpool.meta.whatif.jobs-kept); cancel one or retry when one ends");
                }
                jobs.remove(oldest);
            }
            j = new Job(newId(), rv, List.copyOf(pols));
            j.runsTotal = runs;
            jobs.put(j.id, j);
        }
        Job job = j;
        j.future = jobPool.submit(() -> run(job));
        return j.view();
    }

    private static List<Long> capacities(RunRequest in) {
        List<Long> caps = new ArrayList<>();
        if (in.capacities() != null && in.capacityRange() != null) {
            throw new Invalid("capacities", "give capacities or capacityRange, not both");
        }
        if (in.capacities() != null) {
            if (in.capacities().isEmpty()) {
                throw new Invalid("capacities", "capacities must not be empty");
            }
            if (in.capacities().size() > MAX_CAPACITY_POINTS) {
                throw new Invalid("capacities", "at most " + MAX_CAPACITY_POINTS + " capacities, got "
                        + in.capacities().size());
            }
            for (int i = 0; i < in.capacities().size(); i++) {
                Long c = in.capacities().get(i);
                if (c == null || c <= 0 || c > MAX_CAPACITY_TOKENS) {
                    throw new Invalid("capacities", "capacities[" + i + "] must be a number of tokens from 1 to "
                            + MAX_CAPACITY_TOKENS + ", got " + c);
                }
                caps.add(c);
            }
        } else if (in.capacityRange() != null) {
            CapacityRange r = in.capacityRange();
            if (r.min() == null || r.max() == null || r.points() == null) {
                throw new Invalid("capacityRange", "capacityRange needs min, max and points");
            }
            if (!(r.min() >= 1 && r.max() >= r.min() && r.max() <= MAX_CAPACITY_TOKENS)) {
                throw new Invalid("capacityRange", "capacityRange needs 1 ≤ min ≤ max ≤ " + MAX_CAPACITY_TOKENS
                        + " tokens, got min " + r.min() + ", max " + r.max());
            }
            if (r.points() < 1 || r.points() > MAX_CAPACITY_POINTS) {
                throw new Invalid("capacityRange", "capacityRange.points must be 1 to " + MAX_CAPACITY_POINTS
                        + ", got " + r.points());
            }
            caps.addAll(logSpaced(r.min(), r.max(), r.points()));
        } else {
            throw new Invalid("capacities", "capacities (tokens) or capacityRange is required");
        }
        return caps.stream().distinct().sorted().toList();
    }

    /** {@code points} capacities from min to max, evenly spaced on a log scale, rounded to whole tokens. */
    static List<Long> logSpaced(double min, double max, int points) {
        List<Long> out = new ArrayList<>();
        if (points == 1 || min == max) {
            out.add(Math.round(min));
            return out;
        }
        double l0 = Math.log(min), l1 = Math.log(max);
        for (int i = 0; i < points; i++) {
            out.add(Math.round(Math.exp(l0 + (l1 - l0) * i / (points - 1))));
        }
        return out;
    }

    private static String newId() {
        return "w" + Long.toString(System.currentTimeMillis(), 36) + "-"
                + Long.toString(ThreadLocalRandom.current().nextLong(36L * 36 * 36 * 36 * 36), 36);
    }

    public List<View> list() {
        List<Job> js;
        synchronized (jobs) {
            js = new ArrayList<>(jobs.values());
        }
        List<View> out = new ArrayList<>();
        for (int i = js.size() - 1; i >= 0; i--) {
            out.add(js.get(i).view());
        }
        return out;
    }

    public View get(String id) {
        Job j;
        synchronized (jobs) {
            j = jobs.get(id);
        }
        return j == null ? null : j.view();
    }

    /**
     * Cancels a queued or running job (its replays stop at their next request) and answers its view; forgets a
     * finished one and answers null. Throws {@link java.util.NoSuchElementException} for an unknown id.
     */
    public View cancelOrForget(String id) {
        Job j;
        synchronized (jobs) {
            j = jobs.get(id);
            if (j == null) {
                throw new java.util.NoSuchElementException(id);
            }
            if (j.state.finished()) {
                jobs.remove(id);
                return null;
            }
            j.cancel = true;
            j.state = State.cancelled;
            j.finishedAt = Instant.now();
            j.finishedNs = System.nanoTime();
        }
        return j.view();
    }

    // ---- running ------------------------------------------------------------------------------------------------

    private void run(Job j) {
        synchronized (jobs) {
            if (j.cancel) {
                return;
            }
            j.state = State.running;
            j.startedAt = Instant.now();
            j.startedNs = System.nanoTime();
        }
        try {
            j.trace = traces.trace(j.req.trace());
            j.accessesTotal = (long) j.runsTotal * j.trace.accesses();
            sweep(j);
            if (j.req.target() != null) {
                bisect(j);
            }
            finish(j, State.done, null);
        } catch (CancellationException e) {
            finish(j, State.cancelled, null);
        } catch (RuntimeException | Error e) {
            if (j.cancel) {
                finish(j, State.cancelled, null);
            } else {
                LOG.warnf(e, "what-if job %s failed", j.id);
                finish(j, State.failed, e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
            }
        }
    }

    private void finish(Job j, State s, String error) {
        synchronized (jobs) {
            if (!j.state.finished()) {
                j.state = s;
                j.error = error;
                j.finishedAt = Instant.now();
                j.finishedNs = System.nanoTime();
            }
            if (s == State.done) {
                j.runsTotal = j.runsDone; // a bisection that needed fewer steps
                j.accessesTotal = j.accessesDone();
            }
        }
        if (s == State.done) {
            View v = j.view();
            LOG.infof("what-if job %s: %d replays of %s in %.1f s (%.0f block accesses/s)", j.id, j.runsDone,
                    j.req.trace(), v.elapsedSeconds(), v.accessesPerSecond() == null ? 0 : v.accessesPerSecond());
        }
    }

    /** The ceiling and every policy × capacity, on the replay pool; the slowest first (LFU, small capacities). */
    private void sweep(Job j) {
        record Run(ReclaimPolicy p, long tokens) {
        }
        List<Run> runs = new ArrayList<>();
        for (long c : j.req.capacities()) {
            for (ReclaimPolicy p : j.policies) {
                runs.add(new Run(p, c));
            }
        }
        // longest first keeps both threads busy to the end: LFU scans its whole index per round, small capacities
        // evict the most
        runs.sort(Comparator.comparingInt((Run r) -> r.p == ReclaimPolicy.LFU ? 0 : 1).thenComparingLong(Run::tokens));
        List<Future<PolicySweep.Result>> fs = new ArrayList<>();
        fs.add(replays.submit(() -> j.replay(ReclaimPolicy.LRU, -1, PolicySweep.unboundedBlocks(j.trace, j.req.water()))));
        int bt = j.trace.blockTokens();
        for (Run r : runs) {
            fs.add(replays.submit(() -> j.replay(r.p, r.tokens, Math.max(1, r.tokens / bt))));
        }
        try {
            for (int i = 0; i < fs.size(); i++) {
                PolicySweep.Result r = get(j, fs.get(i));
                if (i == 0) {
                    j.ceiling = r.hitRate();
                } else {
                    j.results.add(r);
                }
            }
        } finally {
            if (j.cancel) {
                fs.forEach(f -> f.cancel(false));
            }
        }
    }

    private static PolicySweep.Result get(Job j, Future<PolicySweep.Result> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            j.cancel = j.cancel || !(e.getCause() instanceof CancellationException); // stop the others on a failure
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * The smallest capacity reaching the target: between the largest swept capacity below it (or 1 block) and the
     * smallest reaching it, on a log scale, with up to {@code bisectSteps} more replays.
     */
    private void bisect(Job j) {
        Target t = j.req.target();
        int bt = j.trace.blockTokens();
        List<PolicySweep.Result> mine;
        synchronized (j.results) {
            mine = j.results.stream().filter(r -> r.policy().equals(t.policy()))
                    .sorted(Comparator.comparingLong(PolicySweep.Result::capacityBlocks)).toList();
        }
        PolicySweep.Result hi = mine.stream().filter(r -> r.hitRate() >= t.hitRate()).findFirst().orElse(null);
        List<Probe> probes = new ArrayList<>();
        if (hi == null) {
            String note = j.ceiling != null && j.ceiling < t.hitRate()
                    ? String.format(Locale.ROOT, "the trace's ceiling (unbounded capacity) is %.4f, below the target",
                    j.ceiling)
                    : "no swept capacity reaches the target: sweep larger capacities";
            j.smallest = new Smallest(t.policy(), t.hitRate(), false, null, null, null, probes, note);
            return;
        }
        long loBlocks = mine.stream().filter(r -> r.capacityBlocks() < hi.capacityBlocks() && r.hitRate() < t.hitRate())
                .mapToLong(PolicySweep.Result::capacityBlocks).max().orElse(0);
        long hiBlocks = hi.capacityBlocks();
        double hiRate = hi.hitRate();
        ReclaimPolicy p = ReclaimPolicy.parse(t.policy());
        for (int s = 0; s < bisectSteps && hiBlocks - loBlocks > 1
                && (loBlocks == 0 || (double) hiBlocks / loBlocks > 1.005); s++) {
            long mid = loBlocks == 0 ? Math.max(1, hiBlocks / 2)
                    : Math.round(Math.sqrt((double) loBlocks * hiBlocks));
            mid = Math.min(hiBlocks - 1, Math.max(loBlocks + 1, mid));
            PolicySweep.Result r = j.replay(p, mid * bt, mid);
            probes.add(new Probe(mid * bt, mid, r.hitRate()));
            if (r.hitRate() >= t.hitRate()) {
                hiBlocks = mid;
                hiRate = r.hitRate();
            } else {
                loBlocks = mid;
            }
        }
        long hiTokens = hiBlocks == hi.capacityBlocks() ? hi.tokens() : hiBlocks * bt;
        j.smallest = new Smallest(t.policy(), t.hitRate(), true, hiTokens, hiBlocks, hiRate, probes,
                String.format(Locale.ROOT, "between %d blocks (below the target) and %d blocks (reaches it)", loBlocks,
                        hiBlocks));
    }

    @Override
    public void close() {
        synchronized (jobs) {
            jobs.values().forEach(x -> x.cancel = true);
        }
        jobPool.shutdownNow();
        replays.shutdownNow();
    }
}
