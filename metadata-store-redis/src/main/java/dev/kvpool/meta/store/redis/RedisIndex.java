package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.BlockState;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocArrays;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.index.Transition;
import dev.kvpool.meta.index.WriteSession;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.random.RandomGenerator;

/**
 * One instance's index in Redis (see {@link RedisStore} for the key layout and the compare-and-set scheme). The
 * decisions below mirror the embedded store line by line; only where they are applied differs.
 */
final class RedisIndex implements InstanceIndex {
    private static final byte[] ABSENT = new byte[0];
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(RedisIndex.class);
    private static final byte[] NO_UPDATE = new byte[0];
    private static final byte[] DELETE = {'-'};
    private static final byte NEW = 'N', KEEP_META = 'L', EQUALS = '=';

    private final RedisStore store;
    private final Calls calls;
    private final String instanceId;
    private final String incarnation;
    private final String live, blocks, sessionSet, expiredSet, sessionPrefix, taint, stream, streamSeq;
    /**
     * The highest change number this replica's own writes got from the change stream: the local copy answers
     * only once it has applied that far, so a replica always reads its own writes (see {@link RedisMirror}).
     */
    private final java.util.concurrent.atomic.AtomicLong ownChanges = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean dropped;
    /**
     * Sessions this replica started with {@link Lua#START_ABSENT}, for {@link Lua#FINISH_FAST}: what the start
     * wrote and the taint counter it saw. Bounded by {@link #PENDING_KEYS_MAX} keys; a session not here (finished
     * elsewhere, started before a restart, or over the bound) takes the reading {@link Lua#FINISH}.
     */
    private final Map<String, Pending> pending = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong pendingKeys = new java.util.concurrent.atomic.AtomicLong();
    static final long PENDING_KEYS_MAX = 1L << 18;

    /** A session's header, the taint counter its start saw, its keys' word A (any status) and B, their meta. */
    private record Pending(byte[] header, String taint, WriteSession session, long[] a, long[] b, long meta) {
    }

    RedisIndex(RedisStore store, String instanceId, String incarnation) {
        this.store = store;
        this.calls = store.calls();
        this.instanceId = instanceId;
        this.incarnation = incarnation;
        String base = store.instanceBase(instanceId);
        this.live = base + "live";
        this.blocks = base + "b";
        this.sessionSet = base + "ss";
        this.expiredSet = base + "sx";
        this.sessionPrefix = base + "s:";
        this.taint = base + "wt";
        this.stream = base + "m";
        this.streamSeq = base + "mq";
    }

    String stream() {
        return stream;
    }

    String streamSeq() {
        return streamSeq;
    }

    String blocksKey() {
        return blocks;
    }

    String liveKey() {
        return live;
    }

    long ownChanges() {
        return ownChanges.get();
    }

    /** A write of this replica got change number {@code seq} (0: the stream is off); its entry is not known here. */
    private void changed(long seq) {
        changed(seq, null);
    }

    /**
     * A write of this replica got change number {@code seq} (0: the stream is off), with the change entry it
     * appended ({@code entry}, null when a script computed it). Until the local copy has applied it, this
     * replica's reads of the instance are answered from the copy patched with such entries, or, when one is not
     * known here, from Redis.
     */
    private void changed(long seq, byte[] entry) {
        if (seq > 0) {
            RedisMirror m = store.mirror();
            // recorded before the number is published: a reader that sees the number finds the entry or the gap
            if (m != null) {
                if (entry != null && ownPendingCount.get() < OWN_PENDING_MAX) {
                    ownPending.put(seq, RedisMirror.OwnEntry.of(entry));
                    ownPendingCount.incrementAndGet();
                } else {
                    ownUncovered.accumulateAndGet(seq, Math::max);
                }
            }
            ownChanges.accumulateAndGet(seq, Math::max);
            if (m != null) {
                m.nudge(); // the copy applies it one poll from now
            }
        }
    }

    /** Own entries kept for reads before the copy applies them; past this the reads go to Redis. */
    private static final int OWN_PENDING_MAX = 256;
    /** This replica's change entries the copy may not have applied yet, by number. */
    private final java.util.concurrent.ConcurrentSkipListMap<Long, RedisMirror.OwnEntry> ownPending =
            new java.util.concurrent.ConcurrentSkipListMap<>();
    /** Entries in {@link #ownPending} (the skip list's size() walks it, and a finish asks). */
    private final java.util.concurrent.atomic.AtomicInteger ownPendingCount =
            new java.util.concurrent.atomic.AtomicInteger();
    /** The highest change number of this replica whose entry is not in {@link #ownPending}. */
    private final java.util.concurrent.atomic.AtomicLong ownUncovered = new java.util.concurrent.atomic.AtomicLong();

    long ownUncovered() {
        return ownUncovered.get();
    }

    /** The own entries numbered after {@code applied}, oldest first (a snapshot). */
    List<RedisMirror.OwnEntry> ownPendingAfter(long applied) {
        return new ArrayList<>(ownPending.tailMap(applied, false).values());
    }

    int ownPendingCount() {
        return ownPendingCount.get();
    }

    /** The copy has applied every change up to {@code upTo}: the own entries it holds are no longer needed. */
    void ownApplied(long upTo) {
        for (var e = ownPending.firstEntry(); e != null && e.getKey() <= upTo; e = ownPending.firstEntry()) {
            if (ownPending.remove(e.getKey(), e.getValue())) {
                ownPendingCount.decrementAndGet();
            }
        }
    }

