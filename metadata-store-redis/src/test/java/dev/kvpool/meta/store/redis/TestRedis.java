package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The Redis the tests use (a real server; {@code -Dkvpool.test.redis=redis://host:port/db} overrides the default)
 * and a raw client on it. Every test works under its own key prefix and deletes it afterwards: the server may be
 * shared, so nothing here flushes a database.
 */
final class TestRedis implements AutoCloseable {
    static final String URI = System.getProperty("kvpool.test.redis", "redis://127.0.0.1:6379/0");

    final Vertx vertx = Vertx.vertx();
    final Redis redis = Redis.createClient(vertx, new RedisOptions().setConnectionString(URI).setMaxPoolWaiting(1024));

    static String uniquePrefix(String what) {
        return "kvptest:" + what + ":" + UUID.randomUUID().toString().substring(0, 8);
    }

    static RedisStore.Options options(String prefix) {
        return RedisStore.Options.defaults().withPrefix(prefix).withSessionGrace(Duration.ofMinutes(5));
    }

    Response call(Request r) {
        try {
            return redis.send(r).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("test Redis call failed", e);
        }
    }

    /** Keys under the prefix (SCAN MATCH; the prefix has no glob characters). */
    List<String> keys(String prefix) {
        List<String> out = new ArrayList<>();
        String cursor = "0";
        do {
            Response r = call(Request.cmd(Command.SCAN).arg(cursor).arg("MATCH").arg(prefix + ":*").arg("COUNT").arg(1000));
            cursor = r.get(0).toString();
            r.get(1).forEach(k -> out.add(k.toString()));
        } while (!cursor.equals("0"));
        return out;
    }

    void deleteAll(String prefix) {
        for (String k : keys(prefix)) {
            call(Request.cmd(Command.UNLINK).arg(k));
        }
    }

    long usedMemory() {
        String info = call(Request.cmd(Command.INFO).arg("memory")).toString();
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()).trim());
            }
        }
        throw new IllegalStateException("no used_memory in INFO memory");
    }

    @Override
    public void close() {
        redis.close();
        vertx.close();
    }

    /** getAllAsync called on an event loop of {@code loops}, as the HTTP handler calls it: the blocks read. */
    static CompletableFuture<Block[]> getAllOnLoop(Vertx loops, InstanceIndex ix, long[] keys) {
        CompletableFuture<Block[]> answer = new CompletableFuture<>();
        loops.runOnContext(v -> {
            Block[] out = new Block[keys.length];
            ix.getAllAsync(keys, 0, keys.length, out).whenComplete((x, e) -> {
                if (e != null) {
                    answer.completeExceptionally(e);
                } else {
                    answer.complete(out);
                }
            });
        });
        return answer;
    }
}
