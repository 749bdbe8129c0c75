package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.IndexStoreContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract against a real Redis. Every test gets a fresh key prefix (an empty store); restart() closes
 * the store with its connections and opens a new one over the same keys, as a replica restart would.
 */
class RedisStoreContractTest extends IndexStoreContractTest {
    private static TestRedis redis;
    private String prefix;

    @BeforeAll
    static void connect() {
        redis = new TestRedis();
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    @Override
    protected IndexStore newStore() {
        prefix = TestRedis.uniquePrefix("contract");
        return RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
    }

    @Override
    protected IndexStore restart(IndexStore s) {
        s.close();
        return RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
    }

    /** Fewer contended keys than in-process stores: every batch is a network round trip. */
    @Override
    protected int contendedKeys() {
        return 2048;
    }

    @AfterEach
    @Override
    protected void closeStore() {
        try {
            super.closeStore();
        } finally {
            redis.deleteAll(prefix);
        }
    }
}