    /** After a resync from a counter that restarted (Redis lost it), numbers from before mean nothing. */
    void resetOwnChanges(long upTo) {
        ownApplied(Long.MAX_VALUE);
        ownUncovered.accumulateAndGet(upTo, Math::min);
        ownChanges.accumulateAndGet(upTo, Math::min);
    }

    String incarnation() {
        return incarnation;
    }

    boolean dropped() {
        return dropped;
    }

    void markDropped() {
        dropped = true;
        RedisMirror m = store.mirror();
        if (m != null) {
            m.unfollow(this);
        }
    }

    @Override
    public boolean remoteReads() {
        return true;
    }

    /** The live key still names this incarnation; once it does not, this object stays dropped. */
    @Override
    public boolean alive() {
        if (dropped) {
            return false;
        }
        Response r = calls.send(Request.cmd(Command.GET).arg(live), "check index of " + instanceId);
        if (r == null || !incarnation.equals(r.toString())) {
            markDropped();
        }
        return !dropped;
    }

    @Override
    public String instanceId() {
        return instanceId;
    }

    @Override
    public long keyCount() {
        return calls.send(Request.cmd(Command.HLEN).arg(blocks), "key count of " + instanceId).toLong();
    }

    // ---- reads ---------------------------------------------------------------------------------------------

    @Override
    public Block get(long key) {
        Response r = calls.send(Request.cmd(Command.HGET).arg(blocks).arg(Codec.field(key)), "get " + instanceId);
        return Codec.block(key, Calls.bytes(r));
    }

    @Override
    public void getAll(long[] keys, int off, int len, Block[] out) {
        if (len == 0) {
            return;
        }
        byte[][] values = read(keys, off, len, "getAll " + instanceId);
        for (int i = 0; i < len; i++) {
            out[i] = Codec.block(keys[off + i], values[i]);
        }
    }

