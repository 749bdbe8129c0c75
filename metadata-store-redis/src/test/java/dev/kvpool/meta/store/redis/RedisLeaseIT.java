package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two contenders on separate clients (two processes): one holder at a time, take-over after the ttl. */
class RedisLeaseIT {
    private static final Duration TTL = Duration.ofMillis(800);
    private Vertx vx1, vx2;
    private Redis r1, r2;
    private String key;
    private RedisLease a, b;

    @BeforeEach
    void open() {
        vx1 = Vertx.vertx();
        vx2 = Vertx.vertx();
        r1 = Redis.createClient(vx1, new RedisOptions().setConnectionString(TestRedis.URI));
        r2 = Redis.createClient(vx2, new RedisOptions().setConnectionString(TestRedis.URI));
        key = TestRedis.uniquePrefix("lease") + ":leader";
        a = new RedisLease(r1, key, "node-a", TTL, Duration.ofMillis(80), Duration.ofSeconds(2));
        b = new RedisLease(r2, key, "node-b", TTL, Duration.ofMillis(80), Duration.ofSeconds(2));
    }

    @AfterEach
    void close() {
        try {
            a.release();
            b.release();
        } finally {
            r1.close();
            r2.close();
            vx1.close();
            vx2.close();
        }
    }

    @Test
    @Timeout(30)
    void theOtherTakesOverOnlyAfterTheHolderStopsRenewingAndNeverBothHold() throws Exception {
        assertNull(a.holder());
        assertTrue(a.acquireOrRenew());
        assertTrue(a.held());
        assertFalse(b.acquireOrRenew());
        assertFalse(b.held());
        assertEquals("node-a", b.holder());

        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean aRenews = new AtomicBoolean(true);
        AtomicLong lastRenewSent = new AtomicLong(System.nanoTime());
        AtomicLong bAcquiredAt = new AtomicLong();
        AtomicReference<String> violation = new AtomicReference<>();
        Thread holder = new Thread(() -> {
            while (!stop.get()) {
                if (aRenews.get()) {
                    long t = System.nanoTime();
                    if (a.acquireOrRenew()) {
                        lastRenewSent.set(t);
                    } else {
                        violation.compareAndSet(null, "node-a lost the lease while renewing in time");
                    }
                }
                sleep(TTL.toMillis() / 4);
            }
        }, "lease-a");
        Thread contender = new Thread(() -> {
            while (!stop.get()) {
                if (b.acquireOrRenew() && bAcquiredAt.get() == 0) {
                    bAcquiredAt.set(System.nanoTime());
                }
                sleep(10);
            }
        }, "lease-b");
        Thread monitor = new Thread(() -> {
            while (!stop.get()) {
                if (a.held() && b.held()) {
                    violation.compareAndSet(null, "both held the lease at once");
                }
                Thread.onSpinWait();
            }
        }, "lease-monitor");
        holder.start();
        contender.start();
        monitor.start();
        Thread.sleep(TTL.toMillis() * 3);
        assertEquals(0, bAcquiredAt.get(), "node-b acquired while node-a kept renewing");
        // simulate kill -9 of node-a: it stops renewing and never releases
        aRenews.set(false);
        long deadline = System.nanoTime() + TTL.toNanos() * 4;
        while (bAcquiredAt.get() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        stop.set(true);
        holder.join();
        contender.join();
        monitor.join();
        assertNull(violation.get(), violation.get());
        assertTrue(bAcquiredAt.get() != 0, "node-b never took over");
        long gapMs = (bAcquiredAt.get() - lastRenewSent.get()) / 1_000_000;
        assertTrue(gapMs >= TTL.toMillis() - 50, "taken over " + gapMs + " ms after the last renew, before the ttl");
        assertTrue(gapMs < TTL.toMillis() * 3, "take-over took " + gapMs + " ms");
        assertFalse(a.held());
        assertEquals("node-b", a.holder());
        // the stale holder can neither renew nor delete the successor's lease
        assertFalse(a.acquireOrRenew());
        assertFalse(a.release());
        assertEquals("node-b", b.holder());
        assertTrue(b.held());
        assertTrue(b.release());
        assertNull(a.holder());
        assertTrue(a.acquireOrRenew(), "free again");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
