package dev.kvpool.meta.support;

import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import java.util.concurrent.TimeUnit;

/** A raw Vert.x Redis client of the local Redis (127.0.0.1:6379), for tests of the shared allocators. */
public final class LocalRedis implements AutoCloseable {
    private final Vertx vertx = Vertx.vertx();
    public final Redis redis = Redis.createClient(vertx, "redis://127.0.0.1:6379/0");

    @Override
    public void close() throws Exception {
        redis.close();
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
}