    /** One pipelined round trip on the client's own thread: the caller (an event loop) never waits. */
    @Override
    public java.util.concurrent.CompletionStage<Void> getAllAsync(long[] keys, int off, int len, Block[] out) {
        if (len == 0) {
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
        return calls.batchAsync(readRequests(keys, off, len), "getAll " + instanceId).thenAccept(answers -> {
            byte[][] v = values(answers, len);
            for (int i = 0; i < len; i++) {
                out[i] = Codec.block(keys[off + i], v[i]);
            }
        });
    }

    /** From the local copy when it may answer (see {@link RedisMirror}), else {@link #getAllAsync}. */
    @Override
    public java.util.concurrent.CompletionStage<Void> servingAsync(long[] keys, int off, int len, Block[] out) {
        RedisMirror m = store.mirror();
        if (m != null && m.answer(this, keys, off, len, out)) {
            return DONE;
        }
        return getAllAsync(keys, off, len, out);
    }

    private static final java.util.concurrent.CompletionStage<Void> DONE =
            java.util.concurrent.CompletableFuture.completedStage(null);

    /** Current values of the keys (null when absent): HMGETs of batchSize keys, pipelined: one round trip. */
    private byte[][] read(long[] keys, int off, int len, String what) {
        return values(calls.batch(readRequests(keys, off, len), what), len);
    }

    /** The HMGET answers of {@link #readRequests}, flattened in key order. */
    private static byte[][] values(List<Response> answers, int len) {
        byte[][] out = new byte[len][];
        for (int c = 0, i = 0; c < answers.size(); c++) {
            Response a = answers.get(c);
            for (int j = 0; j < a.size(); j++) {
                out[i++] = Calls.bytes(a.get(j));
            }
        }
        return out;
    }

    private List<Request> readRequests(long[] keys, int off, int len) {
        int batch = store.options().batchSize();
        List<Request> rs = new ArrayList<>((len + batch - 1) / batch);
        for (int s = 0; s < len; s += batch) {
            Request r = Request.cmd(Command.HMGET).arg(blocks);
            for (int i = s; i < Math.min(len, s + batch); i++) {
                r.arg(Codec.field(keys[off + i]));
            }
            rs.add(r);
        }
        return rs;
    }

    @Override
    public void touch(long[] keys, int off, int len, int nowSec) {
        int[] once = new int[len];
        java.util.Arrays.fill(once, 1);
        touch(off == 0 ? keys : Arrays.copyOfRange(keys, off, off + len), once, len, nowSec);
    }

    @Override
    public void touch(long[] keys, int[] hits, int len, int nowSec) {
        if (len == 0) {
            return;
        }
        // access time is advisory, as in the embedded store: each chunk is its own script, all in one pipeline
        long arel = Codec.relSec(nowSec);
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int batch = store.options().batchSize();
        List<Request> rs = new ArrayList<>();
        for (int s = 0; s < len; s += batch) {
            List<Object> args = new ArrayList<>();
            args.add(arel);
            for (int i = s; i < Math.min(len, s + batch); i++) {
                args.add(Codec.field(keys[i]));
                args.add((long) Math.max(1, hits[i]));
                args.add(rnd.nextLong(1L << 32));
            }
            rs.add(scriptRequest(Lua.TOUCH, List.of(blocks), args));
        }
        try {
            calls.batch(rs, "touch " + instanceId);
        } catch (RedisStoreException e) {
            if (!noScript(e)) {
                throw e;
            }
            // the server lost its scripts: reload once (EVAL caches it) and send again; a chunk that did run
            // counts its hits twice, which the advisory counter tolerates
            calls.eval(Lua.TOUCH, List.of(blocks), List.of(arel), "load touch script");
            calls.batch(rs, "touch " + instanceId);
        }
    }

    private static Request scriptRequest(Lua.Script s, List<?> keys, List<?> args) {
        Request r = Request.cmd(Command.EVALSHA).arg(s.sha()).arg(keys.size());
        keys.forEach(k -> Calls.arg(r, k));
        args.forEach(a -> Calls.arg(r, a));
        return r;
    }

    private static boolean noScript(RedisStoreException e) {
        return e.getCause() != null && e.getCause().getMessage() != null
                && e.getCause().getMessage().contains("NOSCRIPT");
    }

    // ---- startWrite ----------------------------------------------------------------------------------------

    @Override
    public StartResult startWrite(long[] keys, long[] a, long[] b, int minReplicas, IntPredicate storageUsable,
                                  long maxKeys, String sessionId, long deadlineMs, int nowSec) {
        InstanceIndex.checkStart(keys, a, b, sessionId);
        int n = keys.length;
        // a repeated key inside one request counts as existing: only its first position is considered
        int[] first = new int[n];
        int distinct = 0;
        Map<Long, Boolean> seen = new HashMap<>(n * 2);
        for (int i = 0; i < n; i++) {
            if (seen.putIfAbsent(keys[i], Boolean.TRUE) == null) {
                first[distinct++] = i;
            }
        }
        // tells this claim from a later one of the same id (after expiry); unique enough at 64 random bits
        long token = ThreadLocalRandom.current().nextLong();
        long expireAt = Math.max(deadlineMs, System.currentTimeMillis()) + store.options().sessionGrace().toMillis();
        String ownerKey = store.ownerKey(sessionId);
        // one owner per session id in the whole store: claimed together with the first attempt of the instance's
        // own atomic step (one round trip); a start whose claim failed is undone
        boolean claimed = false;
        boolean inFlight = false;
        try {
            byte[] header = Codec.sessionHeader(deadlineMs, token);
            for (int attempt = 1; ; attempt++) {
                List<Object> args = new ArrayList<>(5 + distinct * 4);
                args.add(incarnation);
                args.add(sessionId);
                args.add(expireAt);
                args.add(Math.max(0, maxKeys));
                boolean[] created = new boolean[n];
                Lua.Script script = minReplicas <= 1 ? Lua.START_ABSENT : Lua.START;
                if (minReplicas <= 1) {
                    // any replica counts: the script decides by presence alone, and keeps the whole session blob
                    // as sent when every key was absent
                    byte[] blob = Arrays.copyOf(header, Codec.SESSION_HEADER + distinct * 16);
                    long meta = Loc.meta(nowSec, nowSec);
                    for (int d = 0; d < distinct; d++) {
                        int i = first[d];
                        long wa = Transition.START_WRITE.apply(a[i]);
                        Codec.put(blob, Codec.SESSION_HEADER + d * 16, keys[i]);
                        Codec.put(blob, Codec.SESSION_HEADER + d * 16 + 8, Loc.id(wa));
                    }
                    args.add(blob);
                    for (int d = 0; d < distinct; d++) {
                        int i = first[d];
                        args.add(Codec.field(keys[i]));
                        args.add(Codec.value(Transition.START_WRITE.apply(a[i]), b[i], meta));
                    }
                } else {
                    args.add(header);
                    long[] distinctKeys = new long[distinct];
                    for (int d = 0; d < distinct; d++) {
                        distinctKeys[d] = keys[first[d]];
                    }
                    byte[][] cur = read(distinctKeys, 0, distinct, "startWrite read " + instanceId);
                    for (int d = 0; d < distinct; d++) {
                        int i = first[d];
                        long wa = Transition.START_WRITE.apply(a[i]);
                        args.add(Codec.field(keys[i]));
                        if (cur[d] == null) {
                            created[i] = true;
                            args.add(ABSENT);
                            args.add(Codec.value(NEW, Loc.meta(nowSec, nowSec), new long[] {wa, b[i]}));
                        } else {
                            long[] locs = Codec.locs(cur[d]);
                            int usable = 0;
                            for (int j = 0; j < locs.length; j += 2) {
                                if (BlockState.countsAsReplica(Loc.status(locs[j]))
                                        && (storageUsable == null || storageUsable.test(Loc.storage(locs[j])))) {
                                    usable++;
                                }
                            }
                            args.add(expectLocs(locs));
                            if (usable < minReplicas) {
                                long[] more = Arrays.copyOf(locs, locs.length + 2);
                                more[locs.length] = wa;
                                more[locs.length + 1] = b[i];
                                args.add(Codec.locs(KEEP_META, more)); // an added replica keeps the block's meta
                            } else {
                                args.add(NO_UPDATE);
                            }
                        }
                        args.add(Codec.chunk(keys[i], Loc.id(wa)));
                    }
                }
                inFlight = true;
                List<String> startKeys = List.of(live, blocks, sessionSet, sessionPrefix + sessionId, taint);
                Response r;
                if (claimed) {
                    r = calls.eval(script, startKeys, args, "startWrite " + instanceId);
                } else {
                    List<Response> rs = calls.evalAll(List.of(
                            new Calls.ScriptCall(Lua.CLAIM, List.of(ownerKey),
                                    List.of(RedisStore.ownerValue(token, instanceId), expireAt)),
                            new Calls.ScriptCall(script, startKeys, args)), "startWrite " + instanceId);
                    r = rs.get(1);
                    if (rs.getFirst() == null) {
                        inFlight = false;
                        if (r.get(0).toInteger() == 1) {
                            // another instance holds this id: take back what the start wrote (the caller frees
                            // the slots and quota of every candidate when this throws)
                            finish(sessionId, new boolean[0], "2", nowSec);
                        }
                        throw new IllegalArgumentException("write session id already open: " + sessionId);
                    }
                    claimed = true;
                }
                inFlight = false;
                int code = r.get(0).toInteger();
                switch (code) {
                    case 1 -> {
                        StartResult sr = started(r.get(1).toBytes(), first, distinct, keys, a, created,
                                minReplicas <= 1, sessionId, deadlineMs);
                        if (minReplicas <= 1 && sr.session().size() > 0) {
                            remember(sr, header, r.get(2).toString(), a, b, nowSec);
                        }
                        return sr;
                    }
                    case -1 -> backoff(attempt, "startWrite");
                    case -2 -> {
                        dropped = true;
                        throw new dev.kvpool.meta.index.IndexDroppedException(instanceId);
                    }
                    case -3 -> {
                        store.releaseOwner(sessionId, token, instanceId); // a refused start leaves the id free
                        return new StartResult(true, new boolean[n], new boolean[n], null);
                    }
                    case -4 -> throw new IllegalArgumentException("write session id already open: " + sessionId);
                    default -> throw new RedisStoreException("startWrite script answered " + code);
                }
            }
        } catch (RuntimeException e) {
            // when the script's answer was lost it may have run: keep the claim rather than orphan a session
            if (claimed && !(inFlight && e instanceof RedisStoreException)) {
                try {
                    store.releaseOwner(sessionId, token, instanceId);
                } catch (RuntimeException release) {
                    e.addSuppressed(release);
                }
            }
            throw e;
        }
    }

    private void remember(StartResult sr, byte[] header, String seen, long[] a, long[] b, int nowSec) {
        WriteSession s = sr.session();
        int n = s.size();
        if (pendingKeys.addAndGet(n) > PENDING_KEYS_MAX) {
            pendingKeys.addAndGet(-n);
            forgetOverdue();
            return; // this one finishes by the reading script
        }
        // the session's keys are the inserted positions in order, as started() lists them
        long[] sa = new long[n], sb = new long[n];
        boolean[] ins = sr.inserted();
        for (int i = 0, j = 0; i < ins.length; i++) {
            if (ins[i]) {
                sa[j] = a[i];
                sb[j++] = b[i];
            }
        }
        Pending old = pending.put(s.id(), new Pending(header, seen, s, sa, sb, Loc.meta(nowSec, nowSec)));
        if (old != null) {
            pendingKeys.addAndGet(-old.session().size());
        }
    }

    /** Drops remembered sessions past their deadline (their expiry finishes them by the reading script). */
    private void forgetOverdue() {
        long now = System.currentTimeMillis();
        pending.values().removeIf(p -> {
            if (p.session().deadlineMs() < now) {
                pendingKeys.addAndGet(-p.session().size());
                return true;
            }
            return false;
        });
    }

    private StartResult started(byte[] flags, int[] first, int distinct, long[] keys, long[] a, boolean[] created,
                                boolean presenceOnly, String sessionId, long deadlineMs) {
        int n = keys.length;
        boolean[] inserted = new boolean[n];
        int count = 0;
        for (int d = 0; d < distinct; d++) {
            if (flags[d] == '1') {
                inserted[first[d]] = true;
                count++;
            }
        }
        long[] sk = new long[count], sid = new long[count];
        for (int i = 0, j = 0; i < n; i++) {
            if (inserted[i]) {
                if (presenceOnly) {
                    created[i] = true; // presence-only inserts go to absent keys
                }
                sk[j] = keys[i];
                sid[j++] = Loc.id(a[i]);
            }
        }
        return new StartResult(false, inserted, created, new WriteSession(sessionId, instanceId, deadlineMs, sk, sid));
    }

    private static byte[] expectLocs(long[] locs) {
        return Codec.locs(EQUALS, locs);
    }

    private void backoff(int attempt, String what) {
        store.conflict();
        if (attempt >= store.options().maxRetries()) {
            throw new RedisStoreException(what + " on " + instanceId + ": still conflicting after " + attempt
                    + " compare-and-set attempts");
        }
        if (attempt > 2) {
            // randomised, growing pause so that the writers racing on these keys stop colliding
            LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(20_000L, 200_000L) * Math.min(attempt, 20));
        }
    }

