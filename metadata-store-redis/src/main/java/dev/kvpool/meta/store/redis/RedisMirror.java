package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.BlockState;
import dev.kvpool.meta.index.Loc;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * A replica-local copy of what the read path needs from each instance's index: per block key, its SERVING
 * locations. It lets {@code getCacheLocation} answer without a Redis round trip, which an HTTP exchange plus one
 * Redis call cannot do within 1.5× of a bare MGET.
 *
 * <h2>How it stays current</h2> While an instance's change counter ({@code mq}) exists, every script and
 * transaction that changes what a reader can see (a finish, a mark-deleting or purge, clear and drop) appends the
 * fields it wrote to the instance's stream ({@code m}) in the same atomic step, numbered by that counter (see
 * {@code Lua.MIRROR}). Starts and touches append nothing: WRITING locations and access times are not served. One
 * thread follows every stream on a connection of its own: one pipelined poll reads the counters, then XREAD
 * (without BLOCK) of what is new; it polls again at once while there is more, else after a few milliseconds. A
 * follow starts (and restarts after a gap) from {@code Lua.MIRROR_HEAD}, which creates the counter and names the
 * last entry, then a full {@code HSCAN}, a slice of pages at a time between polls of the others; entries after
 * that head overwrite what the scan saw, so the copy converges. A number that is not the last one plus one (the
 * stream was trimmed past a slow follower), a counter that went missing or backwards (Redis lost it) and a
 * counter ahead of the stream's end all force that resync.
 *
 * <h2>Failover</h2> Everything the follower reads from a server goes over one connection to it, so it reads one
 * server's history. Every {@code maxLag}, and first on each new connection, it asks that server who it is
 * ({@code run_id} and {@code master_replid} from {@code INFO}); when that changed (a restart, a replica promoted, a
 * primary turned replica and loaded another's data) every copy read from it is read again. Numbers alone do not
 * show a failover: a promoted replica that missed the last k changes numbers its next ones from below, and its
 * stream entry ids come from its own clock, so a follower may skip them (ids below its last) and then see the
 * k+1st as the next in line.
 *
 * <h2>Cluster</h2> Each instance's keys share one hash tag, so its stream and counter live on the node holding its
 * slot ({@link ClusterNodes}); the follower keeps one connection per node, polls all nodes at once (one XREAD per
 * stream, since XREAD must stay in one slot) and counts each node's copies recent by that node's polls. A node
 * that fails a poll or a full read (lost, timed out, or redirecting after a slot move or a failover) has its
 * copies read again, from whichever node the slot map then names, after a backoff; the other nodes' copies keep
 * answering meanwhile.
 *
 * <h2>When it answers</h2> Only while it is provably recent: {@link Node#fresh} is the time a poll of the
 * copy's node was sent after which every copy read from there had applied up to the counter that poll read, and a
 * read is answered here only when that is at most {@code maxLag} ago. Otherwise, and until a follow is in sync,
 * reads go to Redis. A replica also reads its own writes: its writes return their change numbers, and until the
 * copy has applied the highest of them it answers patched with this replica's own entries ({@link OwnEntry}), or
 * sends the read to Redis when one of those changes has no entry here. Across replicas a read may lag a write by at most
 * {@code maxLag}: a new block may be a miss for that long (the engine recomputes it), and a block marked for
 * deletion may still be served for that long, which is why the deleter waits {@code maxLag} on top of the
 * group's reader lease ({@link RedisStore#readerStalenessMs()}).
 *
 * <p>Cost: one XADD per finish and per delete batch in Redis' thread, the stream's last {@value
 * Lua#MIRROR_MAXLEN} entries in Redis, and in each replica's heap 39–77 bytes per served block ({@link ServedMap}:
 * 29 bytes a slot, filled 3/8 to 3/4). Measured on 2 shared cores (docs/benchmarks.md, "What the copy cost writes"):
 * a written block costs about as much with the copy as without.
 */
final class RedisMirror implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(RedisMirror.class);
    /** Entries per stream per XREAD. */
    private static final int READ_COUNT = 512;

    /**
     * Where the copies are read from: one server, or in a cluster the node that holds each instance's slot. The
     * follower keeps one connection per node and checks each node's identity on it.
     */
    interface Source {
        /** The node serving this key: "" for a standalone server, else {@code host:port}. */
        String nodeOf(String key);

        /** A client for that node; the follower opens one connection with it. */
        Redis client(String node);

        /** The node map may be out of date (a redirect, a node lost): read it again before the next lookup. */
        default void stale() {
        }

        /** Whether one XREAD may name streams of several instances (not across cluster slots). */
        default boolean oneReadForAll() {
            return true;
        }
    }

    /** A standalone server (or whatever one client reaches: a sentinel-managed primary, a proxy). */
    static Source standalone(Supplier<Redis> clients) {
        return new Source() {
            @Override
            public String nodeOf(String key) {
                return "";
            }

            @Override
            public Redis client(String node) {
                return clients.get();
            }
        };
    }

    private final RedisStore store;
    private final Source source;
    private final long maxLagNanos;
    /** How often an idle follower polls; the copy is then at most about this old. */
    private final long pollMs;
    /** How often it asks who the server is (and always first on a new connection). */
    private final long checkNanos;
    private final Map<String, Follow> follows = new ConcurrentHashMap<>();
    /** By address; the follower thread's own. */
    private final Map<String, Node> nodes = new java.util.HashMap<>();
    private final Thread thread;
    private volatile boolean closed;
    private volatile boolean paused; // tests: the follower stops reading, as a slow one would

    private final LongAdder answered = new LongAdder(), answeredOwn = new LongAdder(), resyncs = new LongAdder(),
            entries = new LongAdder(), nodeFailures = new LongAdder(), declinedNotReady = new LongAdder(),
            declinedStale = new LongAdder(), declinedOwn = new LongAdder(), wakes = new LongAdder(),
            polls = new LongAdder(), streamsRead = new LongAdder();

    /** Default of how long without a read and without a change before the follower dozes. */
    static final Duration IDLE_AFTER = Duration.ofSeconds(1);
    /**
     * How often a dozing follower still polls: it keeps the connection and the server's identity checked and
     * applies what other replicas wrote in between, so waking rarely needs a full read (a stream keeps ~1,000
     * entries: more than 4,000 changes a second to one instance would outrun it).
     */
    static final Duration DOZE = Duration.ofMillis(250);
    private final long idleAfterNanos;
    private volatile long dozeNanos;
    /** When a read last asked the copy (nanoTime, to within {@link #ASK_GRAIN_NANOS}). */
    private volatile long lastAsked = System.nanoTime();
    /** The follower is parked for a doze: the next read unparks it. */
    private volatile boolean dozing;
    /** When a poll or full read last applied something (the follower's own). */
    private long lastChange = System.nanoTime();
    /** Readers record their time only when it moved this much, so busy readers do not all write one field. */
    private static final long ASK_GRAIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    /** One instance's copy. The follower thread writes it; readers only look. */
    static final class Follow {
        final RedisIndex index;
        volatile ServedMap serving = new ServedMap();
        volatile boolean ready;
        volatile long applied;
        /** The node it is read from; null until resolved (again, after a redirect or a lost node). */
        volatile Node node;
        String lastId = "0-0";
        /**
         * Its stream is read in the next poll: it had news in the last one. A stream whose counter stood still is
         * not read (an idle replica's polls would otherwise read every stream, for nothing, each time).
         */
        boolean hot = true;
        long lastSeq;
        /** A full read in progress (not ready meanwhile), taken a few pages at a time; null when none. */
        Scan scan;

        Follow(RedisIndex index) {
            this.index = index;
        }
    }

    /** One server the copies are read from, over one connection, and what the follower knows about it. */
    static final class Node {
        final String addr;
        Redis client;
        RedisConnection conn;
        long lastCheck;
        boolean checkNow = true;
        /** Who the server is (run_id/master_replid); null before the first check. */
        String server;
        boolean identityUnavailable;
        /** When a poll was sent after which every copy read from here had applied what that poll read. */
        volatile long fresh = Long.MIN_VALUE / 2;
        /** After a failure: left alone until then (nanoTime), backing off. */
        long retryAt;
        long backoffMs = 10;
        // the poll in flight
        io.vertx.core.Future<List<Response>> pending;
        List<Follow> polled, streamed;
        boolean withInfo;

        Node(String addr) {
            this.addr = addr;
        }
    }

    /** A full read of one instance: the stream head it follows from once done, and the blocks read so far. */
    private static final class Scan {
        final long seq;
        final String id;
        final ServedMap m = new ServedMap();
        final long t0 = System.nanoTime();
        String cursor = "0";

        Scan(long seq, String id) {
            this.seq = seq;
            this.id = id;
        }
    }

    /**
     * How long the follower reads pages of full reads before it polls again, so one instance's long full read
     * (millions of blocks) does not leave every other copy without a poll until it ends.
     */
    private static final long SCAN_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    RedisMirror(RedisStore store, Source source, Duration maxLag, Duration idleAfter) {
        if (maxLag.toMillis() < 4) {
            throw new IllegalArgumentException("the local copy's max lag must be at least 4 ms: " + maxLag);
        }
        if (idleAfter.isNegative()) {
            throw new IllegalArgumentException("the local copy's idle time must not be negative: " + idleAfter);
        }
        this.store = store;
        this.source = source;
        this.maxLagNanos = maxLag.toNanos();
        // an idle copy is proven recent this often, a quarter of the lag a reader accepts. Not more often: idle
        // polls cost the plane CPU (an idle replica measured 4-7 % of a core with the copy on, cause not pinned
        // down) and this replica's own writes need no poll to be read (OwnEntry); other replicas' writes show
        // within this plus a round trip
        this.pollMs = Math.max(1, maxLag.toMillis() / 4);
        // a restart or a switch to another server breaks the connection, and a new one is checked first; what a
        // live connection can miss (a primary turned replica and synced from another) is caught within the max lag.
        // INFO is the dearest command the follower sends (24-43 us of Redis each, measured)
        this.checkNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, maxLag.toMillis()));
        // a follower that nobody reads from and that has nothing to apply proves itself recent for no one: it polls
        // at a walk until a read wakes it (that read goes to Redis; the next ones, one round trip later, do not)
        this.idleAfterNanos = idleAfter.toNanos();
        this.dozeNanos = Math.max(DOZE.toNanos(), TimeUnit.MILLISECONDS.toNanos(pollMs));
        this.thread = Thread.ofPlatform().daemon().name("kvpool-index-mirror").unstarted(this::run);
        thread.start();
    }

    long maxLagMs() {
        return TimeUnit.NANOSECONDS.toMillis(maxLagNanos);
    }

    void follow(RedisIndex index) {
        follows.compute(index.instanceId(), (id, f) -> f != null && f.index == index ? f : new Follow(index));
        java.util.concurrent.locks.LockSupport.unpark(thread); // it parks while it has nothing to follow
    }

    /** Polls now rather than after the idle pause: this replica just wrote, and reads its writes from here. */
    void nudge() {
        java.util.concurrent.locks.LockSupport.unpark(thread);
    }

    void unfollow(RedisIndex index) {
        follows.computeIfPresent(index.instanceId(), (id, f) -> f.index == index ? null : f);
    }

    /**
     * Fills {@code out} from the copy when it may answer for this index now; false (nothing written) when the read
     * must go to Redis. Right after this replica's own writes, before the copy has applied them, the copy answers
     * patched with their entries, when it has every one of them ({@link OwnEntry}).
     */
    boolean answer(RedisIndex index, long[] keys, int off, int len, Block[] out) {
        long now = asked();
        Follow f = follows.get(index.instanceId());
        if (f == null || f.index != index || !f.ready) {
            declinedNotReady.increment();
            return false;
        }
        Node n = f.node;
        if (n == null || now - n.fresh > maxLagNanos) {
            declinedStale.increment();
            return false;
        }
        long applied = f.applied;
        if (applied >= index.ownChanges()) {
            f.serving.getAll(keys, off, len, out);
            answered.increment();
            return true;
        }
        if (index.ownUncovered() > applied) {
            declinedOwn.increment(); // a change of ours the copy lacks and whose entry a script computed
            return false;
        }
        // the entries before the copy's values: one the follower applies and drops meanwhile is then in them
        List<OwnEntry> mine = index.ownPendingAfter(applied);
        f.serving.getAll(keys, off, len, out);
        for (OwnEntry e : mine) {
            e.patch(keys, off, len, out);
        }
        answered.increment();
        answeredOwn.increment();
        return true;
    }

    /** A read asks the copy: noted, and a dozing follower woken. Returns now (nanoTime). */
    private long asked() {
        long now = System.nanoTime();
        if (now - lastAsked > ASK_GRAIN_NANOS) {
            lastAsked = now;
        }
        if (dozing) { // read after lastAsked is written; the follower writes dozing before it reads lastAsked
            dozing = false;
            wakes.increment();
            java.util.concurrent.locks.LockSupport.unpark(thread);
        }
        return now;
    }

    /**
     * A change entry of this replica, decoded for lookups (keys sorted; per key its served locations, or null when
     * the change leaves it none). It is exactly what the follower will apply, so a read patched with it sees what
     * the copy will hold once it has.
     */
    static final class OwnEntry {
        /** Open addressing, at most half full; {@code used[s]} marks a taken slot (a key may be any long). */
        private final long[] keys;
        private final long[][] locs;
        private final boolean[] used;
        private final int mask;

        private OwnEntry(int n) {
            int cap = Integer.highestOneBit(Math.max(2, n) * 2 - 1) << 1;
            keys = new long[cap];
            locs = new long[cap][];
            used = new boolean[cap];
            mask = cap - 1;
        }

        /** Built on the finish's path: one pass to count, one to fill; no sorting, no boxing. */
        static OwnEntry of(byte[] entry) {
            int n = 0;
            for (int p = 0; p + 10 <= entry.length; n++) { // per field: 8-byte key, 2-byte length, the value
                p += 10 + (((entry[p + 8] & 0xff) << 8) | (entry[p + 9] & 0xff));
            }
            OwnEntry e = new OwnEntry(n);
            // a key twice in one entry keeps its last value, as applying the entry in order would
            decode(entry, (key, value, off, len) -> e.locs[e.slotOf(key)] = len == 0 ? null : servedLocs(value, off, len));
            return e;
        }

        /** The key's slot, taken for it when absent. */
        private int slotOf(long key) {
            int s = ServedMap.slot(key, mask);
            while (used[s] && keys[s] != key) {
                s = (s + 1) & mask;
            }
            used[s] = true;
            keys[s] = key;
            return s;
        }

        void patch(long[] want, int off, int len, Block[] out) {
            for (int i = 0; i < len; i++) {
                long key = want[off + i];
                for (int s = ServedMap.slot(key, mask); used[s]; s = (s + 1) & mask) {
                    if (keys[s] == key) {
                        out[i] = locs[s] == null ? null : new Block(key, locs[s], 0);
                        break;
                    }
                }
            }
        }
    }

    /** Reads answered from the copy. */
    long answered() {
        return answered.sum();
    }

    /** Reads the copy could not answer (not in sync, behind this replica's own writes, or not recent enough). */
    long declined() {
        return declinedNotReady.sum() + declinedStale.sum() + declinedOwn.sum();
    }

    /** Declined reads by reason: the copy not in sync (a full read pending or running), not recent, behind own. */
    long declinedNotReady() {
        return declinedNotReady.sum();
    }

    long declinedStale() {
        return declinedStale.sum();
    }

    long declinedOwn() {
        return declinedOwn.sum();
    }

    /** Reads answered from the copy patched with this replica's own entries it had not applied yet. */
    long answeredOwn() {
        return answeredOwn.sum();
    }

    /** Change-stream entries applied. */
    long entries() {
        return entries.sum();
    }

    /** Follows started again from a full scan, the first one of each instance included. */
    long resyncs() {
        return resyncs.sum();
    }

    /** Polls or full reads that failed on a node (lost, redirected, timed out); its copies were read again. */
    long nodeFailures() {
        return nodeFailures.sum();
    }

    /** Whether the copy of this index is in sync and recent now (its own writes aside). Asking wakes a doze. */
    boolean inSync(RedisIndex index) {
        long now = asked();
        Follow f = follows.get(index.instanceId());
        if (f == null || f.index != index || !f.ready) {
            return false;
        }
        Node n = f.node;
        return n != null && now - n.fresh <= maxLagNanos;
    }

    /** Reads that found the follower dozing and woke it. */
    long wakes() {
        return wakes.sum();
    }

    /** Polls sent, one per node per round. */
    long polls() {
        return polls.sum();
    }

    /** Tests: a longer doze, so that waking by a read is told apart from the doze's own end. */
    void dozeForTest(Duration d) {
        dozeNanos = d.toNanos();
    }

    /** Streams named in the polls' XREADs (a stream whose counter stood still is not read). */
    long streamsRead() {
        return streamsRead.sum();
    }

    /** Tests: when the copy of an instance was last proven to hold every change (nanoTime; MIN_VALUE: never). */
    long provenAt(String instanceId) {
        Follow f = follows.get(instanceId);
        Node n = f == null ? null : f.node;
        return f == null || !f.ready || n == null ? Long.MIN_VALUE : n.fresh;
    }

    /** Whether the follower is dozing now (tests). */
    boolean dozing() {
        return dozing;
    }

    /** Blocks with a served location in the copy of an instance (-1 when it is not in sync). */
    long size(String instanceId) {
        Follow f = follows.get(instanceId);
        return f == null || !f.ready ? -1 : f.serving.size();
    }

    /** The last change number applied to the copy of an instance (-1 when it is not followed or not in sync). */
    long applied(String instanceId) {
        Follow f = follows.get(instanceId);
        return f == null || !f.ready ? -1 : f.applied;
    }

    /** The node an instance's copy is read from ("" standalone; null while unresolved or not followed). */
    String nodeOf(String instanceId) {
        Follow f = follows.get(instanceId);
        Node n = f == null ? null : f.node;
        return n == null ? null : n.addr;
    }

    void pauseForTest(boolean p) {
        paused = p;
    }

    // ---- the follower --------------------------------------------------------------------------------------

    private void run() {
        long backoffMs = 10;
        while (!closed) {
            try {
                if (paused) {
                    Thread.sleep(pollMs);
                    continue;
                }
                long t0 = System.nanoTime();
                long applied = entries.sum() + resyncs.sum();
                if (follows.isEmpty()) {
                    dropIdle(Map.of());
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(pollMs));
                    continue;
                }
                boolean more = pollAll(t0);
                // after a poll, which asks each node who it is on a new connection, so a full read is of that
                // server; a slice of pages at a time, polling in between
                long sliceEnd = System.nanoTime() + SCAN_SLICE_NANOS;
                for (Follow f : follows.values()) {
                    if (f.ready || closed) {
                        continue;
                    }
                    Node n = f.node;
                    if (n == null) {
                        if ((n = resolve(f)) == null) {
                            continue; // the slot map could not be read; the other copies go on meanwhile
                        }
                    }
                    if (System.nanoTime() - n.retryAt < 0) {
                        continue; // backing off; reads of this instance go to Redis meanwhile
                    }
                    more = true;
                    if (System.nanoTime() < sliceEnd) {
                        try {
                            resync(f, n, sliceEnd);
                        } catch (RedisStoreException e) {
                            if (closed) {
                                return;
                            }
                            fail(n, e);
                        }
                    }
                }
                backoffMs = 10;
                long now = System.nanoTime();
                if (more || entries.sum() + resyncs.sum() != applied) {
                    lastChange = now;
                }
                if (!more) {
                    pause(now);
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                // not a node's failure (handled per node above), e.g. an answer of an unexpected shape: the copies
                // age past maxLag meanwhile, so reads go to Redis until the follower is back
                LOG.warnf("index copy: following the change streams failed (%s); retrying in %d ms", e.getMessage(),
                        backoffMs);
                source.stale();
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(1000, backoffMs * 2);
            }
        }
    }

    /** Parks until the next poll: {@code pollMs}, or a doze while nobody reads and nothing changes. */
    private void pause(long now) {
        if (idleAfterNanos > 0 && now - lastChange > idleAfterNanos && now - lastAsked > idleAfterNanos) {
            dozing = true;
            // a read that saw dozing still false wrote lastAsked before: look again
            if (System.nanoTime() - lastAsked > idleAfterNanos) {
                java.util.concurrent.locks.LockSupport.parkNanos(dozeNanos);
            }
            dozing = false;
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(pollMs));
        }
    }

    private Node node(String addr) {
        return nodes.computeIfAbsent(addr, Node::new);
    }

    /** When the slot map may be asked for again after a failure, and how long the next wait is. */
    private long mapRetryAt;
    private long mapBackoffMs = 10;

    /** The node a follow is read from, looked up (in a cluster, in the slot map); null while that fails. */
    private Node resolve(Follow f) {
        if (System.nanoTime() - mapRetryAt < 0) {
            return null;
        }
        try {
            Node n = f.node = node(source.nodeOf(f.index.stream()));
            mapBackoffMs = 10;
            return n;
        } catch (RuntimeException e) {
            if (mapBackoffMs == 10) { // the first of a run of failures; the rest at debug
                LOG.warnf("index copy: cannot tell which node serves %s (%s); retrying, its reads go to Redis",
                        f.index.instanceId(), e.getMessage());
            } else {
                LOG.debugf("index copy: slot map still unavailable (%s)", e.getMessage());
            }
            mapRetryAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(mapBackoffMs);
            mapBackoffMs = Math.min(1000, mapBackoffMs * 2);
            return null;
        }
    }

    /**
     * A node's poll or full read failed (the connection is lost or timed out, or the node redirects: its slots
     * moved, it was demoted): every copy read from it is read again, from whichever node then holds its slot, once
     * a backoff has passed.
     */
    private void fail(Node n, RuntimeException e) {
        nodeFailures.increment();
        if (n.backoffMs == 10) { // the first of a run of failures (a slot moving redirects a few times); the rest at debug
            LOG.warnf("index copy: reading from %s failed (%s); its copies are read again from %d ms on",
                    n.addr.isEmpty() ? "Redis" : n.addr, e.getMessage(), n.backoffMs);
        } else {
            LOG.debugf("index copy: reading from %s failed again (%s); next try in %d ms", n.addr, e.getMessage(),
                    n.backoffMs);
        }
        for (Follow f : follows.values()) {
            if (f.node == n) {
                f.ready = false;
                f.scan = null;
                f.node = null;
            }
        }
        drop(n);
        source.stale();
        n.retryAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(n.backoffMs);
        n.backoffMs = Math.min(1000, n.backoffMs * 2);
    }

    /** Closes the connections of nodes no follow is read from any more. */
    private void dropIdle(Map<Node, List<Follow>> used) {
        for (Node n : nodes.values()) {
            if (n.conn != null && !used.containsKey(n)) {
                drop(n);
            }
        }
    }

    /**
     * One round trip per node, all nodes at once, each pipelined: who the server is (on a new connection and
     * every {@code checkMs}), each followed counter, then XREAD of what is new in each stream that had news in the
     * last poll (one whose counter moves meanwhile is read in a poll sent right after). The counters are read
     * before the XREAD, so once every copy of a node has applied up to its counter, it held everything appended
     * before this poll was sent: that node's copies are {@link Node#fresh} as of {@code t0}. (Not XREAD BLOCK's
     * timeout: an idle Redis answers it only at its next {@code serverCron}, 100 ms late with the default
     * {@code hz 10}.) True when more may be waiting.
     */
    private boolean pollAll(long t0) {
        Map<Node, List<Follow>> byNode = new java.util.HashMap<>();
        for (Follow f : follows.values()) {
            Node n = f.node;
            if (n != null) {
                byNode.computeIfAbsent(n, k -> new ArrayList<>()).add(f);
            }
        }
        dropIdle(byNode);
        List<Node> sent = new ArrayList<>(byNode.size());
        for (Map.Entry<Node, List<Follow>> e : byNode.entrySet()) {
            Node n = e.getKey();
            if (t0 - n.retryAt < 0) {
                continue;
            }
            try {
                if (send(n, e.getValue(), t0)) {
                    sent.add(n);
                }
            } catch (RedisStoreException ex) {
                fail(n, ex);
            }
        }
        boolean more = false;
        for (Node n : sent) {
            try {
                more |= receive(n, t0);
            } catch (RedisStoreException ex) {
                if (closed) {
                    return false;
                }
                fail(n, ex);
            }
        }
        return more;
    }

    /** Sends one node's poll; false when there was nothing to ask (it is then fresh as of {@code t0}). */
    private boolean send(Node n, List<Follow> fs, long t0) {
        List<Follow> ready = new ArrayList<>(fs.size());
        for (Follow f : fs) {
            if (f.ready) {
                ready.add(f);
            }
        }
        RedisConnection c = connection(n);
        boolean withInfo = !n.identityUnavailable && (n.checkNow || t0 - n.lastCheck >= checkNanos);
        if (!withInfo && ready.isEmpty()) {
            n.fresh = t0;
            return false;
        }
        List<Request> reqs = new ArrayList<>(ready.size() * 2 + 1);
        if (withInfo) {
            reqs.add(info());
        }
        // the counters: one MGET where every key lives on this server; a cluster keeps each instance in a slot of its
        // own, and a multi-key command must stay inside one
        if (source.oneReadForAll() && !ready.isEmpty()) {
            Request mget = Request.cmd(Command.MGET);
            for (Follow f : ready) {
                mget.arg(f.index.streamSeq());
            }
            reqs.add(mget);
        } else {
            for (Follow f : ready) {
                reqs.add(Request.cmd(Command.GET).arg(f.index.streamSeq()));
            }
        }
        List<Follow> hot = new ArrayList<>(ready.size());
        for (Follow f : ready) {
            if (f.hot) {
                hot.add(f);
            }
        }
        if (!hot.isEmpty()) {
            streamsRead.add(hot.size());
            // in a cluster each instance's stream is in a slot of its own, and XREAD must stay inside one
            List<List<Follow>> reads = source.oneReadForAll() ? List.of(hot) : hot.stream().map(List::of).toList();
            for (List<Follow> group : reads) {
                Request x = Request.cmd(Command.XREAD).arg("COUNT").arg(READ_COUNT).arg("STREAMS");
                for (Follow f : group) {
                    x.arg(f.index.stream());
                }
                for (Follow f : group) {
                    x.arg(f.lastId);
                }
                reqs.add(x);
            }
        }
        n.withInfo = withInfo;
        n.polled = ready;
        n.streamed = hot;
        n.pending = c.batch(reqs);
        polls.increment();
        return true;
    }

    private boolean receive(Node n, long t0) {
        List<Follow> ready = n.polled, streamed = n.streamed;
        boolean withInfo = n.withInfo;
        n.polled = null;
        n.streamed = null;
        List<Response> got;
        try {
            got = await(n.pending, store.options().timeout().toMillis(), "poll of the change streams");
        } catch (RedisStoreException e) {
            if (!withInfo || !refused(e)) {
                throw e;
            }
            // INFO is not allowed (an ACL, a managed service): counters and stream numbers still guard the copy
            LOG.warnf("index copy: the server refuses INFO (%s); a failover that loses changes may go unnoticed",
                    e.getMessage());
            n.identityUnavailable = true;
            return true;
        } finally {
            n.pending = null;
        }
        int at = 0;
        if (withInfo) {
            if (!identify(n, got.get(at++).toString(), t0)) {
                return true;
            }
        } else if (n.checkNow) {
            n.checkNow = false; // the server refuses INFO
        }
        if (ready.isEmpty()) {
            n.fresh = t0;
            return false;
        }
        long[] counters = new long[ready.size()];
        Response mget = source.oneReadForAll() ? got.get(at) : null; // ready is not empty here
        for (int i = 0; i < ready.size(); i++) {
            Response q = mget != null ? mget.get(i) : got.get(at + i);
            Follow f = ready.get(i);
            counters[i] = q == null ? -1 : q.toLong();
            if (counters[i] < f.lastSeq) {
                // went missing or backwards: Redis lost it
                LOG.infof("index copy of %s: change counter %s, last applied %d; reading it again",
                        f.index.instanceId(), q, f.lastSeq);
                f.ready = false;
            }
        }
        at += mget != null ? 1 : ready.size();
        long before = entries.sum();
        Map<Follow, Integer> read = new java.util.HashMap<>();
        Map<String, Follow> byStream = new java.util.HashMap<>();
        for (Follow f : streamed) {
            byStream.put(f.index.stream(), f);
        }
        for (; at < got.size(); at++) {
            Response r = got.get(at);
            if (r == null) {
                continue;
            }
            // RESP3 answers a map of stream → entries, RESP2 a list of [stream, entries]
            if (!r.getKeys().isEmpty()) {
                for (String k : r.getKeys()) {
                    apply(byStream.get(k), r.get(k), read);
                }
            } else {
                for (int i = 0; i < r.size(); i++) {
                    Response pair = r.get(i);
                    apply(byStream.get(pair.get(0).toString()), pair.get(1), read);
                }
            }
        }
        boolean current = true;
        for (int i = 0; i < ready.size(); i++) {
            Follow f = ready.get(i);
            boolean wasRead = f.hot; // only this thread changes it, and not between a poll's send and receive
            // read next time: news now, or maybe more to come (the stream had news); a stream read and found
            // without news goes quiet. A quiet stream whose counter moved leaves this poll not current (below),
            // so the next poll, which reads it, is sent at once
            f.hot = f.lastSeq < counters[i] || read.getOrDefault(f, 0) > 0;
            if (wasRead && f.ready && f.lastSeq < counters[i] && read.getOrDefault(f, 0) < READ_COUNT) {
                // each number's entry is appended with it, before this XREAD: these are gone (trimmed, or the
                // counter was created again and jumped ahead)
                LOG.infof("index copy of %s: change counter %d, but the stream ends at %d; reading it again",
                        f.index.instanceId(), counters[i], f.lastSeq);
                f.ready = false;
            }
            current &= f.ready && f.lastSeq >= counters[i];
            f.index.ownApplied(f.applied);
        }
        if (current) {
            n.fresh = t0;
        }
        n.backoffMs = 10; // copies read from here were polled: the node works again
        return !current || entries.sum() > before;
    }

    /** Who the server is: its run id and replication id. */
    private static Request info() {
        return Request.cmd(Command.INFO).arg("server").arg("replication");
    }

    /**
     * Records who the server is; when that changed since the last check (a restart, a failover), every copy read
     * from it is read again, and false is answered.
     */
    private boolean identify(Node n, String info, long t0) {
        String id = identity(info);
        n.lastCheck = t0;
        n.checkNow = false;
        if (n.server != null && !n.server.equals(id)) {
            LOG.infof("index copy: the server %s changed (%s, was %s): a restart or failover; reading its copies again",
                    n.addr.isEmpty() ? "" : n.addr, id, n.server);
            n.server = id;
            for (Follow f : follows.values()) {
                if (f.node == n) {
                    f.ready = false;
                    f.scan = null; // a full read in progress read the other server
                }
            }
            return false;
        }
        n.server = id;
        return true;
    }

    /** Applies one stream's entries (at most {@link #READ_COUNT}; a poll compares with the counter for more). */
    private void apply(Follow f, Response list, Map<Follow, Integer> read) {
        if (f == null || list == null) {
            return;
        }
        read.put(f, list.size());
        for (int i = 0; i < list.size() && f.ready; i++) {
            Response e = list.get(i);
            applyEntry(f, e.get(0).toString(), e.get(1));
        }
    }

    private void applyEntry(Follow f, String id, Response fields) {
        // q <number> c <changes> | q <number> ! clear|drop (see Lua.MIRROR)
        long seq = fields.size() == 4 && "q".equals(fields.get(0).toString()) ? fields.get(1).toLong() : -1;
        if (seq != f.lastSeq + 1) {
            LOG.infof("index copy of %s: change %d after %d (trimmed or lost); reading it again",
                    f.index.instanceId(), seq, f.lastSeq);
            f.ready = false;
            return;
        }
        ServedMap m = f.serving;
        String kind = fields.get(2).toString();
        if ("!".equals(kind)) {
            m.clear();
            if ("drop".equals(fields.get(3).toString())) {
                f.ready = false;
                follows.remove(f.index.instanceId(), f);
            }
        } else {
            decode(fields.get(3).toBytes(), (key, value, off, len) -> {
                long[] locs = len == 0 ? null : servedLocs(value, off, len);
                if (locs == null) {
                    m.remove(key);
                } else {
                    m.put(key, locs);
                }
            });
        }
        f.lastSeq = seq;
        f.lastId = id;
        f.applied = seq;
        entries.increment();
    }

    /** One field of a change entry: its block key and value ({@code len} 0: the field was deleted). */
    interface Change {
        void accept(long key, byte[] buf, int off, int len);
    }

    /** A change entry as {@link Lua}'s {@code mirror} writes it: per field, 8 bytes, a 2-byte length, the value. */
    static byte[] encode(List<byte[]> pairs, List<byte[]> dels) {
        int n = 0;
        for (int i = 0; i < pairs.size(); i += 2) {
            n += 10 + pairs.get(i + 1).length;
        }
        n += 10 * dels.size();
        byte[] out = new byte[n];
        int p = 0;
        for (int i = 0; i < pairs.size(); i += 2) {
            byte[] v = pairs.get(i + 1);
            System.arraycopy(pairs.get(i), 0, out, p, 8);
            out[p + 8] = (byte) (v.length >>> 8);
            out[p + 9] = (byte) v.length;
            System.arraycopy(v, 0, out, p + 10, v.length);
            p += 10 + v.length;
        }
        for (byte[] d : dels) {
            System.arraycopy(d, 0, out, p, 8); // length 0: deleted
            p += 10;
        }
        return out;
    }

    static void decode(byte[] buf, Change to) {
        int p = 0;
        while (p + 10 <= buf.length) {
            long key = Codec.get(buf, p);
            int len = ((buf[p + 8] & 0xff) << 8) | (buf[p + 9] & 0xff);
            if (p + 10 + len > buf.length) {
                throw new RedisStoreException("index copy: a change entry ends inside a value");
            }
            to.accept(key, buf, p + 10, len);
            p += 10 + len;
        }
        if (p != buf.length) {
            throw new RedisStoreException("index copy: a change entry ends inside a field");
        }
    }

    /**
     * A block's SERVING locations (all a reader looks at) as (a, b) pairs from its stored value
     * {@code value[off, off + len)} (meta word, then 16 bytes a location), or null when it has none.
     */
    static long[] servedLocs(byte[] value, int off, int len) {
        if (len < 8 + 16 || (len - 8) % 16 != 0) {
            return null;
        }
        long[] locs = new long[(len - 8) / 8];
        for (int j = 0; j < locs.length; j++) {
            locs[j] = Codec.get(value, off + 8 + 8 * j);
        }
        int n = 0;
        for (int j = 0; j < locs.length; j += 2) {
            if (BlockState.served(Loc.status(locs[j]))) {
                n++;
            }
        }
        if (n == 0) {
            return null;
        }
        if (n * 2 != locs.length) {
            long[] kept = new long[n * 2];
            for (int j = 0, k = 0; j < locs.length; j += 2) {
                if (BlockState.served(Loc.status(locs[j]))) {
                    kept[k++] = locs[j];
                    kept[k++] = locs[j + 1];
                }
            }
            locs = kept;
        }
        return locs;
    }

    /** {@code run_id/master_replid} from an INFO answer. */
    static String identity(String info) {
        return field(info, "run_id:") + "/" + field(info, "master_replid:");
    }

    /** The value of one {@code name:value} line of an INFO answer. */
    private static String field(String info, String name) {
        int at = info.startsWith(name) ? 0 : info.indexOf("\n" + name);
        if (at < 0) {
            throw new RedisStoreException("index copy: INFO names no " + name.substring(0, name.length() - 1));
        }
        int from = at == 0 ? name.length() : at + 1 + name.length();
        int end = info.indexOf('\n', from);
        return info.substring(from, end < 0 ? info.length() : end).trim();
    }

    private static boolean refused(RedisStoreException e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("NOPERM") || m.contains("unknown command");
    }

    /**
     * Starts (again) from the stream's head and a full scan of the blocks, continuing a scan in progress: pages
     * until {@code until}, then back to polling the others. Entries after the head overwrite what the scan saw.
     */
    private void resync(Follow f, Node n, long until) {
        RedisIndex ix = f.index;
        Scan sc = f.scan;
        if (sc == null) {
            connection(n);
            if (n.checkNow && !n.identityUnavailable) {
                // a new connection (maybe another server): know who it is before reading anything from it
                try {
                    identify(n, call(n, info(), "INFO")
                            .toString(), System.nanoTime());
                } catch (RedisStoreException e) {
                    if (!refused(e)) {
                        throw e;
                    }
                    LOG.warnf("index copy: the server refuses INFO (%s); a failover that loses changes may go "
                            + "unnoticed", e.getMessage());
                    n.identityUnavailable = true;
                }
            }
            Response live = call(n, Request.cmd(Command.GET).arg(ix.liveKey()), "check index of " + ix.instanceId());
            if (live == null || !ix.incarnation().equals(live.toString())) {
                follows.remove(ix.instanceId(), f); // dropped: its index object is stale, reads go to Redis and miss
                return;
            }
            Response head = call(n, Request.cmd(Command.EVAL).arg(Lua.MIRROR_HEAD.body()).arg(2).arg(ix.stream())
                    .arg(ix.streamSeq()), "change stream head of " + ix.instanceId());
            sc = f.scan = new Scan(head.get(0).toLong(), head.get(1).toString());
        }
        do {
            Runnable hook = pageHook;
            if (hook != null) {
                hook.run();
            }
            Response page = call(n, Request.cmd(Command.HSCAN).arg(ix.blocksKey()).arg(sc.cursor).arg("COUNT")
                    .arg(store.options().pageSize()), "copy index of " + ix.instanceId());
            sc.cursor = page.get(0).toString();
            Response kv = page.get(1);
            // RESP2 and RESP3 both answer HSCAN's pairs flat
            for (int j = 0; j + 1 < kv.size(); j += 2) {
                byte[] v = kv.get(j + 1).toBytes();
                long[] locs = v == null ? null : servedLocs(v, 0, v.length);
                if (locs != null) {
                    sc.m.put(Codec.key(kv.get(j).toBytes()), locs);
                }
            }
            if ("0".equals(sc.cursor)) {
                break;
            }
            if (closed || System.nanoTime() >= until) {
                return; // more pages next time round
            }
        } while (true);
        if (sc.seq < f.lastSeq) {
            ix.resetOwnChanges(sc.seq); // the counter restarted: numbers from before it mean nothing now
        }
        f.scan = null;
        f.serving = sc.m;
        f.lastId = sc.id;
        f.lastSeq = sc.seq;
        f.applied = sc.seq;
        f.hot = true; // what was appended during the full read is read in the next poll, not one after
        f.ready = true;
        ix.ownApplied(sc.seq);
        n.backoffMs = 10;
        resyncs.increment();
        LOG.infof("index copy of %s: %d served blocks read in %d ms%s, following from change %d",
                ix.instanceId(), sc.m.size(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sc.t0),
                n.addr.isEmpty() ? "" : " from " + n.addr, sc.seq);
    }

    /** Tests: runs before each page of a full read, to make one slow. */
    volatile Runnable pageHook;

    private Response call(Node n, Request r, String what) {
        return await(connection(n).send(r), store.options().timeout().toMillis(), what);
    }

    private RedisConnection connection(Node n) {
        if (n.conn == null) {
            n.checkNow = true; // maybe another server now: ask who it is before reading anything
            n.client = source.client(n.addr);
            try {
                n.conn = await(n.client.connect(), store.options().timeout().toMillis(),
                        "connect" + (n.addr.isEmpty() ? "" : " to " + n.addr));
            } catch (RuntimeException e) {
                n.client.close();
                n.client = null;
                throw e;
            }
        }
        return n.conn;
    }

    private void drop(Node n) {
        n.checkNow = true;
        for (Follow f : follows.values()) {
            if (f.node == n) {
                f.scan = null; // a cursor belongs to its server: full reads start again after the identity check
            }
        }
        if (n.conn != null) {
            n.conn.close();
            n.conn = null;
        }
        if (n.client != null) {
            n.client.close();
            n.client = null;
        }
    }

    private static <T> T await(io.vertx.core.Future<T> f, long timeoutMs, String what) {
        try {
            return f.toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new RedisStoreException("index copy: " + what + " failed: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new RedisStoreException("index copy: no answer to " + what + " within " + timeoutMs + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RedisStoreException("index copy: interrupted during " + what, e);
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Node n : nodes.values()) {
            drop(n);
        }
    }
}
