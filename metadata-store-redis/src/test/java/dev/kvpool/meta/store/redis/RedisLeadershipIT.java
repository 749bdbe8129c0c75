package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** How replicas over a real Redis (127.0.0.1:6379) decide who rebuilds usage and slots on a cold start. */
class RedisLeadershipIT {
    private static final Duration TTL = Duration.ofSeconds(1);
    private static Vertx vertx;
    private static Redis redis;
    private final String prefix = "kvp-lead-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    private final List<RedisLeadership> opened = new ArrayList<>();

    @BeforeAll
    static void connect() {
        vertx = Vertx.vertx();
        redis = Redis.createClient(vertx, "redis://127.0.0.1:6379/0");
    }

    @AfterAll
    static void disconnect() {
        redis.close();
        vertx.close();
    }

    @AfterEach
    void cleanUp() throws Exception {
        opened.forEach(RedisLeadership::close);
        var keys = redis.send(Request.cmd(Command.KEYS).arg(prefix + "*")).toCompletionStage().toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        for (var k : keys) {
            redis.send(Request.cmd(Command.DEL).arg(k.toString())).toCompletionStage().toCompletableFuture()
                    .get(5, TimeUnit.SECONDS);
        }
    }

    private RedisLeadership replica(Redis client, String id) {
        RedisLeadership l = new RedisLeadership(client, prefix, id, TTL, Duration.ofSeconds(5));
        opened.add(l);
        return l;
    }

    private String get(String key) throws Exception {
        var r = redis.send(Request.cmd(Command.GET).arg(key)).toCompletionStage().toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        return r == null ? null : r.toString();
    }

    /**
     * A start stopped mid-rebuild closes its claim from an interrupted thread: the claim must still go at once
     * (the next replica would otherwise wait for it to lapse), and the interrupt must survive for the caller.
     */
    @Test
    void aRebuildStoppedByAnInterruptReleasesItsClaim() throws Exception {
        RedisLeadership a = replica(redis, "a");
        var startup = a.begin();
        assertTrue(startup.rebuild());
        assertEquals("a", get(prefix + "rebuilding"));
        Thread.currentThread().interrupt();
        try {
            startup.close();
            assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is kept for the caller");
        } finally {
            Thread.interrupted();
        }
        assertEquals(null, get(prefix + "rebuilding"));
    }

    @Test
    void replicasStartingTogetherOnAColdClusterRebuildOnceAndTheOthersJoinAfterIt() throws Exception {
        int n = 3;
        List<RedisLeadership> ls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ls.add(replica(redis, "r" + i));
        }
        CyclicBarrier together = new CyclicBarrier(n);
        List<CompletableFuture<RedisLeadership.Startup>> starts = new ArrayList<>();
        for (RedisLeadership l : ls) {
            starts.add(CompletableFuture.supplyAsync(() -> {
                try {
                    together.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return l.begin();
            }));
        }
        // the rebuilder is known at once; the others wait for it
        CompletableFuture.anyOf(starts.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        Thread.sleep(2 * TTL.toMillis() + 500); // past the settling wait of those that saw no member
        int rebuilder = -1, done = 0;
        for (int i = 0; i < n; i++) {
            if (starts.get(i).isDone()) {
                done++;
                assertTrue(starts.get(i).get().rebuild(), "a replica that did not rebuild must not serve during a rebuild");
                rebuilder = i;
            }
        }
        assertEquals(1, done, "exactly one replica rebuilds; the others wait for it");

        ls.get(rebuilder).start(); // listed as a member, then the claim goes
        starts.get(rebuilder).get().close();
        for (int i = 0; i < n; i++) {
            if (i != rebuilder) {
                assertFalse(starts.get(i).get(10, TimeUnit.SECONDS).rebuild(), "replica " + i + " joins");
            }
        }
    }

    @Test
    void aReplicaThatDiesWhileRebuildingIsReplacedOnceItsClaimLapses() throws Exception {
        Vertx v2 = Vertx.vertx();
        Redis own = Redis.createClient(v2, "redis://127.0.0.1:6379/0");
        RedisLeadership first = replica(own, "dying");
        assertTrue(first.begin().rebuild());
        CompletableFuture<RedisLeadership.Startup> second = CompletableFuture.supplyAsync(() -> replica(redis, "next").begin());
        Thread.sleep(2_000);
        assertFalse(second.isDone(), "waits while the first one rebuilds");
        own.close(); // the first one dies: its claim is no longer renewed
        v2.close();
        RedisLeadership.Startup s = second.get(30, TimeUnit.SECONDS);
        assertTrue(s.rebuild(), "the rebuild is taken over");
        s.close();
    }

    @Test
    void aReplicaThatStopsAnsweringIsCountedLostAndOneThatLeavesIsNot() throws Exception {
        RedisLeadership a = replica(redis, "a").start();
        RedisLeadership leaving = replica(redis, "leaving").start();
        Vertx v2 = Vertx.vertx();
        Redis own = Redis.createClient(v2, "redis://127.0.0.1:6379/0");
        replica(own, "dying").start();
        Thread.sleep(500);
        leaving.close(); // a clean stop takes itself off the list
        own.close(); // the other one stops answering: its entry lapses
        v2.close();
        long until = System.currentTimeMillis() + 10_000;
        while (a.replicasLost() < 1 && System.currentTimeMillis() < until) {
            Thread.sleep(100);
        }
        Thread.sleep(3 * TTL.toMillis()); // long enough for a wrong second count to show
        assertEquals(1, a.replicasLost(), "only the replica that did not leave is lost");
        assertEquals(0, a.lostSwept());
        a.lostSwept(1);
        a.lostSwept(0); // an older sweep finishing later does not move it back
        Thread.sleep(2 * TTL.toMillis());
        assertEquals(1, a.lostSwept());
        a.reportUnfinished(); // a clean stop that left purges behind counts too
        Thread.sleep(2 * TTL.toMillis());
        assertEquals(2, a.replicasLost());
    }
}