    // ---- finishWrite ---------------------------------------------------------------------------------------

    @Override
    public FinishResult finishWrite(String sessionId, boolean[] success, int nowSec) {
        // this form takes any length: positions past the session are ignored, missing ones fail
        return finish(sessionId, success == null ? new boolean[0] : success, "2", nowSec);
    }

    /**
     * One round trip: the finish script (reads the session, decides and writes every location, closes it) and the
     * release of the session id, sent together. The release needs no token: it deletes the id's claim only when
     * this instance holds it, and once the script ran the session is closed either way.
     */
    @Override
    public FinishResult finishWrite(String sessionId, boolean[] ok, boolean exactLength, int nowSec) {
        return finish(sessionId, ok, exactLength ? "1" : "0", nowSec);
    }

    private FinishResult finish(String sessionId, boolean[] ok, String fit, int nowSec) {
        if (sessionId == null) {
            return null;
        }
        Pending p = pending.remove(sessionId);
        if (p != null) {
            pendingKeys.addAndGet(-p.session().size());
            FinishResult fast = finishFast(p, ok, fit, nowSec);
            if (fast != null) {
                return fast;
            }
        }
        byte[] mask = new byte[ok.length];
        for (int i = 0; i < ok.length; i++) {
            mask[i] = (byte) (ok[i] ? '1' : '0');
        }
        List<Response> rs = calls.evalAll(List.of(
                new Calls.ScriptCall(Lua.FINISH, List.of(blocks, sessionSet, sessionPrefix + sessionId, stream, streamSeq),
                        List.of(sessionId, Codec.relSec(nowSec), fit, mask)),
                new Calls.ScriptCall(Lua.RELEASE_OWNER, List.of(store.ownerKey(sessionId)), List.of(instanceId))),
                "finishWrite " + instanceId);
        Response r = rs.getFirst();
        if (r == null) {
            return null; // unknown, finished or expired
        }
        WriteSession s = Codec.session(sessionId, instanceId, r.get(0).toBytes());
        changed(r.get(3).toLong());
        LocList failed = new LocList();
        for (int i = 4; i < r.size(); i++) {
            byte[] f = r.get(i).toBytes();
            if (f.length != 25) {
                throw new RedisStoreException("finishWrite " + instanceId + ": corrupt failed location of " + f.length
                        + " bytes");
            }
            failed.add(Codec.get(f, 0), Codec.get(f, 8), Codec.get(f, 16), f[24] == '1');
        }
        return new FinishResult(s, r.get(1).toInteger(), failed, r.get(2).toInteger() == 1);
    }

