package dev.kvpool.meta.shared;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Blocking EVAL of small scripts for the shared usage ledger and slot allocators (called from worker threads). */
final class RedisScripts {
    private final Redis redis;
    private final long timeoutMs;

    RedisScripts(Redis redis, Duration timeout) {
        this.redis = redis;
        this.timeoutMs = timeout.toMillis();
    }

    Response eval(String script, List<String> keys, List<Object> args, String what) {
        Request r = Request.cmd(Command.EVAL).arg(script).arg(keys.size());
        keys.forEach(r::arg);
        args.forEach(a -> r.arg(String.valueOf(a)));
        return send(r, what);
    }

    Response send(Request r, String what) {
        try {
            return redis.send(r).toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(what + ": interrupted", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(what + " failed in Redis: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(what + ": no answer from Redis within " + timeoutMs + " ms", e);
        }
    }
}
