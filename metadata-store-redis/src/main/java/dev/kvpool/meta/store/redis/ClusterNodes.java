package dev.kvpool.meta.store.redis;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/**
 * Which Redis Cluster node serves a key, for the follower of {@link RedisMirror}: it reads each instance's change
 * stream from the node that holds the instance's slot, on a connection of its own to that node (a cluster client
 * would hide which node answered, and the failover check needs to know). The slot map comes from
 * {@code CLUSTER SLOTS}, asked through the store's cluster client, and is read again after any redirect or lost
 * node ({@link #stale()}).
 */
final class ClusterNodes implements RedisMirror.Source {
    static final int SLOTS = 16384;

    private final Calls calls;
    private final Function<String, Redis> clients;
    private final long timeoutMs;
    private final String[] owners = new String[SLOTS];
    private boolean stale = true;

    /** {@code clients} makes a client for one node from its {@code host:port}. */
    ClusterNodes(Calls calls, Function<String, Redis> clients, java.time.Duration timeout) {
        this.calls = calls;
        this.clients = clients;
        this.timeoutMs = timeout.toMillis();
    }

    @Override
    public String nodeOf(String key) {
        if (stale) {
            refresh();
        }
        int slot = slot(key);
        String owner = owners[slot];
        if (owner == null) {
            stale = true;
            throw new RedisStoreException("index copy: no cluster node serves slot " + slot + " (key " + key + ")");
        }
        return owner;
    }

    @Override
    public Redis client(String node) {
        return clients.apply(node);
    }

    @Override
    public void stale() {
        stale = true;
    }

    @Override
    public boolean oneReadForAll() {
        return false; // each instance's stream is in a slot of its own
    }

    private void refresh() {
        Response r;
        try {
            r = calls.send(Request.cmd(Command.CLUSTER).arg("SLOTS"), "cluster slot map");
        } catch (RuntimeException e) {
            // the cluster client may refuse while a node it knows is down (it connects to all of them): ask the
            // nodes of the last map one at a time
            r = askKnownNodes(e);
        }
        String[] fresh = new String[SLOTS];
        // [start, end, [host, port, id, ...], replicas...] per range
        for (int i = 0; i < r.size(); i++) {
            Response range = r.get(i);
            Response primary = range.get(2);
            String host = primary.get(0) == null ? "" : primary.get(0).toString();
            if (host.isEmpty() || "?".equals(host)) {
                continue; // the node's address is unknown to the node asked: its slots stay unmapped for now
            }
            String node = (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + primary.get(1).toInteger();
            for (int s = range.get(0).toInteger(); s <= range.get(1).toInteger(); s++) {
                fresh[s] = node;
            }
        }
        System.arraycopy(fresh, 0, owners, 0, SLOTS);
        stale = false;
    }

    private Response askKnownNodes(RuntimeException first) {
        java.util.Set<String> known = new java.util.LinkedHashSet<>();
        for (String o : owners) {
            if (o != null) {
                known.add(o);
            }
        }
        for (String node : known) {
            Redis client = clients.apply(node);
            try {
                return client.send(Request.cmd(Command.CLUSTER).arg("SLOTS")).toCompletionStage().toCompletableFuture()
                        .get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                first.addSuppressed(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } finally {
                client.close();
            }
        }
        throw first;
    }

    /** The cluster slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key without one. */
    static int slot(String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        int from = 0, to = k.length;
        for (int i = 0; i < k.length; i++) {
            if (k[i] == '{') {
                for (int j = i + 1; j < k.length; j++) {
                    if (k[j] == '}') {
                        if (j > i + 1) { // "{}" is no tag: the whole key counts
                            from = i + 1;
                            to = j;
                        }
                        break;
                    }
                }
                break;
            }
        }
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc ^= (k[i] & 0xff) << 8;
            for (int b = 0; b < 8; b++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
        }
        return (crc & 0xffff) % SLOTS;
    }
}