    /**
     * {@link Lua#FINISH_FAST}: the decisions of {@link Lua#FINISH}, taken here from what the start wrote. Null when
     * the script found the session changed (or gone) and wrote nothing.
     */
    private FinishResult finishFast(Pending p, boolean[] ok, String fit, int nowSec) {
        WriteSession s = p.session();
        int n = s.size();
        boolean fits = ok.length == n || ("0".equals(fit) && ok.length < n) || "2".equals(fit);
        // SERVING from now: the write time is the finish's, the access time and counter stay the start's
        long meta = (Codec.relSec(nowSec) << 34) | (p.meta() & ((1L << 34) - 1));
        List<byte[]> pairs = new ArrayList<>(2 * n), dels = new ArrayList<>();
        LocList failed = new LocList();
        for (int i = 0; i < n; i++) {
            long key = s.keys()[i];
            if (fits && i < ok.length && ok[i]) {
                pairs.add(Codec.field(key));
                pairs.add(Codec.value(Transition.FINISH_OK.apply(p.a()[i]), p.b()[i], meta));
            } else {
                dels.add(Codec.field(key));
                // FINISH_FAILED hands back the word as the start stored it; its only location
                failed.add(key, Transition.START_WRITE.apply(p.a()[i]), p.b()[i], true);
            }
        }
        int served = pairs.size() / 2;
        Calls.ScriptCall release = new Calls.ScriptCall(Lua.RELEASE_OWNER, List.of(store.ownerKey(s.id())),
                List.of(instanceId));
        int nativeFrom = store.options().nativeFinishKeys();
        boolean done;
        if (nativeFrom > 0 && n >= nativeFrom) {
            done = finishNative(p, pairs, dels, release);
        } else {
            List<Object> args = new ArrayList<>(5 + pairs.size() + dels.size());
            byte[] entry = store.mirror() == null ? null : RedisMirror.encode(pairs, dels);
            args.addAll(List.of(s.id(), p.header(), p.taint(), served, entry == null ? ABSENT : entry));
            args.addAll(pairs);
            args.addAll(dels);
            List<Response> rs = calls.evalAll(List.of(new Calls.ScriptCall(Lua.FINISH_FAST,
                    List.of(blocks, sessionSet, sessionPrefix + s.id(), taint, stream, streamSeq), args), release),
                    "finishWrite " + instanceId);
            Response r = rs.getFirst();
            done = r.type() == io.vertx.redis.client.ResponseType.MULTI; // 0 when not done
            if (done) {
                changed(r.get(1).toLong(), entry);
            }
        }
        if (!done) {
            store.fastFinishMissed();
            return null;
        }
        store.fastFinished();
        return new FinishResult(s, served, failed, fits);
    }

