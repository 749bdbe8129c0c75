package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.WriteSession;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.logging.Logger;

/**
 * The block index on Redis / Valkey, standalone or cluster, shared by every metadata-plane replica that points at
 * the same server and key prefix.
 *
 * <h2>Keys</h2> Everything of one instance carries one hash tag, {@code <prefix>:{<instance>}:...}, so it lives in
 * one cluster slot and every script touches a single slot: {@code live} (the incarnation token; present while the
 * instance exists), {@code b} (hash: 8-byte block key → meta word + locations), {@code ss} (set of open session
 * ids), {@code s:<id>} (one string per open session, expiring at its deadline + grace) and {@code wt} (the
 * taint counter: raised whenever a script changes a field that holds a WRITING location, so the replica that
 * started a session can finish it without reading its blocks when the counter did not move; see
 * {@code Lua.FINISH_FAST}). Store-wide keys each
 * stand alone: {@code <prefix>:i} (set of instance ids), {@code <prefix>:r:<section>} (hash of records) and
 * {@code <prefix>:o:{<session id>}} (the session id's owner, for store-wide uniqueness and
 * {@link #sessionOwner}).
 *
 * <h2>Atomicity</h2> The decisions stay in Java, as in the embedded store, and Redis does a compare-and-set: the
 * current values are read in one round trip, the new ones computed, and one script checks that every key the
 * decision read still holds what was read, then writes the new values (and the session) or reports a conflict,
 * after which Java re-reads and retries. The single exception is the common startWrite (minReplicas ≤ 1), whose
 * decision needs only "is the key present": the script decides that itself, so engines writing the same prompt
 * prefix at once (the normal case: shared system prompts) never conflict and no read round trip is needed. Checks
 * compare only the location part of a value, so read-path {@code touch}es, which rewrite the meta word inside
 * their own script, never make a writer retry.
 *
 * <h2>Cluster</h2> One hash tag per instance makes every operation on an instance atomic in one script, and
 * spreads instances over the cluster's nodes by their slots; the price is that one instance cannot outgrow one
 * node (about 90 bytes per block: 10 M blocks are under 1 GB). Spreading an instance's blocks over nodes (a tag
 * per key group) would need cross-node atomicity for every batch, which Redis does not have: a batch would turn
 * into per-node sub-batches with a commit protocol on top. Not worth it for indexes of this size.
 *
 * <p>Session ids are unique store-wide through the owner key, claimed with {@code SET NX} before the instance
 * script runs and released when the start is refused. It is a second slot, so the two steps are not one atomic
 * unit: a process that dies between them leaves a claim that blocks that id until it expires; {@link
 * #sessionOwner} therefore also checks that the session itself exists.
 */
public final class RedisStore implements IndexStore {
    private static final Logger LOG = Logger.getLogger(RedisStore.class);

    /**
     * @param prefix       first part of every key; no braces (they would change the cluster hash tag)
     * @param timeout      how long one Redis call may take before it fails
     * @param batchSize    keys per command in getAll/touch (larger batches go out as one pipeline)
     * @param pageSize     the most keys one HSCAN or HRANDFIELD asks for (forEach, scan, scanBlocks, sample): Redis
     *                     serves nobody else while it runs one, at about a microsecond per key
     * @param sessionGrace how long a session outlives its deadline in Redis before it expires by itself (24 h: any
     *                     replica's expiry closes it properly long before; only an outage of every replica longer
     *                     than this leaves its WRITING locations to the orphan sweep)
     * @param maxRetries   compare-and-set attempts before a write gives up (only under heavy contention)
     */
    /**
     * @param nativeFinishKeys a finish on the replica that started the session writes with native commands under
     *                         WATCH (two round trips, see {@link Calls#watched}) from this many keys on, and through
     *                         one script below it (one round trip, but ~1 µs of Redis' time more per key); 0: never
     */
    public record Options(String prefix, Duration timeout, int batchSize, int pageSize, Duration sessionGrace,
                          int maxRetries, int nativeFinishKeys) {
        public Options {
            if (prefix == null || prefix.isEmpty() || prefix.indexOf('{') >= 0 || prefix.indexOf('}') >= 0) {
                throw new IllegalArgumentException("key prefix must be non-empty and free of braces: " + prefix);
            }
            if (timeout == null || timeout.isNegative() || timeout.isZero() || sessionGrace == null
                    || sessionGrace.isNegative()) {
                throw new IllegalArgumentException("timeout must be positive and sessionGrace non-negative");
            }
            if (batchSize <= 0 || pageSize <= 0 || maxRetries <= 0) {
                throw new IllegalArgumentException("batchSize, pageSize and maxRetries must be positive");
            }
            if (nativeFinishKeys < 0) {
                throw new IllegalArgumentException("nativeFinishKeys must be 0 (off) or positive: " + nativeFinishKeys);
            }
        }

        /** Native finishes from 128 keys: below that the script's extra cost is less than a round trip's latency. */
        public static final int NATIVE_FINISH_KEYS = 128;

        public static Options defaults() {
            return new Options("kvp", Duration.ofSeconds(5), 4096, 1000, Duration.ofHours(24), 100, NATIVE_FINISH_KEYS);
        }

        public Options withPrefix(String p) {
            return new Options(p, timeout, batchSize, pageSize, sessionGrace, maxRetries, nativeFinishKeys);
        }

        public Options withPageSize(int keys) {
            return new Options(prefix, timeout, batchSize, keys, sessionGrace, maxRetries, nativeFinishKeys);
        }

        public Options withSessionGrace(Duration g) {
            return new Options(prefix, timeout, batchSize, pageSize, g, maxRetries, nativeFinishKeys);
        }

        public Options withNativeFinishKeys(int keys) {
            return new Options(prefix, timeout, batchSize, pageSize, sessionGrace, maxRetries, keys);
        }
    }

