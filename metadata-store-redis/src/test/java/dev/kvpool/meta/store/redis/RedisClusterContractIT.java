package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.IndexStoreContractTest;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import dev.kvpool.testing.RedisCluster;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The store contract on a Redis Cluster, with the cluster client: every script must stay inside one slot. Runs
 * against the nodes {@code -Dkvpool.test.redis-cluster=redis://127.0.0.1:7101,...} names, or else against a
 * 3-primary cluster the test starts from the local redis-server (skipped only where Redis is not installed).
 */
@EnabledIf("clusterAvailable")
class RedisClusterContractIT extends IndexStoreContractTest {
    private static final List<String> NODES = nodes();

    static boolean clusterAvailable() {
        return !System.getProperty("kvpool.test.redis-cluster", "").isBlank() || RedisCluster.available();
    }

    private static List<String> nodes() {
        String given = System.getProperty("kvpool.test.redis-cluster", "");
        if (!given.isBlank()) {
            return List.of(given.split(","));
        }
        if (!RedisCluster.available()) {
            return List.of();
        }
        RedisCluster c = RedisCluster.start(3);
        Runtime.getRuntime().addShutdownHook(new Thread(c::close));
        return c.connectionStrings();
    }
    private String prefix;

    private static RedisOptions cluster() {
        // a cluster connection holds one pooled connection per node: room for every racing thread at once
        RedisOptions o = new RedisOptions().setType(RedisClientType.CLUSTER).setMaxPoolSize(64);
        NODES.forEach(o::addConnectionString);
        return o;
    }

    /** Every finish on the starting replica goes native (WATCH, MULTI/EXEC), which a cluster binds to one node. */
    private RedisStore.Options options() {
        return TestRedis.options(prefix).withNativeFinishKeys(1);
    }

    @Override
    protected IndexStore newStore() {
        prefix = TestRedis.uniquePrefix("cluster");
        return RedisStore.connect(cluster(), options());
    }

    @Override
    protected IndexStore restart(IndexStore s) {
        s.close();
        return RedisStore.connect(cluster(), options());
    }

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
            forEachNode((redis, keys) -> keys.forEach(k -> call(redis, Request.cmd(Command.DEL).arg(k))));
        }
    }

    /** Instances hash to different slots, so a cluster spreads them over its nodes. */
    @Test
    void instancesSpreadOverTheNodes() {
        for (int i = 0; i < 30; i++) {
            store.index("spread-" + i);
        }
        Set<String> nodesWithInstances = new HashSet<>();
        forEachNode((redis, keys) -> {
            if (keys.stream().anyMatch(k -> k.contains("{spread-"))) {
                nodesWithInstances.add(redis.toString());
            }
        });
        assertTrue(nodesWithInstances.size() == NODES.size(), "instances on " + nodesWithInstances.size()
                + " of " + NODES.size() + " nodes");
    }

    /** WATCH, the reads, MULTI ... EXEC: the cluster client keeps them on the node of the instance's slot. */
    @Test
    void finishesOnTheStartingReplicaRunNativelyOnEveryNode() {
        RedisStore rs = (RedisStore) store;
        long natives = rs.nativeFinishes();
        for (int i = 0; i < 12; i++) { // instances on every node (see instancesSpreadOverTheNodes)
            var ix = store.index("native-" + i);
            long[] keys = new long[300], a = new long[300], b = new long[300];
            for (int k = 0; k < keys.length; k++) {
                keys[k] = 1_000L * i + k + 1;
                a[k] = dev.kvpool.meta.index.Loc.a(keys[k], dev.kvpool.meta.index.Loc.NEW, 1, 0);
                b[k] = keys[k] << 8;
            }
            ix.startWrite(keys, a, b, 1, x -> true, 0, "n" + i, System.currentTimeMillis() + 60_000, 1_700_000_000);
            boolean[] ok = new boolean[300];
            java.util.Arrays.fill(ok, true);
            ok[7] = false;
            var f = ix.finishWrite("n" + i, ok, true, 1_700_000_000);
            org.junit.jupiter.api.Assertions.assertEquals(299, f.served());
            org.junit.jupiter.api.Assertions.assertEquals(299, ix.keyCount(), "the failed key went");
            org.junit.jupiter.api.Assertions.assertEquals(0, ix.sessionCount());
        }
        org.junit.jupiter.api.Assertions.assertEquals(natives + 12, rs.nativeFinishes());
    }

    private void forEachNode(java.util.function.BiConsumer<Redis, List<String>> action) {
        Vertx vertx = Vertx.vertx();
        try {
            for (String node : NODES) {
                Redis redis = Redis.createClient(vertx, node);
                List<String> keys = new java.util.ArrayList<>();
                String cursor = "0";
                do {
                    Response r = call(redis, Request.cmd(Command.SCAN).arg(cursor).arg("MATCH").arg(prefix + ":*")
                            .arg("COUNT").arg(1000));
                    cursor = r.get(0).toString();
                    r.get(1).forEach(k -> keys.add(k.toString()));
                } while (!cursor.equals("0"));
                action.accept(redis, keys);
                redis.close();
            }
        } finally {
            vertx.close();
        }
    }

    private static Response call(Redis redis, Request r) {
        try {
            return redis.send(r).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cluster test call failed", e);
        }
    }
}
