package dev.kvpool.meta.config;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Fresh configuration before a KVCM call names something this plane has not heard of (issue 34 part 3): the call
 * asks here, and waits — at most {@code wait} — for one fetch from the control plane, then decides with what it has.
 *
 * <ul>
 * <li><b>Coalesced:</b> one fetch at a time. A caller arriving while a fetch runs cannot rely on it (it may have
 * read the control plane before the change the caller saw acknowledged), so every such caller waits for one shared
 * follow-up fetch: a burst of N callers costs two fetches, not N.</li>
 * <li><b>Rate-limited:</b> fetches start at least {@code minInterval} apart, and a name a fetch did not find is
 * answered from a negative cache (per name, {@code negativeTtl}, at most {@code negativeMax} names) without
 * fetching: a client hammering a bogus id cannot make this plane a load generator against the control plane.</li>
 * <li><b>Bounded:</b> the caller's future completes with {@link Outcome#TIMEOUT} once {@code wait} has passed.</li>
 * </ul>
 * The fetch is a full resync ({@link ControlPlaneSync#resync}), not a targeted lookup of the one name: a snapshot
 * carries one consistent position, so its rules (the applied position never moves back except for a restored
 * database; an instance registered here after the snapshot was asked for is not removed; the model is replaced as
 * a whole, so a lookup answer older than a later deletion cannot resurrect the instance) apply unchanged. A
 * targeted lookup would be cheaper for very large deployments, but would need per-object positions to be merged
 * safely; with the rate limits above a snapshot costs at most one GET per {@code minInterval}.
 * Pure: time comes from {@code clock} (ms), work runs on {@code executor}; tests inject both.
 */
public final class FreshConfig implements MeterBinder {
    public enum Outcome {
        /** Known now (after a fetch, or it was already). */
        KNOWN,
        /** The control plane answered and does not have it (or said so a moment ago: negative cache). */
        ABSENT,
        /** The fetch failed: the control plane could not be reached. */
        UNREACHABLE,
        /** No answer within the wait. */
        TIMEOUT
    }

    public record Settings(Duration maxWait, Duration minInterval, Duration negativeTtl, int negativeMax) {
    }

    /** Reads the control plane's configuration and applies it; false when it could not be reached. */
    public interface Fetcher {
        boolean fetch();
    }

    private final Fetcher fetcher;
    private final Settings settings;
    private final LongSupplier clock;
    private final Executor executor;

    public final AtomicLong fetches = new AtomicLong(), coalesced = new AtomicLong(), negativeHits = new AtomicLong();

    // guarded by this
    private CompletableFuture<Boolean> inFlight; // the fetch running now
    private CompletableFuture<Boolean> next;     // the one shared follow-up, started when allowed
    private long lastStartMs = Long.MIN_VALUE / 2;
    private final LinkedHashMap<String, Long> negative = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> e) {
            return size() > settings.negativeMax();
        }
    };

    public FreshConfig(Fetcher fetcher, Settings settings, LongSupplier clock, Executor executor) {
        this.fetcher = fetcher;
        this.settings = settings;
        this.clock = clock;
        this.executor = executor;
    }

    public Settings settings() {
        return settings;
    }

    /** Where fetches run; also for work after an outcome that may block (a shared store's lookup). */
    public Executor executor() {
        return executor;
    }

    /**
     * Makes sure {@code name} (e.g. "group:g", "instance:i") has been looked for in the control plane after this
     * call arrived. {@code known} says whether the plane knows it now; it is asked before and after the fetch.
     */
    public CompletableFuture<Outcome> ensure(String name, BooleanSupplier known) {
        if (known.getAsBoolean()) {
            return CompletableFuture.completedFuture(Outcome.KNOWN);
        }
        CompletableFuture<Boolean> f;
        synchronized (this) {
            long now = clock.getAsLong();
            Long until = negative.get(name);
            if (until != null) {
                if (now < until) {
                    negativeHits.incrementAndGet();
                    return CompletableFuture.completedFuture(Outcome.ABSENT);
                }
                negative.remove(name);
            }
            f = nextFetch(now);
        }
        return f.thenApply(reached -> {
            if (known.getAsBoolean()) {
                return Outcome.KNOWN;
            }
            if (!reached) {
                return Outcome.UNREACHABLE;
            }
            synchronized (this) {
                negative.put(name, clock.getAsLong() + settings.negativeTtl().toMillis());
            }
            return Outcome.ABSENT;
        }).completeOnTimeout(Outcome.TIMEOUT, settings.maxWait().toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * A fetch that starts after now: a new one when none runs and the interval allows, else the shared follow-up
     * (a fetch already running may have read the control plane before the change this caller relies on).
     */
    private CompletableFuture<Boolean> nextFetch(long now) {
        if (next != null) {
            coalesced.incrementAndGet();
            return next;
        }
        long earliest = lastStartMs + settings.minInterval().toMillis();
        if (inFlight == null && now >= earliest) {
            return start(new CompletableFuture<>(), now);
        }
        next = new CompletableFuture<>();
        if (inFlight == null) { // idle, but too soon after the last one: start when the interval has passed
            CompletableFuture<Boolean> n = next;
            CompletableFuture.delayedExecutor(earliest - now, TimeUnit.MILLISECONDS, executor).execute(() -> {
                synchronized (this) {
                    if (next == n && inFlight == null) {
                        next = null;
                        start(n, clock.getAsLong());
                    }
                }
            });
        }
        return next;
    }

    /** Starts {@code f}'s fetch (under the lock). */
    private CompletableFuture<Boolean> start(CompletableFuture<Boolean> f, long now) {
        inFlight = f;
        lastStartMs = now;
        fetches.incrementAndGet();
        executor.execute(() -> {
            boolean ok;
            try {
                ok = fetcher.fetch();
            } catch (RuntimeException e) {
                ok = false;
            }
            synchronized (this) {
                inFlight = null;
                CompletableFuture<Boolean> n = next;
                if (n != null) {
                    long t = clock.getAsLong(), earliest = lastStartMs + settings.minInterval().toMillis();
                    if (t >= earliest) {
                        next = null;
                        start(n, t);
                    } else {
                        CompletableFuture.delayedExecutor(earliest - t, TimeUnit.MILLISECONDS, executor).execute(() -> {
                            synchronized (this) {
                                if (next == n && inFlight == null) {
                                    next = null;
                                    start(n, clock.getAsLong());
                                }
                            }
                        });
                    }
                }
            }
            f.complete(ok);
        });
        return f;
    }

    /** Names in the negative cache now (for tests and the metrics view). */
    public synchronized int negativeSize() {
        return negative.size();
    }

    @Override
    public void bindTo(MeterRegistry meters) {
        FunctionCounter.builder("kvpool.meta.fresh_config.fetches", this, x -> x.fetches.get())
                .description("snapshot fetches because a KVCM call named something unknown").register(meters);
        FunctionCounter.builder("kvpool.meta.fresh_config.coalesced", this, x -> x.coalesced.get())
                .description("callers that waited for a fetch another caller caused").register(meters);
        FunctionCounter.builder("kvpool.meta.fresh_config.negative_hits", this, x -> x.negativeHits.get())
                .description("unknown names answered from the negative cache, no fetch").register(meters);
    }
}
