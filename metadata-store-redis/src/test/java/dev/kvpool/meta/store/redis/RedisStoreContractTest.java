package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import dev.kvpool.meta.index.IndexStoreContractTest;
import io.vertx.redis.client.ProtocolVersion;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

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

        /**
         * The read path of the HTTP handler: on an event loop the blocking read is refused, the asynchronous one
         * answers there (small batches, so the read is several pipelined HMGETs).
         */
        @Test
        void getAllAsyncAnswersOnAnEventLoopWhereGetAllIsRefused() throws Exception {
            serve(range(1, 100));
            var o = TestRedis.options(prefix);
            RedisOptions ro = new RedisOptions().setConnectionString(TestRedis.URI).setPreferredProtocolVersion(protocol());
            try (RedisStore small = RedisStore.connect(ro, new RedisStore.Options(o.prefix(), o.timeout(), 16,
                    o.pageSize(), o.sessionGrace(), o.maxRetries()))) {
                InstanceIndex ix = small.index(INST);
                long[] keys = range(0, 103); // 1..100 served; 0, 101 and 102 absent
                CompletableFuture<Block[]> answer = new CompletableFuture<>();
                CompletableFuture<Throwable> refused = new CompletableFuture<>();
                redis.vertx.runOnContext(v -> {
                    try {
                        ix.getAll(keys, 0, keys.length, new Block[keys.length]);
                        refused.complete(null);
                    } catch (RuntimeException e) {
                        refused.complete(e);
                    }
                    Block[] out = new Block[keys.length];
                    ix.getAllAsync(keys, 0, keys.length, out).whenComplete((x, e) -> {
                        if (e != null) {
                            answer.completeExceptionally(e);
                        } else {
                            answer.complete(out);
                        }
                    });
                });
                assertInstanceOf(IllegalStateException.class, refused.get(10, TimeUnit.SECONDS));
                Block[] out = answer.get(10, TimeUnit.SECONDS);
                assertNull(out[0]);
                assertNull(out[101]);
                assertNull(out[102]);
                for (int i = 1; i <= 100; i++) {
                    assertEquals(i, out[i].key());
                    assertEquals(Loc.SERVING, Loc.status(out[i].a(0)));
                }
                small.close();
                var closed = assertThrows(ExecutionException.class,
                        () -> ix.getAllAsync(keys, 0, 1, new Block[1]).toCompletableFuture().get(10, TimeUnit.SECONDS));
                assertInstanceOf(IllegalStateException.class, closed.getCause());
            }
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
