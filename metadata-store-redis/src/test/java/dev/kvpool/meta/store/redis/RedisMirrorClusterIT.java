package dev.kvpool.meta.store.redis;

import static dev.kvpool.meta.store.redis.RedisMirrorIT.allOk;
import static dev.kvpool.meta.store.redis.RedisMirrorIT.keys;
import static dev.kvpool.meta.store.redis.RedisMirrorIT.serving;
import static dev.kvpool.meta.store.redis.RedisMirrorIT.truth;
import static dev.kvpool.meta.store.redis.RedisMirrorIT.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.testing.RedisCluster;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The local copy of served locations on a Redis Cluster of the test's own (3 primaries, each with a replica):
 * each instance's changes are read from the node holding its slot, and the copy must stay what Redis holds when
 * a slot moves to another node and when a replica takes over from its primary, by hand or after a kill -9.
 */
@EnabledIf("dev.kvpool.testing.RedisCluster#available")
class RedisMirrorClusterIT {
    private static final Duration LAG = Duration.ofMillis(40);
    private static RedisCluster cluster;
    private static Vertx vertx;
    private static Redis raw;
    private final List<RedisStore> stores = new ArrayList<>();

    @BeforeAll
    static void start() {
        cluster = RedisCluster.start(3, 1);
        vertx = Vertx.vertx();
        raw = Redis.createClient(vertx, options());
    }

    @AfterAll
    static void stop() {
        vertx.close();
        cluster.close();
    }

    @AfterEach
    void close() {
        stores.forEach(RedisStore::close);
    }

    private static RedisOptions options() {
        RedisOptions o = new RedisOptions().setType(RedisClientType.CLUSTER).setMaxPoolSize(16);
        cluster.connectionStrings().forEach(o::addConnectionString);
        return o;
    }

    /** A replica's store over the cluster, with its copy, every finish of 64 keys or more native. */
    private RedisStore replica(String prefix) {
        RedisStore s = RedisStore.connect(options(), TestRedis.options(prefix).withNativeFinishKeys(64));
        stores.add(s);
        s.startClusterMirror(node -> Redis.createClient(vertx, "redis://" + node), LAG);
        return s;
    }

