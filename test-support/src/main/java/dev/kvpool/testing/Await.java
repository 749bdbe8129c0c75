package dev.kvpool.testing;

import java.time.Duration;

/**
 * Polls for another thread's (or process') effect until it shows or a bound passes: the test waits only as long as
 * the effect takes. Not Awaitility: it does not resolve offline here, and this is all the tests need of it.
 */
public final class Await {
    /** Between two looks: short against the bounds the tests use, long enough not to busy the CPU. */
    private static final long POLL_MS = 20;

    /** A condition that may throw (an HTTP call, a Redis read): a throw fails the wait at once. */
    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    private Await() {
    }

    /** Returns once {@code cond} holds; fails with {@code what} when it does not within {@code bound}. */
    public static void until(String what, Duration bound, Condition cond) {
        if (!within(bound, cond)) {
            throw new AssertionError("not within " + bound + ": " + what);
        }
    }

    /** Whether {@code cond} came to hold within {@code bound}; for a test that asserts on what it then sees. */
    public static boolean within(Duration bound, Condition cond) {
        long end = System.nanoTime() + bound.toNanos();
        try {
            while (!cond.holds()) {
                if (System.nanoTime() - end > 0) {
                    return false;
                }
                Thread.sleep(POLL_MS);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
