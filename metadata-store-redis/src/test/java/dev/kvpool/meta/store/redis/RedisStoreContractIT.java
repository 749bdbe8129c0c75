package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
class RedisStoreContractIT {
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
                    o.pageSize(), o.sessionGrace(), o.maxRetries(), o.nativeFinishKeys()))) {
                InstanceIndex ix = small.index(INST);
                long[] keys = range(0, 103); // 1..100 served; 0, 101 and 102 absent
                CompletableFuture<Throwable> refused = new CompletableFuture<>();
                redis.vertx.runOnContext(v -> {
                    try {
                        ix.getAll(keys, 0, keys.length, new Block[keys.length]);
                        refused.complete(null);
                    } catch (RuntimeException e) {
                        refused.complete(e);
                    }
                });
                assertInstanceOf(IllegalStateException.class, refused.get(10, TimeUnit.SECONDS));
                Block[] out = TestRedis.getAllOnLoop(redis.vertx, ix, keys).get(10, TimeUnit.SECONDS);
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

        /**
         * Background commands ask Redis for at most pageSize keys each (Redis serves nobody else while one runs): a
         * larger scan page or sample goes as several round trips, and still covers the index / draws distinct keys.
         */
        @Test
        void scansAndSamplesAskForAtMostPageSizeKeysPerCommand() throws Exception {
            serve(range(1, 3000));
            var o = TestRedis.options(prefix).withPageSize(64);
            List<String> sent = java.util.Collections.synchronizedList(new ArrayList<>());
            Redis client = Redis.createClient(redis.vertx, new RedisOptions().setConnectionString(TestRedis.URI)
                    .setPreferredProtocolVersion(protocol()));
            Redis recording = (Redis) Proxy.newProxyInstance(Redis.class.getClassLoader(), new Class<?>[] {Redis.class},
                    (proxy, m, args) -> {
                        if (m.getName().equals("send") && args[0] instanceof Request r) {
                            sent.add(r.toString());
                        }
                        try {
                            return m.invoke(client, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
            try (RedisStore small = new RedisStore(recording, o)) {
                InstanceIndex ix = small.index(INST);
                Set<Long> seen = new HashSet<>();
                long cursor = ix.scanBlocks(0, 2000, b -> seen.add(b.key()));
                assertTrue(cursor != 0 && seen.size() >= 1000, "one call gathers about the hint: " + seen.size());
                assertTrue(count(sent, "hscan") >= 2000 / 64, "several HSCANs: " + count(sent, "hscan"));
                while (cursor != 0) {
                    cursor = ix.scanBlocks(cursor, 2000, b -> seen.add(b.key()));
                }
                assertEquals(3000, seen.size());
                Block[] drawn = ix.sampleBlocks(1000, new java.util.Random(1));
                Set<Long> distinct = new HashSet<>();
                for (Block b : drawn) {
                    assertTrue(distinct.add(b.key()) && b.key() >= 1 && b.key() <= 3000, "distinct served keys");
                    assertEquals(Loc.SERVING, Loc.status(b.a(0)));
                }
                assertTrue(drawn.length > 800, "about as many as asked: " + drawn.length);
                long[] keys = ix.sample(1000, new java.util.Random(1));
                assertEquals(keys.length, java.util.Arrays.stream(keys).distinct().count());
                assertTrue(keys.length > 800, "about as many as asked: " + keys.length);
                assertTrue(count(sent, "hrandfield") >= 2 * 1000 / 64, "several HRANDFIELDs: " + count(sent, "hrandfield"));
                for (String req : sent) {
                    // RESP: *n, $len, command, $len, key, ...: HSCAN's count follows COUNT, HRANDFIELD's the key
                    String[] t = req.split("\r\n");
                    if (t[2].equalsIgnoreCase("hscan") || t[2].equalsIgnoreCase("hrandfield")) {
                        int asked = Integer.parseInt(t[t[2].equalsIgnoreCase("hscan") ? 10 : 6]);
                        assertTrue(asked <= 64, "a command asked for " + asked + " keys: " + req);
                    }
                }
            } finally {
                client.close();
            }
        }

        private static long count(List<String> sent, String cmd) {
            return sent.stream().filter(r -> r.split("\r\n")[2].equalsIgnoreCase(cmd)).count();
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