    private final Options options;
    private final Calls calls;
    private final Redis redis;
    /** Set when {@link #connect} made the client: closed with the store. */
    private final Vertx ownVertx;
    private final Map<String, RedisIndex> indexes = new ConcurrentHashMap<>();
    private volatile boolean closed;
    private volatile RedisMirror mirror;

    /** Over a client someone else owns (the metadata plane's quarkus-redis-client bean); close() leaves it open. */
    public RedisStore(Redis redis, Options options) {
        this(redis, options, null);
    }

    private RedisStore(Redis redis, Options options, Vertx ownVertx) {
        this.redis = redis;
        this.options = options;
        this.calls = new Calls(redis, options.timeout());
        this.ownVertx = ownVertx;
    }

    /**
     * A store with its own Vert.x and client (tests, the bench, tools), e.g. {@code redis://127.0.0.1:6379/0};
     * close() closes both. The pool allows as many waiting callers as worker threads are likely to block.
     */
    public static RedisStore connect(String connectionString, Options options) {
        return connect(new RedisOptions().setConnectionString(connectionString), options);
    }

    /** As {@link #connect(String, Options)} with full client options (cluster, sentinel, TLS, passwords). */
    public static RedisStore connect(RedisOptions redisOptions, Options options) {
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
        RedisOptions ro = new RedisOptions(redisOptions);
        if (ro.getMaxPoolSize() < 32) {
            ro.setMaxPoolSize(32); // connections are cheap; callers that wait for one add latency
        }
        ro.setMaxPoolWaiting(Math.max(ro.getMaxPoolWaiting(), 4096));
        Redis client = Redis.createClient(vertx, ro);
        RedisStore s = new RedisStore(client, options, vertx);
        RedisOptions perLoop = new RedisOptions(ro).setMaxPoolSize(4);
        s.loopClients(() -> Redis.createClient(vertx, perLoop));
        try {
            s.calls.send(Request.cmd(Command.PING), "PING");
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        return s;
    }

    Options options() {
        return options;
    }

    /**
     * Keeps a local copy of every index this store opens, so that the read path answers without a Redis round trip
     * ({@link RedisMirror}), on a standalone server. {@code clients} makes the client for the follower's own
     * connection (all it reads must come from one server, which it identifies on that connection); {@code maxLag}
     * bounds how stale an answer may be. A Redis Cluster needs {@link #startClusterMirror}.
     */
    public synchronized void startMirror(java.util.function.Supplier<Redis> clients, Duration maxLag) {
        startMirror(clients, maxLag, RedisMirror.IDLE_AFTER);
    }

    /**
     * As {@link #startMirror(java.util.function.Supplier, Duration)}; after {@code idleAfter} without a read and
     * without a change, the follower polls only every {@link RedisMirror#DOZE} until the next read wakes it
     * (zero: it never slows down).
     */
    public synchronized void startMirror(java.util.function.Supplier<Redis> clients, Duration maxLag,
            Duration idleAfter) {
        start(false, RedisMirror.standalone(clients), maxLag, idleAfter);
    }

    /**
     * As {@link #startMirror}, on a Redis Cluster: each instance's changes are read from the node holding its slot,
     * on one connection per node that {@code nodeClients} makes from the node's {@code host:port} (as the cluster
     * announces it). The slot map is read with this store's client, and again after a redirect or a lost node.
     */
    public synchronized void startClusterMirror(java.util.function.Function<String, Redis> nodeClients,
            Duration maxLag) {
        startClusterMirror(nodeClients, maxLag, RedisMirror.IDLE_AFTER);
    }

    /** As {@link #startClusterMirror(java.util.function.Function, Duration)}, dozing as {@code startMirror} does. */
    public synchronized void startClusterMirror(java.util.function.Function<String, Redis> nodeClients,
            Duration maxLag, Duration idleAfter) {
        start(true, new ClusterNodes(calls, nodeClients, options.timeout()), maxLag, idleAfter);
    }

    private void start(boolean cluster, RedisMirror.Source source, Duration maxLag, Duration idleAfter) {
        checkOpen();
        if (mirror != null) {
            throw new IllegalStateException("the local index copy is already on");
        }
        boolean isCluster = calls.send(Request.cmd(Command.INFO).arg("cluster"), "INFO cluster").toString()
                .contains("cluster_enabled:1");
        if (isCluster != cluster) {
            throw new IllegalStateException(isCluster
                    ? "Redis is a cluster: its local index copy must follow each node (startClusterMirror)"
                    : "Redis is not a cluster: the local index copy follows the one server (startMirror)");
        }
        // every replica's deleter must wait out the largest lag any copy may have: it is kept in Redis
        calls.eval(Lua.RAISE, List.of(options.prefix() + ":ml"), List.of(maxLag.toMillis()), "publish copy lag");
        mirror = new RedisMirror(this, source, maxLag, idleAfter);
        indexes.values().forEach(ix -> {
            if (!ix.dropped()) {
                mirror.follow(ix);
            }
        });
    }

    RedisMirror mirror() {
        return mirror;
    }

    /**
     * How much later than Redis a read of this replica may see a change: the local copy's max lag, or 0 without
     * one. Deleters add it to the reader lease, since a location marked DELETING may be served that much longer.
     */
    @Override
    public long readerStalenessMs() {
        long now = System.nanoTime();
        if (now - lagReadAt > 5_000_000_000L && !closed) {
            // refreshed without waiting: deleters may call this from an event loop
            lagReadAt = now;
            redis.send(Request.cmd(Command.GET).arg(options.prefix() + ":ml")).onSuccess(r -> {
                try {
                    sharedLagMs = r == null ? 0 : Long.parseLong(r.toString());
                } catch (NumberFormatException e) {
                    sharedLagMs = 0;
                }
            });
        }
        RedisMirror m = mirror;
        return Math.max(m == null ? 0 : m.maxLagMs(), sharedLagMs);
    }

    private volatile long lagReadAt = System.nanoTime() - 10_000_000_000L;
    /** The largest lag of any replica's copy over this prefix (a replica without one must wait it out too). */
    private volatile long sharedLagMs;

    /** Reads the local copy answered (0 without one). */
    public long mirrorAnswered() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.answered();
    }

