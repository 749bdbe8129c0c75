package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.testing.RedisServer;
import dev.kvpool.testing.TcpSwitch;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The local copy across a Redis failover that lost changes: two servers of the test's own, the second a replica
 * of the first until it is promoted, behind a switch the store and the follower connect through (as clients
 * connect through a virtual IP or a proxy). The promoted server never got the last changes and numbers its own
 * next ones from below; the copy must notice the other server and read it again, not keep the lost changes.
 */
class RedisMirrorFailoverIT {
    private static final String INST = "inst-f";

    @Test
    @Timeout(120)
    void aPromotedReplicaThatLostChangesIsReadAgain() throws Exception {
        Vertx vertx = Vertx.vertx();
        try (RedisServer a = RedisServer.start(); RedisServer b = RedisServer.start();
                TcpSwitch vip = TcpSwitch.to(a.port())) {
            String uri = "redis://127.0.0.1:" + vip.port();
            Redis ra = Redis.createClient(vertx, a.url()), rb = Redis.createClient(vertx, b.url());
            String prefix = "kvptest:failover";
            RedisStore s = RedisStore.connect(uri, TestRedis.options(prefix).withNativeFinishKeys(64));
            try {
                s.startMirror(() -> Redis.createClient(vertx, new RedisOptions().setConnectionString(uri)),
                        Duration.ofMillis(40));
                InstanceIndex ix = s.index(INST);
                String counter = s.instanceBase(INST) + "mq", stream = s.instanceBase(INST) + "m";

                await(() -> s.mirrorInSync(ix), "the copy follows the instance (its counter exists)");
                call(rb, Request.cmd(Command.REPLICAOF).arg("127.0.0.1").arg(a.port()));
                write(ix, keys(0, 16));
                long n1 = number(ra, counter);
                // replication keeps order: once the marker is on b, so is everything written before it
                call(ra, Request.cmd(Command.SET).arg("kvptest:failover:marker").arg(n1));
                await(() -> call(rb, Request.cmd(Command.GET).arg("kvptest:failover:marker")) != null,
                        "the replica has change " + n1);
                assertEquals(n1, number(rb, counter));
                call(rb, Request.cmd(Command.REPLICAOF).arg("NO").arg("ONE"));

                // changes the replica never gets: lost at the failover
                write(ix, keys(100, 16));
                write(ix, keys(200, 16));
                long lastOnA = number(ra, counter);
                assertEquals(n1 + 2, lastOnA);
                await(() -> s.mirror().applied(INST) == lastOnA && s.mirrorInSync(ix), "the copy has every change");
                assertNotNull(RedisMirrorIT.serving(ix, keys(100, 1))[0], "served from the copy before the failover");

                s.mirror().pauseForTest(true);
                long resyncs = s.mirrorResyncs();
                vip.switchTo(b.port()); // the failover: every connection is cut, new ones reach the promoted b
                // b numbers its changes from n1 up to the copy's last one and beyond...
                int next = 300;
                while (number(rb, counter) < lastOnA) {
                    next = writeRetrying(ix, next);
                }
                assertEquals(lastOnA, number(rb, counter), "one change number per write");
                // ...under entry ids the follower cannot see (as when b's clock is behind a's), then one it can:
                // by the numbers alone it is the next in line
                call(rb, Request.cmd(Command.XTRIM).arg(stream).arg("MAXLEN").arg(0));
                next = writeRetrying(ix, next);
                s.mirror().pauseForTest(false);

                await(() -> s.mirrorResyncs() > resyncs, "the copy noticed the other server and read it again");
                long lastOnB = number(rb, counter);
                await(() -> s.mirror().applied(INST) == lastOnB && s.mirrorInSync(ix), "the copy caught up on b");
                long[] all = keys(0, next);
                long[][] truth = RedisMirrorIT.truth(ix, all);
                long[][] got = RedisMirrorIT.serving(ix, all);
                for (int i = 0; i < all.length; i++) {
                    assertTrue(Arrays.equals(truth[i], got[i]), "key #" + i + ": b holds "
                            + Arrays.toString(truth[i]) + ", the copy answered " + Arrays.toString(got[i]));
                }
                assertNull(RedisMirrorIT.serving(ix, keys(100, 1))[0], "a change lost at the failover is not served");
                assertNotNull(RedisMirrorIT.serving(ix, keys(0, 1))[0], "a change b had is served");
                assertTrue(s.mirrorInSync(ix), "answered from the copy");
            } finally {
                s.close();
                ra.close();
                rb.close();
            }
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    private static long[] keys(int from, int n) {
        return RedisMirrorIT.keys(from, n);
    }

    /** One session over absent keys, every block written: one change number. */
    private static void write(InstanceIndex ix, long[] keys) {
        RedisMirrorIT.write(ix, keys, RedisMirrorIT.allOk(keys.length));
    }

    /** A write of 4 fresh keys from {@code next}, again on fresh keys while the store meets cut connections. */
    private static int writeRetrying(InstanceIndex ix, int next) throws InterruptedException {
        for (int attempt = 0; ; attempt++) {
            long[] ks = keys(next, 4);
            next += 4;
            try {
                write(ix, ks);
                return next;
            } catch (RuntimeException e) {
                if (attempt > 50) {
                    throw e;
                }
                Thread.sleep(20);
            }
        }
    }

    private static Response call(Redis r, Request req) {
        try {
            return r.send(req).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(req.command() + " failed", e);
        }
    }

    private static long number(Redis r, String key) {
        Response v = call(r, Request.cmd(Command.GET).arg(key));
        return v == null ? 0 : v.toLong();
    }

    private static void await(BooleanSupplier cond, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting: " + what);
            }
            Thread.sleep(5);
        }
    }
}