    private static Response call(Request r) throws Exception {
        return raw.send(r).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static long counter(RedisStore s, String inst) throws Exception {
        Response r = call(Request.cmd(Command.GET).arg(s.instanceBase(inst) + "mq"));
        return r == null ? 0 : r.toLong();
    }

    private static void await(BooleanSupplier cond, String what, int seconds) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting: " + what);
            }
            Thread.sleep(5);
        }
    }

    /** The copy of {@code s} has applied every change Redis has numbered for the instance, and may answer. */
    private static void caughtUp(RedisStore s, String inst) throws InterruptedException {
        await(() -> {
            try {
                return s.mirror().applied(inst) == counter(s, inst) && s.mirrorInSync(s.index(inst));
            } catch (Exception e) {
                return false; // the cluster is changing hands
            }
        }, "copy of " + inst + " caught up", 30);
    }

    private static void assertSame(long[][] expected, long[][] actual, String what) {
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            assertTrue(Arrays.equals(expected[i], actual[i]), what + ": key #" + i + " expected "
                    + Arrays.toString(expected[i]) + " got " + Arrays.toString(actual[i]));
        }
    }

    private static int port(String node) {
        return Integer.parseInt(node.substring(node.lastIndexOf(':') + 1));
    }

    private static List<Integer> primaries() {
        List<Integer> p = new ArrayList<>();
        for (int port : cluster.ports()) {
            if (cluster.cli(port, "ROLE").startsWith("master")) {
                p.add(port);
            }
        }
        return p;
    }

    @Test
    void slotsAreComputedAsRedisDoes() throws Exception {
        for (String k : List.of("kvp:{inst-1}:m", "kvp:{inst-1}:mq", "no-tag", "a{}b", "{}{z}", "x{y", "{a}{b}",
                "kvp:{(x)}:7b7d:b", "ünïcode{ключ}")) {
            assertEquals(call(Request.cmd(Command.CLUSTER).arg("KEYSLOT").arg(k)).toInteger(), ClusterNodes.slot(k), k);
        }
    }

    @Test
    void theWrongKindOfMirrorIsRefusedAtStart() {
        RedisStore s = RedisStore.connect(options(), TestRedis.options(TestRedis.uniquePrefix("cm-kind")));
        stores.add(s);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> s.startMirror(() -> Redis.createClient(vertx, cluster.connectionStrings().get(0)), LAG));
        assertTrue(e.getMessage().contains("startClusterMirror"), e.getMessage());
    }

    /** Instances on every node, two replicas with copies, random writes, marks, purges and clears. */
    @Test
    @Timeout(180)
    void copiesFollowEveryNodeAndMatchRedis() throws Exception {
        String prefix = TestRedis.uniquePrefix("cm");
        RedisStore a = replica(prefix), b = replica(prefix);
        String[] insts = new String[9];
        for (int i = 0; i < insts.length; i++) {
            insts[i] = "cm-" + i;
            a.index(insts[i]);
            b.index(insts[i]);
        }
        Random rnd = new Random(7);
        long[] all = keys(0, 1000);
        for (int round = 0; round < 60; round++) {
            String inst = insts[rnd.nextInt(insts.length)];
            boolean onA = rnd.nextBoolean();
            RedisStore me = onA ? a : b, other = onA ? b : a;
            InstanceIndex mine = me.index(inst);
            RedisMirrorIT.randomChange(mine, all, rnd, 200, 100);
            assertSame(truth(mine, all), serving(mine, all), "round " + round + ", the writing replica");
            caughtUp(other, inst);
            assertSame(truth(other.index(inst), all), serving(other.index(inst), all),
                    "round " + round + ", the other replica");
        }
        Set<String> nodes = new HashSet<>();
        long answered = a.mirrorAnswered() + b.mirrorAnswered();
        for (String inst : insts) {
            caughtUp(a, inst);
            caughtUp(b, inst);
            assertSame(truth(a.index(inst), all), serving(a.index(inst), all), inst + " on a");
            assertSame(truth(b.index(inst), all), serving(b.index(inst), all), inst + " on b");
            nodes.add(a.mirror().nodeOf(inst));
            assertEquals(a.mirror().nodeOf(inst), b.mirror().nodeOf(inst));
        }
        assertEquals(3, nodes.size(), "copies read from every primary: " + nodes);
        assertTrue(a.mirrorAnswered() + b.mirrorAnswered() >= answered + 2 * insts.length, "answered from the copies");
        assertEquals(0, a.mirror().nodeFailures() + b.mirror().nodeFailures(), "no node failed");
    }

    /**
     * An instance's slot moves to another primary (as a resharding does it: IMPORTING, MIGRATING, MIGRATE of its
     * keys, SETSLOT NODE). The old node then redirects, so the copy is read again from the new one, and what was
     * written there after the move is served.
     */
    @Test
    @Timeout(120)
    void aMovedSlotIsFollowedOnItsNewNode() throws Exception {
        String prefix = TestRedis.uniquePrefix("cm-move");
        String inst = "moving";
        RedisStore a = replica(prefix), b = replica(prefix);
        InstanceIndex ia = a.index(inst), ib = b.index(inst);
        long[] all = keys(0, 400);
        write(ia, keys(0, 200), allOk(200));
        caughtUp(b, inst);
        String fromNode = b.mirror().nodeOf(inst);
        int from = port(fromNode);
        int to = primaries().stream().filter(p -> p != from).findFirst().orElseThrow();
        int slot = ClusterNodes.slot(a.instanceBase(inst));
        long failures = b.mirror().nodeFailures();

        String fromId = cluster.cli(from, "CLUSTER", "MYID"), toId = cluster.cli(to, "CLUSTER", "MYID");
        cluster.cli(to, "CLUSTER", "SETSLOT", "" + slot, "IMPORTING", fromId);
        cluster.cli(from, "CLUSTER", "SETSLOT", "" + slot, "MIGRATING", toId);
        while (true) {
            String listed = cluster.cli(from, "CLUSTER", "GETKEYSINSLOT", "" + slot, "100");
            if (listed.isEmpty()) {
                break;
            }
            List<String> cmd = new ArrayList<>(List.of("MIGRATE", "127.0.0.1", "" + to, "", "0", "5000", "KEYS"));
            cmd.addAll(List.of(listed.split("\n")));
            assertEquals("OK", cluster.cli(from, cmd.toArray(String[]::new)));
        }
        for (int p : cluster.ports()) {
            cluster.cli(p, "CLUSTER", "SETSLOT", "" + slot, "NODE", toId);
        }

        write(ia, keys(200, 100), allOk(100)); // on the new node: the cluster client follows the redirect
        LocList marked = ia.markDeleting(all, 0, 50, null);
        ia.purgeAll(marked);
        assertSame(truth(ia, all), serving(ia, all), "the writer reads its writes");
        caughtUp(b, inst);
        assertEquals("127.0.0.1:" + to, b.mirror().nodeOf(inst), "followed on the slot's new node");
        assertNotEquals(fromNode, b.mirror().nodeOf(inst));
        assertTrue(b.mirror().nodeFailures() > failures, "the old node's redirect was noticed");
        long answered = b.mirrorAnswered();
        assertSame(truth(ib, all), serving(ib, all), "the other replica after the move");
        assertTrue(b.mirrorAnswered() > answered, "answered from the copy again");
    }

    /**
     * The primary holding an instance's slot hands over to its replica (CLUSTER FAILOVER), then that new primary
     * is killed and the old one takes the slot back by election. Each time the copy follows the slot's new
     * primary and serves what was written there.
     */
    @Test
    @Timeout(180)
    void aReplicaThatTakesOverIsFollowed() throws Exception {
        String prefix = TestRedis.uniquePrefix("cm-failover");
        String inst = "failing-over";
        RedisStore a = replica(prefix), b = replica(prefix);
        InstanceIndex ia = a.index(inst), ib = b.index(inst);
        long[] all = keys(0, 300);
        write(ia, keys(0, 100), allOk(100));
        caughtUp(b, inst);
        int primary = port(b.mirror().nodeOf(inst));
        int replica = replicaOf(primary);
        long resyncs = b.mirrorResyncs();

        // by hand: the replica catches up, then the two swap roles
        assertEquals("OK", cluster.cli(replica, "CLUSTER", "FAILOVER"));
        await(() -> cluster.cli(replica, "ROLE").startsWith("master"), "replica promoted", 30);
        writeWhenTheClusterAnswers(ia, keys(100, 100));
        assertSame(truth(ia, all), serving(ia, all), "the writer reads its writes");
        caughtUp(b, inst);
        assertEquals("127.0.0.1:" + replica, b.mirror().nodeOf(inst), "followed on the promoted replica");
        assertTrue(b.mirrorResyncs() > resyncs, "read again from the new primary");
        assertSame(truth(ib, all), serving(ib, all), "the other replica after the failover");

        // kill -9 of the new primary: the old one (now its replica) is elected after the node timeout
        resyncs = b.mirrorResyncs();
        cluster.kill(replica);
        await(() -> cluster.cli(primary, "ROLE").startsWith("master"), "old primary elected again", 60);
        writeWhenTheClusterAnswers(ia, keys(200, 100));
        assertSame(truth(ia, all), serving(ia, all), "the writer reads its writes after the kill");
        caughtUp(b, inst);
        assertEquals("127.0.0.1:" + primary, b.mirror().nodeOf(inst), "followed on the elected node");
        assertTrue(b.mirrorResyncs() > resyncs, "read again after the kill");
        long answered = b.mirrorAnswered();
        assertSame(truth(ib, all), serving(ib, all), "the other replica after the kill");
        assertTrue(b.mirrorAnswered() > answered, "answered from the copy");
    }

    private static int replicaOf(int primaryPort) {
        String id = cluster.cli(primaryPort, "CLUSTER", "MYID");
        // "<id> 127.0.0.1:<port>@<bus> slave <primary id> ..."
        String line = cluster.cli(primaryPort, "CLUSTER", "REPLICAS", id).lines().findFirst().orElseThrow();
        String addr = line.split(" ")[1];
        return Integer.parseInt(addr.substring(addr.indexOf(':') + 1, addr.indexOf('@')));
    }

    /**
     * Writes once the cluster client reaches the instance's node again: it learns the new map from a redirect or a
     * refused connection. (A read is retried, not the write: a write that failed halfway would leave its keys.)
     */
    private static void writeWhenTheClusterAnswers(InstanceIndex ix, long[] ks) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                ix.keyCount();
                break;
            } catch (RuntimeException e) {
                if (System.nanoTime() > end) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
        write(ix, ks, allOk(ks.length));
    }
}