    /** Reads the local copy could not answer and sent to Redis (0 without one). */
    public long mirrorDeclined() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.declined();
    }

    /** Full reads of an index into the local copy, the first of each included (0 without one). */
    public long mirrorResyncs() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.resyncs();
    }

    /**
     * Declined reads by reason (0 without a copy): {@code not-ready} (a full read pending or running), {@code stale}
     * (the last proof of recency older than the max lag), {@code own} (a change of this replica the copy lacks and
     * whose entry a script computed).
     */
    public long mirrorDeclined(String reason) {
        RedisMirror m = mirror;
        if (m == null) {
            return 0;
        }
        return switch (reason) {
            case "not-ready" -> m.declinedNotReady();
            case "stale" -> m.declinedStale();
            case "own" -> m.declinedOwn();
            default -> throw new IllegalArgumentException("no such reason: " + reason);
        };
    }

    /** Reads answered from the copy patched with this replica's own entries, before it applied them (0 without). */
    public long mirrorAnsweredOwn() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.answeredOwn();
    }

    /** Reads of the change streams that failed on a node, whose copies were then read again (0 without one). */
    public long mirrorNodeFailures() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.nodeFailures();
    }

    /** Reads that found the copy dozing (no read and no change for its idle time) and woke it (0 without one). */
    public long mirrorWakes() {
        RedisMirror m = mirror;
        return m == null ? 0 : m.wakes();
    }

    /** Whether the local copy of this index is in sync and recent now (false without one). */
    public boolean mirrorInSync(InstanceIndex index) {
        RedisMirror m = mirror;
        while (index instanceof dev.kvpool.meta.index.ForwardingIndex f) {
            index = f.delegate();
        }
        return m != null && index instanceof RedisIndex ix && m.inSync(ix);
    }

    Calls calls() {
        return calls;
    }

    private final java.util.concurrent.atomic.LongAdder conflicts = new java.util.concurrent.atomic.LongAdder();

    void conflict() {
        conflicts.increment();
    }

    /** Compare-and-set attempts that found a key changed since it was read and were retried: a contention gauge. */
    public long conflicts() {
        return conflicts.sum();
    }

    private final java.util.concurrent.atomic.LongAdder fastFinishes = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder fastFinishMisses = new java.util.concurrent.atomic.LongAdder();

    void fastFinished() {
        fastFinishes.increment();
    }

    void fastFinishMissed() {
        fastFinishMisses.increment();
    }

    private final java.util.concurrent.atomic.LongAdder nativeFinishes = new java.util.concurrent.atomic.LongAdder();

    void nativeFinished() {
        nativeFinishes.increment();
    }

    /** The part of {@link #fastFinishes} written with native commands under WATCH rather than by a script. */
    public long nativeFinishes() {
        return nativeFinishes.sum();
    }

    /** Finishes that wrote from what this replica's start remembered, without reading a block (see Lua.FINISH_FAST). */
    public long fastFinishes() {
        return fastFinishes.sum();
    }

    /** Finishes that tried that and found the session changed (taint counter or session), then read. */
    public long fastFinishMisses() {
        return fastFinishMisses.sum();
    }

    /** Round trips this store made so far (a pipelined batch counts once): for tests and metrics. */
    public long roundTrips() {
        return calls.roundTrips();
    }

    // ---- key names -----------------------------------------------------------------------------------------

    /** The common start of an instance's keys: the hash tag is the id, or a safe stand-in when it has braces. */
    String instanceBase(String instanceId) {
        if (!instanceId.isEmpty() && instanceId.indexOf('{') < 0 && instanceId.indexOf('}') < 0) {
            return options.prefix() + ":{" + instanceId + "}:";
        }
        String safe = instanceId.replace('{', '(').replace('}', ')');
        return options.prefix() + ":{" + (safe.isEmpty() ? "_" : safe) + "}:"
                + HexFormat.of().formatHex(instanceId.getBytes(StandardCharsets.UTF_8)) + ":";
    }

    private String registryKey() {
        return options.prefix() + ":i";
    }

    private String recordKey(String section) {
        return options.prefix() + ":r:" + section;
    }

    String ownerKey(String sessionId) {
        return options.prefix() + ":o:{" + sessionId + "}";
    }

    static String ownerValue(long token, String instanceId) {
        return Codec.hex16(token) + instanceId;
    }

    // ---- instances -----------------------------------------------------------------------------------------

    @Override
    public InstanceIndex index(String instanceId) {
        checkOpen();
        RedisIndex cur = indexes.get(instanceId);
        if (cur != null && !cur.dropped()) {
            return cur;
        }
        String base = instanceBase(instanceId);
        String inc = calls.eval(Lua.ENSURE, List.of(base + "live"), List.of(Codec.hex16(java.util.concurrent.ThreadLocalRandom.current().nextLong())),
                "create index " + instanceId).toString();
        // registered after the live key exists; drop() re-registers when it finds one again (see there)
        calls.send(Request.cmd(Command.SADD).arg(registryKey()).arg(instanceId), "register instance " + instanceId);
        return adopt(instanceId, inc);
    }

    private RedisIndex adopt(String instanceId, String incarnation) {
        RedisIndex ix = indexes.compute(instanceId, (id, v) -> v != null && !v.dropped()
                && v.incarnation().equals(incarnation) ? v : new RedisIndex(this, id, incarnation));
        RedisMirror m = mirror;
        if (m != null) {
            m.follow(ix);
        }
        return ix;
    }

    @Override
    public InstanceIndex existing(String instanceId) {
        checkOpen();
        // asks Redis every time: another replica may have dropped or created the instance
        Response r = calls.send(Request.cmd(Command.GET).arg(instanceBase(instanceId) + "live"),
                "look up instance " + instanceId);
        if (r == null) {
            RedisIndex gone = indexes.remove(instanceId);
            if (gone != null) {
                gone.markDropped();
            }
            return null;
        }
        return adopt(instanceId, r.toString());
    }

    @Override
    public void drop(String instanceId) {
        checkOpen();
        String base = instanceBase(instanceId);
        Response r = calls.eval(Lua.WIPE, List.of(base + "live", base + "b", base + "ss", base + "sx", base + "wt",
                        base + "m", base + "mq"),
                List.of("", base + "s:", "drop"), "drop instance " + instanceId);
        RedisIndex gone = indexes.remove(instanceId);
        if (gone != null) {
            gone.markDropped();
        }
        releaseOwners(instanceId, r);
        calls.send(Request.cmd(Command.SREM).arg(registryKey()).arg(instanceId), "unregister " + instanceId);
        // a racing index() may have created the instance again after our wipe but registered it before our SREM
        if (calls.send(Request.cmd(Command.EXISTS).arg(base + "live"), "check " + instanceId).toInteger() == 1) {
            calls.send(Request.cmd(Command.SADD).arg(registryKey()).arg(instanceId), "register " + instanceId);
        }
    }

    /** Deletes the owner keys of wiped sessions ({id, blob, ...}), each only while it is still theirs. */
    void releaseOwners(String instanceId, Response idBlobPairs) {
        if (idBlobPairs == null) {
            return;
        }
        List<String> sids = new ArrayList<>(), owners = new ArrayList<>();
        List<Request> rs = new ArrayList<>();
        for (int i = 0; i + 1 < idBlobPairs.size(); i += 2) {
            String sid = idBlobPairs.get(i).toString();
            long token = Codec.sessionToken(idBlobPairs.get(i + 1).toBytes());
            sids.add(sid);
            owners.add(ownerValue(token, instanceId));
            rs.add(Request.cmd(Command.EVALSHA).arg(Lua.COMPARE_DEL.sha()).arg(1).arg(ownerKey(sid))
                    .arg(owners.getLast()));
        }
        if (rs.isEmpty()) {
            return;
        }
        try {
            calls.all(rs, "release " + rs.size() + " session ids of " + instanceId);
        } catch (RedisStoreException e) {
            // most likely NOSCRIPT on a node that has not seen the script: one by one, with the EVAL fallback
            LOG.debugf("releasing session ids one by one: %s", e.getMessage());
            for (int i = 0; i < sids.size(); i++) {
                calls.eval(Lua.COMPARE_DEL, List.of(ownerKey(sids.get(i))), List.of(owners.get(i)),
                        "release session id " + sids.get(i));
            }
        }
    }

    void releaseOwner(String sessionId, long token, String instanceId) {
        calls.eval(Lua.COMPARE_DEL, List.of(ownerKey(sessionId)), List.of(ownerValue(token, instanceId)),
                "release session id " + sessionId);
    }

    @Override
    public Set<String> instanceIds() {
        checkOpen();
        Response members = calls.send(Request.cmd(Command.SMEMBERS).arg(registryKey()), "list instances");
        List<String> ids = new ArrayList<>();
        members.forEach(m -> ids.add(m.toString()));
        if (ids.isEmpty()) {
            return Set.of();
        }
        // the live keys are the truth: a crash between the two steps of drop() may leave a stale member
        List<Request> checks = new ArrayList<>();
        ids.forEach(id -> checks.add(Request.cmd(Command.EXISTS).arg(instanceBase(id) + "live")));
        List<Response> live = calls.all(checks, "check instances");
        Set<String> out = new HashSet<>();
        for (int i = 0; i < ids.size(); i++) {
            if (live.get(i).toInteger() == 1) {
                out.add(ids.get(i));
            }
        }
        return Set.copyOf(out);
    }

    @Override
    public long[] keyCounts(List<String> instanceIds) {
        checkOpen();
        if (instanceIds.isEmpty()) {
            return new long[0];
        }
        List<Request> rs = new ArrayList<>(instanceIds.size());
        instanceIds.forEach(id -> rs.add(Request.cmd(Command.HLEN).arg(instanceBase(id) + "b")));
        List<Response> got = calls.all(rs, "key counts of " + instanceIds.size() + " instances");
        long[] out = new long[got.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = got.get(i) == null ? 0 : got.get(i).toLong();
        }
        return out;
    }

    @Override
    public List<List<WriteSession>> sessionsDue(List<String> instanceIds, long nowMs) {
        checkOpen();
        if (instanceIds.isEmpty()) {
            return List.of();
        }
        List<Calls.ScriptCall> scripts = new ArrayList<>(instanceIds.size());
        for (String id : instanceIds) {
            String base = instanceBase(id);
            scripts.add(new Calls.ScriptCall(Lua.SESSIONS_DUE, List.of(base + "ss", base + "sx"),
                    List.of(base + "s:", nowMs)));
        }
        List<Response> got = calls.evalAll(scripts, "due sessions of " + instanceIds.size() + " instances");
        List<List<WriteSession>> out = new ArrayList<>(got.size());
        for (int i = 0; i < got.size(); i++) {
            Response r = got.get(i);
            List<WriteSession> due = new ArrayList<>(r == null ? 0 : r.size() / 2);
            for (int j = 0; r != null && j + 1 < r.size(); j += 2) {
                due.add(Codec.session(r.get(j).toString(), instanceIds.get(i), r.get(j + 1).toBytes()));
            }
            out.add(due);
        }
        return out;
    }

    @Override
    public String sessionOwner(String sessionId) {
        checkOpen();
        if (sessionId == null) {
            return null;
        }
        Response r = calls.send(Request.cmd(Command.GET).arg(ownerKey(sessionId)), "session owner " + sessionId);
        if (r == null) {
            return null;
        }
        String v = r.toString();
        if (v.length() < 16) {
            throw new RedisStoreException("corrupt owner of session " + sessionId + ": " + v);
        }
        String instanceId = v.substring(16);
        // a claim whose start never completed (the claimer died) owns no session
        Response exists = calls.send(Request.cmd(Command.EXISTS).arg(instanceBase(instanceId) + "s:" + sessionId),
                "session " + sessionId);
        return exists.toInteger() == 1 ? instanceId : null;
    }

    // ---- records -------------------------------------------------------------------------------------------

    @Override
    public void putRecord(String section, String name, byte[] value) {
        checkOpen();
        calls.send(Request.cmd(Command.HSET).arg(recordKey(section)).arg(name).arg(value),
                "put record " + section + "/" + name);
    }

    @Override
    public void removeRecord(String section, String name) {
        checkOpen();
        calls.send(Request.cmd(Command.HDEL).arg(recordKey(section)).arg(name),
                "remove record " + section + "/" + name);
    }

    @Override
    public Map<String, byte[]> records(String section) {
        checkOpen();
        Response r = calls.send(Request.cmd(Command.HGETALL).arg(recordKey(section)), "records " + section);
        TreeMap<String, byte[]> out = new TreeMap<>();
        if (r == null) {
            return out;
        }
        if (r.isMap()) {
            for (String k : r.getKeys()) {
                out.put(k, r.get(k).toBytes());
            }
        } else {
            for (int i = 0; i + 1 < r.size(); i += 2) {
                out.put(r.get(i).toString(), r.get(i + 1).toBytes());
            }
        }
        return out;
    }

    /**
     * A no-op: every call returns after Redis applied it, and Redis' own persistence (appendonly + appendfsync,
     * replicas) decides what survives a Redis crash. See the module README.
     */
    @Override
    public void sync() {
        checkOpen();
    }

    @Override
    public String kind() {
        return "redis";
    }

    @Override
    public boolean shared() {
        return true;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the Redis index store is closed");
        }
    }

    /**
     * Asynchronous reads from an event loop use a client of that loop's own, made by {@code factory} (same server
     * and options as the main client, a small pool). Null turns it off.
     */
    public void loopClients(java.util.function.Supplier<Redis> factory) {
        calls.loopClients(factory);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RedisMirror m = mirror;
        if (m != null) {
            m.close();
        }
        calls.close();
        if (ownVertx != null) {
            redis.close();
            try {
                ownVertx.close().toCompletionStage().toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("closing the Redis store's Vert.x instance failed", e);
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
