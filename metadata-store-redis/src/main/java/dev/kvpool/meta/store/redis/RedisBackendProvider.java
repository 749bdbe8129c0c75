package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.backend.BackendContext;
import dev.kvpool.meta.backend.BackendProvider;
import dev.kvpool.meta.backend.MetaBackend;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;

/**
 * {@code kvpool.meta.store=redis}: everything in Redis/Valkey, shared by any number of replicas. The connection is
 * quarkus-redis-client's (configured by quarkus.redis.*, which application.properties points at
 * kvpool.meta.redis.url), resolved only when this backend is chosen.
 */
@ApplicationScoped
public class RedisBackendProvider implements BackendProvider {
    @Inject
    RedisSettings settings;
    @Inject
    Instance<Redis> redis;
    @Inject
    Instance<Vertx> vertx;

    @Override
    public String kind() {
        return "redis";
    }

    @Override
    public String describe() {
        return "Redis at " + settings.url() + " (prefix " + settings.prefix() + ")";
    }

    @Override
    public MetaBackend open(BackendContext context) {
        return new RedisBackend(settings, redis.get(), vertx.get(), context);
    }
}
