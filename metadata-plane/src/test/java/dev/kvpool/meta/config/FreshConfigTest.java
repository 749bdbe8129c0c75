package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.config.FreshConfig.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Coalescing, the negative cache, the global interval and the bounded wait of FreshConfig, with a clock set by hand. */
class FreshConfigTest {
    private final AtomicLong now = new AtomicLong(1_000_000);
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final AtomicInteger calls = new AtomicInteger();

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    private FreshConfig fresh(FreshConfig.Fetcher f, long waitMs, long minIntervalMs, long ttlMs, int max) {
        return new FreshConfig(() -> {
            calls.incrementAndGet();
            return f.fetch();
        }, new FreshConfig.Settings(Duration.ofMillis(waitMs), Duration.ofMillis(minIntervalMs),
                Duration.ofMillis(ttlMs), max), now::get, pool);
    }

    private static Outcome get(CompletableFuture<Outcome> f) throws Exception {
        return f.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aKnownNameFetchesNothing() throws Exception {
        FreshConfig f = fresh(() -> true, 2000, 200, 1000, 100);
        assertEquals(Outcome.KNOWN, get(f.ensure("group:g", () -> true)));
        assertEquals(0, calls.get());
        assertEquals(0, f.fetches.get());
    }

    @Test
    void aFetchThatBringsTheNameMakesItKnown() throws Exception {
        AtomicBoolean there = new AtomicBoolean();
        FreshConfig f = fresh(() -> {
            there.set(true);
            return true;
        }, 2000, 200, 1000, 100);
        assertEquals(Outcome.KNOWN, get(f.ensure("group:g", there::get)));
        assertEquals(1, calls.get());
    }

    @Test
    void concurrentCallersShareOneFollowUpFetch() throws Exception {
        CountDownLatch first = new CountDownLatch(1), release = new CountDownLatch(1);
        AtomicBoolean there = new AtomicBoolean();
        FreshConfig f = fresh(() -> {
            first.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            there.set(true);
            return true;
        }, 5000, 0, 1000, 100);
        CompletableFuture<Outcome> a = f.ensure("instance:i", there::get);
        assertTrue(first.await(5, TimeUnit.SECONDS));
        // these arrive while the first fetch runs: it may have read the control plane too early for them
        List<CompletableFuture<Outcome>> late = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            late.add(f.ensure("instance:i" + (i % 5), there::get));
        }
        release.countDown();
        assertEquals(Outcome.KNOWN, get(a));
        for (var l : late) {
            assertEquals(Outcome.KNOWN, get(l));
        }
        assertEquals(2, calls.get(), "the first fetch and one shared follow-up");
        assertEquals(2, f.fetches.get());
        assertEquals(49, f.coalesced.get(), "all but the caller that asked for the follow-up");
    }

    @Test
    void aBogusNameHammeredCostsOneFetchPerTtl() throws Exception {
        FreshConfig f = fresh(() -> true, 2000, 0, 1000, 100);
        for (int i = 0; i < 1000; i++) {
            assertEquals(Outcome.ABSENT, get(f.ensure("instance:bogus", () -> false)));
        }
        assertEquals(1, calls.get());
        assertEquals(999, f.negativeHits.get());
        now.addAndGet(999);
        assertEquals(Outcome.ABSENT, get(f.ensure("instance:bogus", () -> false)));
        assertEquals(1, calls.get(), "still within the TTL");
        now.addAndGet(2);
        assertEquals(Outcome.ABSENT, get(f.ensure("instance:bogus", () -> false)));
        assertEquals(2, calls.get(), "the TTL has passed: looked for again");
    }

    @Test
    void manyBogusNamesAreBoundedByTheGlobalInterval() throws Exception {
        FreshConfig f = fresh(() -> true, 5000, 300, 60_000, 10_000);
        List<CompletableFuture<Outcome>> all = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            all.add(f.ensure("instance:bogus-" + i, () -> false)); // the clock stands still: all within one interval
        }
        for (var a : all) {
            assertEquals(Outcome.ABSENT, get(a));
        }
        assertTrue(calls.get() <= 2, "distinct bogus names within one interval: at most 2 fetches, got " + calls.get());
    }

    @Test
    void aSilentControlPlaneIsWaitedForAtMostTheLimit() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        FreshConfig f = fresh(() -> {
            try {
                never.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return true;
        }, 150, 0, 1000, 100);
        long t0 = System.nanoTime();
        assertEquals(Outcome.TIMEOUT, get(f.ensure("group:g", () -> false)));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 140 && ms < 2000, "waited " + ms + " ms");
        for (int i = 0; i < 20; i++) {
            assertEquals(Outcome.TIMEOUT, get(f.ensure("group:g", () -> false)));
        }
        assertEquals(1, calls.get(), "one fetch hangs; nobody starts another meanwhile");
        never.countDown();
    }

    @Test
    void anUnreachableControlPlaneIsNotCachedAsAbsent() throws Exception {
        AtomicBoolean up = new AtomicBoolean(false);
        FreshConfig f = fresh(up::get, 2000, 0, 60_000, 100);
        assertEquals(Outcome.UNREACHABLE, get(f.ensure("group:g", () -> false)));
        assertEquals(0, f.negativeSize());
        up.set(true);
        assertEquals(Outcome.ABSENT, get(f.ensure("group:g", () -> false)));
        assertEquals(2, calls.get());
        assertEquals(1, f.negativeSize());
    }

    @Test
    void theNegativeCacheIsBounded() throws Exception {
        FreshConfig f = fresh(() -> true, 2000, 0, 60_000, 5);
        for (int i = 0; i < 20; i++) {
            assertEquals(Outcome.ABSENT, get(f.ensure("instance:x" + i, () -> false)));
        }
        assertEquals(5, f.negativeSize());
    }
}
