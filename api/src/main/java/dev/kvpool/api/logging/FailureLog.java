package dev.kvpool.api.logging;

import dev.kvpool.api.time.Monotonic;
import java.time.InstantSource;
import org.jboss.logging.Logger;

/**
 * Logs a background task's failures without flooding the log while a dependency is down: the first failure in
 * full, then one line per interval with how many followed, and one line when the task works again. A store
 * outage makes every round of every task fail the same way; a stack trace per round helps nobody. Shared by the
 * services (metadata plane: store outages; data agent: the metadata plane out of reach).
 */
public final class FailureLog {
    private final Logger log;
    private final String task;
    private final long intervalNanos;
    private final java.util.function.Predicate<Throwable> expected;
    /** Where intervals are read: {@link Monotonic#SOURCE} in the services, a clock the test moves in tests. */
    private final InstantSource clock;
    private long failingSince, lastLogged, failures, unlogged;
    private String lastError;
    /** Read without the lock: {@link #ok()} is cheap enough for a request path while nothing fails. */
    private volatile boolean failing;

    public FailureLog(Logger log, String task, java.time.Duration interval) {
        this(log, task, interval, e -> false);
    }

    /**
     * @param expected failures whose message says it all (a dependency out of reach): logged without a stack trace
     */
    public FailureLog(Logger log, String task, java.time.Duration interval,
                      java.util.function.Predicate<Throwable> expected) {
        this(log, task, interval, expected, Monotonic.SOURCE);
    }

    /** @param clock what the intervals and streak lengths are measured on (tests: a clock they move) */
    public FailureLog(Logger log, String task, java.time.Duration interval,
                      java.util.function.Predicate<Throwable> expected, InstantSource clock) {
        this.log = log;
        this.task = task;
        this.intervalNanos = interval.toNanos();
        this.expected = expected;
        this.clock = clock;
    }

    /** Records a failure, logged when it starts a streak or a report interval has passed. */
    public synchronized void failed(Throwable e) {
        long now = Monotonic.nanos(clock);
        failures++;
        failing = true;
        lastError = describe(e);
        if (failures == 1) {
            failingSince = now;
            lastLogged = now;
            // an expected exception already names the call and the cause; anything else gets its trace
            if (expected.test(e)) {
                log.errorf("%s: failing: %s", task, describe(e));
            } else {
                log.errorf(e, "%s: failing", task);
            }
            return;
        }
        unlogged++;
        if (now - lastLogged < intervalNanos) {
            return;
        }
        log.errorf("%s: still failing after %d s (%d more failures since the last report): %s", task,
                (now - failingSince) / 1_000_000_000L, unlogged, describe(e));
        lastLogged = now;
        unlogged = 0;
    }

    /** Records a success: ends a failing streak with a line saying so. */
    public void ok() {
        if (failing) {
            recovered();
        }
    }

    private synchronized void recovered() {
        if (failures > 0) {
            failing = false;
            log.infof("%s: working again after %d s and %d failures", task,
                    (Monotonic.nanos(clock) - failingSince) / 1_000_000_000L, failures);
            failures = 0;
            unlogged = 0;
        }
    }

    /** The last failure's message while the task has failed for at least {@code atLeast}; else null. */
    public synchronized String failingFor(java.time.Duration atLeast) {
        return failures > 0 && Monotonic.nanos(clock) - failingSince >= atLeast.toNanos() ? lastError : null;
    }


    private static String describe(Throwable e) {
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getName() : m;
    }
}
