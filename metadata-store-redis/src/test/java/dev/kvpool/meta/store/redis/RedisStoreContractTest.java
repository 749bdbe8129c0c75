package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.IndexStoreContractTest;
import io.vertx.redis.client.ProtocolVersion;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/**
 * The store contract against a real Redis, over both wire protocols the client speaks (replies such as HGETALL
 * differ in shape). Every test gets a fresh key prefix (an empty store); restart() closes the store with its
 * connections and opens a new one over the same keys, as a replica restart would.
 */
class RedisStoreContractTest {
    private static TestRedis redis;

    @BeforeAll
    static void connect() {
        redis = new TestRedis();
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    abstract class OverProtocol extends IndexStoreContractTest {
        private String prefix;

        abstract ProtocolVersion protocol();

        private RedisStore open() {
            RedisOptions o = new RedisOptions().setConnectionString(TestRedis.URI).setPreferredProtocolVersion(protocol());
            return RedisStore.connect(o, TestRedis.options(prefix));
        }

        @Override
        protected IndexStore newStore() {
            prefix = TestRedis.uniquePrefix("contract");
            return open();
        }

        @Override
        protected IndexStore restart(IndexStore s) {
            s.close();
            return open();
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

    @Nested
    class Resp3 extends OverProtocol {
        @Override
        ProtocolVersion protocol() {
            return ProtocolVersion.RESP3;
        }
    }

    @Nested
    class Resp2 extends OverProtocol {
        @Override
        ProtocolVersion protocol() {
            return ProtocolVersion.RESP2;
        }
    }
}