    /**
     * {@link Lua#FINISH_FAST}'s check and writes as native commands ({@link Calls#watched}): the session key still
     * holds the header this replica's start wrote and the taint counter is the one it saw, then HSET of the served
     * pairs, HDEL of the failed keys, the session closed.
     */
    private boolean finishNative(Pending p, List<byte[]> pairs, List<byte[]> dels, Calls.ScriptCall release) {
        String sessionKey = sessionPrefix + p.session().id();
        List<Request> reads = List.of(Request.cmd(Command.GETRANGE).arg(sessionKey).arg(0).arg(15),
                Request.cmd(Command.GET).arg(taint));
        List<Request> writes = new ArrayList<>(6);
        if (!pairs.isEmpty()) {
            Request set = Request.cmd(Command.HSET).arg(blocks);
            pairs.forEach(set::arg);
            writes.add(set);
        }
        if (!dels.isEmpty()) {
            Request del = Request.cmd(Command.HDEL).arg(blocks);
            dels.forEach(del::arg);
            writes.add(del);
        }
        writes.add(Request.cmd(Command.DEL).arg(sessionKey));
        writes.add(Request.cmd(Command.SREM).arg(sessionSet).arg(p.session().id()));
        // the change stream's entry, when it is on: numbered inside the transaction by a script, not by watching
        // the counter, which every concurrent finish of the instance raises (watching it aborted ~40 % of them)
        boolean feed = !pairs.isEmpty() || !dels.isEmpty();
        byte[] entry = feed ? RedisMirror.encode(pairs, dels) : null;
        if (feed) {
            writes.add(Request.cmd(Command.EVAL).arg(Lua.MIRROR_APPEND.body()).arg(2).arg(stream).arg(streamSeq)
                    .arg(entry));
        }
        List<Response> done = calls.watched(List.of(sessionKey, taint), reads, got -> {
            // a missing session reads as an empty range; a never-raised counter as nil, remembered as ''
            Response header = got.get(0), counter = got.get(1);
            if (header == null || !Arrays.equals(header.toBytes(), p.header())
                    || !(counter == null ? "" : counter.toString()).equals(p.taint())) {
                return null;
            }
            return writes;
        }, List.of(release), "finishWrite " + instanceId);
        if (done == null) {
            return false;
        }
        store.nativeFinished();
        if (feed) {
            Response seq = done.getLast();
            if (seq == null || seq.type() != io.vertx.redis.client.ResponseType.NUMBER) {
                // EXEC does not roll back: the blocks are written, their entry is not. Copies then miss them
                // (misses, never wrong locations: the entry only adds served blocks and drops unserved ones)
                LOG.warnf("finishWrite %s: the change stream's entry failed (%s); local copies miss these blocks",
                        instanceId, seq);
            } else {
                changed(seq.toLong(), entry);
            }
        }
        return true;
    }

    @Override
    public WriteSession session(String sessionId) {
        if (sessionId == null) {
            return null;
        }
        Response r = calls.send(Request.cmd(Command.GET).arg(sessionPrefix + sessionId), "session " + sessionId);
        return r == null ? null : Codec.session(sessionId, instanceId, r.toBytes());
    }

    @Override
    public List<WriteSession> sessions() {
        Response r = calls.eval(Lua.SESSION_LIST, List.of(sessionSet, expiredSet), List.of(sessionPrefix),
                "sessions of " + instanceId);
        List<WriteSession> out = new ArrayList<>(r.size() / 2);
        for (int i = 0; i + 1 < r.size(); i += 2) {
            out.add(Codec.session(r.get(i).toString(), instanceId, r.get(i + 1).toBytes()));
        }
        return out;
    }

    @Override
    public int sessionCount() {
        // SCARD, not the listing script: a metrics scrape must not make Redis read every open session
        return calls.send(Request.cmd(Command.SCARD).arg(sessionSet), "session count of " + instanceId).toInteger();
    }

    @Override
    public List<String> expiredUnclosed() {
        Response r = calls.send(Request.cmd(Command.SMEMBERS).arg(expiredSet), "expired sessions of " + instanceId);
        List<String> out = new ArrayList<>(r == null ? 0 : r.size());
        if (r != null) {
            r.forEach(id -> out.add(id.toString()));
        }
        return out;
    }

    @Override
    public void forgetExpiredUnclosed(java.util.Collection<String> ids) {
        if (ids.isEmpty()) {
            return;
        }
        Request req = Request.cmd(Command.SREM).arg(expiredSet);
        ids.forEach(req::arg);
        calls.send(req, "forget expired sessions of " + instanceId);
    }

    // ---- markDeleting, purge, clear ------------------------------------------------------------------------

