package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.testing.RedisServer;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The asynchronous calls (the HTTP read path's, and the slot allocation a write overlaps) give up after the store's
 * timeout when Redis does not answer, as the blocking ones do. A private Redis is paused with {@code CLIENT PAUSE},
 * so nothing else waits on it.
 */
class RedisCallTimeoutIT {
    private static final long TIMEOUT_MS = 300;
    private static final long PAUSE_MS = 4_000;

    @Test
    void asynchronousCallsFailAfterTheTimeoutWhileRedisDoesNotAnswer() throws Exception {
        Vertx loops = Vertx.vertx();
        try (RedisServer server = RedisServer.start();
             RedisStore store = RedisStore.connect(server.url(), new RedisStore.Options("timeout", Duration.ofMillis(TIMEOUT_MS),
                     4096, 1000, Duration.ofHours(1), 10, 0))) {
            InstanceIndex ix = store.index("inst");
            long[] keys = {1, 2, 3};
            // answers while Redis does (this also opens the event loop's own client before the pause)
            Block[] out = TestRedis.getAllOnLoop(loops, ix, keys).get(10, TimeUnit.SECONDS);
            assertNull(out[0]);

            Redis admin = Redis.createClient(loops, new RedisOptions().setConnectionString(server.url()));
            admin.send(Request.cmd(Command.CLIENT).arg("PAUSE").arg(PAUSE_MS).arg("ALL"))
                    .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            long t0 = System.nanoTime();
            var read = TestRedis.getAllOnLoop(loops, ix, keys);
            var script = store.calls().evalAsync(Lua.COMPARE_DEL, List.of("timeout:k"), List.of("v"), "compare-del");

            ExecutionException r = assertThrows(ExecutionException.class, () -> read.get(PAUSE_MS / 2, TimeUnit.MILLISECONDS));
            assertTimedOut(r, "getAll inst");
            ExecutionException s = assertThrows(ExecutionException.class, () -> script.get(PAUSE_MS / 2, TimeUnit.MILLISECONDS));
            assertTimedOut(s, "compare-del");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= TIMEOUT_MS - 50 && ms < PAUSE_MS / 2, "gave up after " + ms + " ms");

            // once Redis answers again, so do the calls
            admin.send(Request.cmd(Command.CLIENT).arg("UNPAUSE")).toCompletionStage().toCompletableFuture()
                    .get(PAUSE_MS * 2, TimeUnit.MILLISECONDS);
            assertNull(TestRedis.getAllOnLoop(loops, ix, keys).get(10, TimeUnit.SECONDS)[2]);
            assertEquals(0L, store.calls().evalAsync(Lua.COMPARE_DEL, List.of("timeout:k"), List.of("v"), "compare-del")
                    .get(10, TimeUnit.SECONDS).toLong());
            admin.close();
        } finally {
            loops.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    private static void assertTimedOut(ExecutionException e, String what) {
        RedisStoreException c = assertInstanceOf(RedisStoreException.class, e.getCause());
        assertTrue(c.getMessage().contains(what) && c.getMessage().contains("no answer within " + TIMEOUT_MS + " ms"),
                c.getMessage());
    }
}