    @Override
    public LocList markDeleting(long[] keys, int off, int len, IntPredicate skipPosition, boolean writing) {
        long[] picked = new long[len];
        int m = 0;
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int i = 0; i < len; i++) {
            long key = keys[off + i];
            if ((skipPosition != null && skipPosition.test(i)) || !seen.add(key)) {
                continue;
            }
            picked[m++] = key;
        }
        if (m == 0) {
            return new LocList();
        }
        Transition mark = Transition.markDeleting(writing);
        for (int attempt = 1; ; attempt++) {
            byte[][] cur = read(picked, 0, m, "markDeleting read " + instanceId);
            LocList moved = new LocList();
            List<Object> args = new ArrayList<>();
            boolean taints = false;
            for (int i = 0; i < m; i++) {
                if (cur[i] == null) {
                    continue; // absent: nothing to move, and nothing this call's outcome depends on
                }
                long[] locs = Codec.locs(cur[i]);
                byte[] expect = expectLocs(locs);
                boolean changed = false;
                boolean heldWriting = holdsWriting(locs);
                for (int j = 0; j < locs.length; j += 2) {
                    int was = Loc.status(locs[j]);
                    if (mark.allows(was)) {
                        locs[j] = mark.apply(locs[j]);
                        moved.add(picked[i], locs[j], locs[j + 1], false, was == BlockState.WRITING.code());
                        changed = true;
                    }
                }
                if (changed) {
                    args.add(Codec.field(picked[i]));
                    args.add(expect);
                    args.add(Codec.locs(KEEP_META, locs));
                    taints |= heldWriting;
                }
            }
            if (args.isEmpty() || casOk(args, taints, "markDeleting")) {
                return moved;
            }
            backoff(attempt, "markDeleting");
        }
    }

    /** {@link Lua#CAS}; {@code taints}: a field written holds a WRITING location (see {@link Lua#FINISH_FAST}). */
    private boolean casOk(List<Object> args, boolean taints, String what) {
        List<Object> all = new ArrayList<>(args.size() + 1);
        all.add(taints ? "1" : "0");
        all.addAll(args);
        Response r = calls.eval(Lua.CAS, List.of(blocks, taint, stream, streamSeq), all, what + " " + instanceId);
        if (r.type() != io.vertx.redis.client.ResponseType.MULTI) {
            return false; // -1: a key changed since it was read
        }
        changed(r.get(1).toLong());
        return true;
    }

    private static boolean holdsWriting(long[] locs) {
        for (int j = 0; j < locs.length; j += 2) {
            if (Loc.status(locs[j]) == BlockState.WRITING.code()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public LocList purge(long key, long locId) {
        for (int attempt = 1; ; attempt++) {
            LocList out = new LocList();
            Block b = get(key);
            if (b == null) {
                return out;
            }
            long[] locs = new long[b.size() * 2];
            for (int i = 0; i < b.size(); i++) {
                locs[i * 2] = b.a(i);
                locs[i * 2 + 1] = b.b(i);
            }
            int idx = LocArrays.indexOfId(locs, locId);
            if (idx < 0 || !Transition.PURGE.allows(Loc.status(locs[idx * 2]))) {
                return out;
            }
            long[] rest = LocArrays.without(locs, idx);
            out.add(key, locs[idx * 2], locs[idx * 2 + 1], rest.length == 0);
            List<Object> args = List.of(Codec.field(key), expectLocs(locs),
                    rest.length == 0 ? DELETE : Codec.locs(KEEP_META, rest));
            if (casOk(args, holdsWriting(locs), "purge")) {
                return out;
            }
            backoff(attempt, "purge");
        }
    }

    /** Keys per compare-and-set batch of {@link #purgeAll}, as for markDeleting. */
    private static final int PURGE_BATCH = 1024;

    /**
     * A batch of purges in two round trips per {@value #PURGE_BATCH} keys (one pipelined read, one
     * compare-and-set script) instead of two per location; a conflict retries that batch only.
     */
    @Override
    public LocList purgeAll(LocList deleting) {
        // ids to purge per key, keys in first-seen order
        Map<Long, List<Long>> ids = new java.util.LinkedHashMap<>();
        for (int i = 0; i < deleting.size(); i++) {
            ids.computeIfAbsent(deleting.key(i), k -> new ArrayList<>(1)).add(Loc.id(deleting.a(i)));
        }
        long[] keys = ids.keySet().stream().mapToLong(Long::longValue).toArray();
        LocList out = new LocList();
        for (int off = 0; off < keys.length; off += PURGE_BATCH) {
            int len = Math.min(PURGE_BATCH, keys.length - off);
            for (int attempt = 1; ; attempt++) {
                byte[][] cur = read(keys, off, len, "purge read " + instanceId);
                LocList gone = new LocList();
                List<Object> args = new ArrayList<>();
                boolean taints = false;
                for (int i = 0; i < len; i++) {
                    if (cur[i] == null) {
                        continue; // already gone: nothing to purge, nothing the outcome depends on
                    }
                    long key = keys[off + i];
                    long[] locs = Codec.locs(cur[i]);
                    long[] rest = locs;
                    int before = gone.size();
                    for (long id : ids.get(key)) {
                        int idx = LocArrays.indexOfId(rest, id);
                        if (idx >= 0 && Transition.PURGE.allows(Loc.status(rest[idx * 2]))) {
                            gone.add(key, rest[idx * 2], rest[idx * 2 + 1], false);
                            rest = LocArrays.without(rest, idx);
                        }
                    }
                    if (gone.size() == before) {
                        continue;
                    }
                    if (rest.length == 0) {
                        gone.markKeyGone(gone.size() - 1); // the key leaves with its last location
                    }
                    args.add(Codec.field(key));
                    args.add(expectLocs(locs));
                    args.add(rest.length == 0 ? DELETE : Codec.locs(KEEP_META, rest));
                    taints |= holdsWriting(locs);
                }
                if (args.isEmpty() || casOk(args, taints, "purge")) {
                    out.addAll(gone);
                    break;
                }
                backoff(attempt, "purge");
            }
        }
        return out;
    }

    @Override
    public void clear() {
        Response r = calls.eval(Lua.WIPE, List.of(live, blocks, sessionSet, expiredSet, taint, stream, streamSeq),
                List.of(incarnation, sessionPrefix, "clear"), "clear " + instanceId);
        store.releaseOwners(instanceId, r);
        if (store.mirror() != null) {
            // the marker's number: the counter has at least it now (WIPE returns the sessions)
            Response q = calls.send(Request.cmd(Command.GET).arg(streamSeq), "change number of " + instanceId);
            changed(q == null ? 0 : q.toLong());
        }
    }

    // ---- scan, sample, forEach -----------------------------------------------------------------------------

    /** Cursor = Redis' HSCAN cursor << SKIP_BITS | entries of that page already handed out. */
    private static final int SKIP_BITS = 24;
    private static final int MAX_COUNT = 1 << 16;

    @Override
    public long scan(long cursor, int max, LongConsumer sink) {
        if (max <= 0) {
            throw new IllegalArgumentException("scan page size must be positive: " + max);
        }
        long redisCursor = cursor >>> SKIP_BITS;
        int skip = (int) (cursor & ((1L << SKIP_BITS) - 1));
        int emitted = 0;
        while (true) {
            // COUNT is only a hint: the page may hold more than max, so remember how far into it we got
            Response page = calls.send(Request.cmd(Command.HSCAN).arg(blocks).arg(Long.toUnsignedString(redisCursor))
                    .arg("COUNT").arg(Math.min(max, commandKeys())), "scan " + instanceId);
            long next = Long.parseUnsignedLong(page.get(0).toString());
            Response items = page.get(1);
            int entries = items.size() / 2;
            for (int e = skip; e < entries; e++) {
                if (emitted == max) {
                    if (e >= (1 << SKIP_BITS)) {
                        throw new RedisStoreException("HSCAN page of " + entries + " entries is too large to resume");
                    }
                    return (redisCursor << SKIP_BITS) | e;
                }
                sink.accept(Codec.key(items.get(e * 2).toBytes()));
                emitted++;
            }
            skip = 0;
            redisCursor = next;
            if (next == 0) {
                return 0;
            }
            if (next >>> (64 - SKIP_BITS) != 0) {
                throw new RedisStoreException("HSCAN cursor " + next + " does not fit the scan cursor");
            }
            if (emitted == max) {
                return redisCursor << SKIP_BITS;
            }
        }
    }

    /**
     * HSCAN pages of keys and values until about {@code hint} blocks were visited: the cursor is Redis' own. Each
     * page is its own round trip of at most {@link #commandKeys} keys, so other clients' commands run between them.
     */
    @Override
    public long scanBlocks(long cursor, int hint, Consumer<Block> sink) {
        int want = Math.max(1, Math.min(hint, MAX_COUNT));
        int seen = 0;
        do {
            int ask = Math.min(want - seen, commandKeys());
            Response page = calls.send(Request.cmd(Command.HSCAN).arg(blocks).arg(Long.toUnsignedString(cursor))
                    .arg("COUNT").arg(ask), "scanBlocks " + instanceId);
            Response items = page.get(1);
            for (int i = 0; i + 1 < items.size(); i += 2) {
                long key = Codec.key(items.get(i).toBytes());
                sink.accept(Codec.block(key, items.get(i + 1).toBytes()));
            }
            seen += Math.max(items.size() / 2, ask); // a sparse table's pages come back thin: count the work asked
            cursor = Long.parseUnsignedLong(page.get(0).toString());
        } while (cursor != 0 && seen < want);
        return cursor;
    }

    /**
     * The most keys one background command (HSCAN, HRANDFIELD) may ask for. Redis runs one command at a time and
     * such a command costs about a microsecond per key: a 65,536-key page held every other client (the engines'
     * lookups included) for ~80 ms; at 1,000 keys that stall is ~1 ms, for a few more round trips.
     */
    private int commandKeys() {
        return store.options().pageSize();
    }

    /** HRANDFIELD with a positive count: distinct keys, Redis' own randomness (the generator is not used). */
    @Override
    public long[] sample(int n, RandomGenerator random) {
        var keys = new java.util.LinkedHashSet<Long>();
        draw(n, false, (f, v) -> keys.add(Codec.key(f.toBytes())));
        return keys.stream().mapToLong(Long::longValue).toArray();
    }

    /** HRANDFIELD … WITHVALUES: keys and values in one round trip per call. */
    @Override
    public Block[] sampleBlocks(int n, RandomGenerator random) {
        var out = new java.util.LinkedHashMap<Long, Block>();
        draw(n, true, (f, v) -> {
            long key = Codec.key(f.toBytes());
            out.putIfAbsent(key, Codec.block(key, v.toBytes()));
        });
        return out.values().toArray(new Block[0]);
    }

    /**
     * Draws up to {@code n} random fields (with their values when asked: RESP2 answers flat, RESP3 in pairs) in
     * HRANDFIELD calls of at most {@link #commandKeys} keys each; a field drawn by two calls reaches the sink twice.
     */
    private void draw(int n, boolean withValues, java.util.function.BiConsumer<Response, Response> sink) {
        for (int asked = 0; asked < n; ) {
            int c = Math.min(n - asked, commandKeys());
            asked += c;
            Request req = Request.cmd(Command.HRANDFIELD).arg(blocks).arg(c);
            Response r = calls.send(withValues ? req.arg("WITHVALUES") : req, "sample " + instanceId);
            if (r == null || r.size() == 0) {
                return;
            }
            boolean pairs = withValues && r.get(0).type() == io.vertx.redis.client.ResponseType.MULTI;
            int got = withValues && !pairs ? r.size() / 2 : r.size();
            for (int i = 0; i < got; i++) {
                if (!withValues) {
                    sink.accept(r.get(i), null);
                } else if (pairs) {
                    sink.accept(r.get(i).get(0), r.get(i).get(1));
                } else {
                    sink.accept(r.get(2 * i), r.get(2 * i + 1));
                }
            }
            if (got < c) { // the hash holds fewer keys than asked: it all came back
                return;
            }
        }
    }

    @Override
    public void forEach(Consumer<Block> visitor) {
        String cursor = "0";
        do {
            Response page = calls.send(Request.cmd(Command.HSCAN).arg(blocks).arg(cursor).arg("COUNT")
                    .arg(store.options().pageSize()), "forEach " + instanceId);
            cursor = page.get(0).toString();
            Response items = page.get(1);
            for (int i = 0; i + 1 < items.size(); i += 2) {
                long key = Codec.key(items.get(i).toBytes());
                visitor.accept(Codec.block(key, items.get(i + 1).toBytes()));
            }
        } while (!cursor.equals("0"));
    }
}
