package dev.kvpool.meta.write;

import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.storage.SlabFiles;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.LocList;
import dev.kvpool.meta.index.WriteSession;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Locations;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The two-phase write (§3.6) and everything that takes locations out of service: failed and expired writes,
 * RemoveCache and TrimCache (§3.7). Quota is reserved before storage is allocated and released for whatever the
 * index did not keep, so a refused or lost write leaves nothing behind. Locations leaving service go through
 * DELETING; their bytes are deleted on the deleter thread, then the metadata is purged.
 */
public final class WritePath implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(WritePath.class);
    private static final char[] ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray();
    /** The lifetime KVCM forces on a write session that allocated nothing (§3.6.1 step 8, §5.5 item 73). */
    static final int EMPTY_SESSION_TIMEOUT_SEC = 10;

    /** Write timeouts: ≤ 0 from a client means the default (KVCM would expire such a session at once). */
    public record Settings(int defaultTimeoutSec, int maxTimeoutSec) {
    }

    private final Registry registry;
    private final QuotaLedger ledger;
    private final Settings settings;
    private final ExecutorService deleter = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "kvpool-deleter");
        t.setDaemon(true);
        return t;
    });
    private final java.util.concurrent.ScheduledThreadPoolExecutor delayed =
            new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "kvpool-delete-lease");
                t.setDaemon(true);
                return t;
            });
    private final SecureRandom sessionRandom = new SecureRandom();
    private final QuotaLedger leaving = QuotaLedger.inMemory();
    public final AtomicLong sessionsExpired = new AtomicLong();
    public final AtomicLong locationsDeleted = new AtomicLong();
    public final AtomicLong filesDeleted = new AtomicLong();

    private final java.time.InstantSource clock;

    public WritePath(Registry registry, QuotaLedger ledger, Settings settings) {
        this(registry, ledger, settings, java.time.InstantSource.system());
    }

    /** With a clock of its own: simulations replay a trace's timeline through the real write path. */
    public WritePath(Registry registry, QuotaLedger ledger, Settings settings, java.time.InstantSource clock) {
        this.registry = registry;
        this.ledger = ledger;
        this.settings = settings;
        this.clock = clock;
    }

    int nowSec() {
        return (int) (clock.millis() / 1000);
    }

    /**
     * 32 characters drawn uniformly from {@link #ID_CHARS} (about 165 bits). The random bytes come in one draw (a
     * byte of 252 or more is skipped so that {@code b % 36} stays uniform): one SecureRandom call per character was
     * about 7 % of a what-if replay's time.
     */
    String newSessionId() {
        char[] c = new char[32];
        byte[] r = new byte[40];
        int i = 0;
        while (i < c.length) {
            sessionRandom.nextBytes(r);
            for (int j = 0; j < r.length && i < c.length; j++) {
                int b = r[j] & 0xff;
                if (b < 252) { // 252 = 7 × 36
                    c[i++] = ID_CHARS[b % ID_CHARS.length];
                }
            }
        }
        return new String(c);
    }

    /**
     * A started session: its id, the mask of keys already cached, and the new locations as index words (one per
     * key of {@code keys}), rendered by the caller: as messages for gRPC, or as JSON straight from the words for HTTP.
     */
    public record StartOutcome(String sessionId, Mask mask, Instance inst, Storage st, long[] keys, long[] a,
                               long[] b) {
        public static StartOutcome empty(String sessionId, Mask mask) {
            return new StartOutcome(sessionId, mask, null, null, new long[0], new long[0], new long[0]);
        }

        /** How many locations the session holds. */
        public int count() {
            return keys.length;
        }

        /** The new locations as CacheLocation messages (built on every call). */
        public List<CacheLocation> locations() {
            return render(new dev.kvpool.meta.registry.LocationSink.Protos(null)).locations();
        }

        public <S extends dev.kvpool.meta.registry.LocationSink> S render(S sink) {
            for (int i = 0; i < keys.length; i++) {
                sink.location(inst, st, keys[i], a[i], b[i]);
            }
            return sink;
        }
    }

    /**
     * Above this share of already-cached keys in recent starts, a start over a remote store looks its keys up first;
     * below it, the look-up is skipped (see {@link #start}).
     */
    static final double GUESS_NEW_BELOW = 0.2;

    public StartOutcome start(Instance inst, long[] keys, List<String> specGroupNames, int timeoutSec,
                              int minReplicas) {
        // Over a remote store the look-up is a round trip and a read of every key, which the start's atomic step
        // repeats (it inserts only absent keys): while recent starts found almost every key new, skip it and take
        // storage and quota for every key, giving back what the step did not insert. A refused quota is retried
        // with the look-up, so guessing never refuses a write that fits.
        boolean guess = minReplicas <= 1 && keys.length > 0 && inst.index.remoteReads()
                && inst.startExistingShare() < GUESS_NEW_BELOW;
        if (guess) {
            StartOutcome o = start(inst, keys, specGroupNames, timeoutSec, minReplicas, true);
            if (o != null) {
                return o;
            }
        }
        return start(inst, keys, specGroupNames, timeoutSec, minReplicas, false);
    }

    /** With {@code guess}: no look-up, every distinct key a candidate; null when the quota refused the guess. */
    private StartOutcome start(Instance inst, long[] keys, List<String> specGroupNames, int timeoutSec,
                               int minReplicas, boolean guess) {
        int[] groupOf = new int[keys.length];
        if (!specGroupNames.isEmpty()) {
            if (specGroupNames.size() != keys.length) {
                throw MetaException.invalid("location_spec_group_names has " + specGroupNames.size()
                        + " entries but the request has " + keys.length + " keys");
            }
            for (int i = 0; i < keys.length; i++) {
                int g = inst.specGroupNumber(specGroupNames.get(i));
                if (g < 0) {
                    throw MetaException.invalid("location_spec_group_names[" + i + "]: unknown spec group '"
                            + specGroupNames.get(i) + "'");
                }
                groupOf[i] = g;
            }
        }
        int timeout = timeoutSec <= 0 ? settings.defaultTimeoutSec() : Math.min(timeoutSec, settings.maxTimeoutSec());
        long deadline = clock.millis() + timeout * 1000L;
        int min = Math.max(1, minReplicas);

        // 1. which keys look new (the index re-decides atomically in step 4)
        Block[] seen = new Block[keys.length];
        if (!guess) {
            inst.index.getAll(keys, 0, keys.length, seen);
        }
        Set<Long> dup = new HashSet<>();
        int[] cand = new int[keys.length];
        boolean[] absent = new boolean[keys.length];
        int nc = 0, newKeys = 0;
        for (int i = 0; i < keys.length; i++) {
            if (!dup.add(keys[i])) {
                continue;
            }
            if (seen[i] == null) {
                absent[nc] = true;
                newKeys++;
                cand[nc++] = i;
            } else if (min > 1 && usableReplicas(seen[i]) < min) {
                cand[nc++] = i;
            }
        }
        if (!guess) {
            inst.recordStart(dup.size(), dup.size() - newKeys);
        }
        String sessionId = newSessionId();
        if (nc == 0) {
            touchExisting(inst, keys, keys.length, i -> seen[i] != null);
            // KVCM gives a session without new keys a fixed 10 s whatever the request asked for (§3.6.1 step 8):
            // clients always finish it, possibly after a timeout shorter than that
            long emptyDeadline = clock.millis() + Math.max(timeout, EMPTY_SESSION_TIMEOUT_SEC) * 1000L;
            InstanceIndex.StartResult r = inst.index.startWrite(new long[0], new long[0], new long[0], min,
                    this::usable, 0, sessionId, emptyDeadline, nowSec());
            boolean[] existing = new boolean[keys.length];
            Arrays.fill(existing, true);
            return StartOutcome.empty(r.session().id(), Mask.existing(existing));
        }

        if (!guess) {
            touchExisting(inst, keys, keys.length, i -> seen[i] != null);
        }

        // 2. storage and quota, all or nothing
        GroupConfig g = registry.group(inst.group);
        if (g == null) {
            throw MetaException.internal("instance group '" + inst.group + "' of instance '" + inst.id + "' no longer exists");
        }
        long typeBytes = 0;
        for (int c = 0; c < nc; c++) {
            typeBytes = Math.addExact(typeBytes, inst.bytesOf(groupOf[cand[c]]));
        }
        Storage st = selectStorage(g, typeBytes, seen, cand, nc);
        // bounded at the input (Limits: spec bytes × specs × keys per call < 2^61); exact all the same
        long totalBytes = Math.multiplyExact(newKeys, inst.bytesPerKey);
        // 3. addresses, asked for while the quota is checked (over Redis: two scripts, one round trip of waiting);
        // a refused reservation gives the slots back
        var slots = st.usesFiles() ? inst.allocator(st).allocateAsync(nc)
                : java.util.concurrent.CompletableFuture.completedFuture(new long[nc]);
        boolean reserved;
        try {
            reserved = ledger.tryReserve(g.name(), totalBytes, g.capacity(), st.kind, typeBytes,
                    g.typeQuotas().get(st.kind.usageKind()));
        } catch (RuntimeException e) {
            giveBack(inst, st, slots);
            throw e;
        }
        if (!reserved) {
            giveBack(inst, st, slots);
            if (guess) {
                return null; // some keys may be cached already: ask again for what is really new
            }
            throw MetaException.capacity("instance group '" + g.name() + "' quota would be exceeded: "
                    + describeUsage(g) + ", this write needs " + totalBytes + " bytes");
        }
        long[] addr;
        try {
            addr = slots.join();
        } catch (java.util.concurrent.CompletionException e) {
            ledger.add(g.name(), -totalBytes, st.kind, -typeBytes);
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
        long[] ck = new long[nc], ca = new long[nc], cb = new long[nc];
        var rnd = ThreadLocalRandom.current();
        for (int c = 0; c < nc; c++) {
            ck[c] = keys[cand[c]];
            ca[c] = Loc.a(Loc.randomId(rnd), Loc.WRITING, st.number, groupOf[cand[c]]);
            cb[c] = addr[c];
        }

        // 4. metadata and session in one atomic, durable step
        InstanceIndex.StartResult r;
        try {
            r = inst.index.startWrite(ck, ca, cb, min, this::usable, g.maxKeyCount(), sessionId, deadline, nowSec());
        } catch (RuntimeException e) {
            undo(inst, g, st, ca, cb, absent, null, nc);
            throw e;
        }
        if (r.capacityExceeded()) {
            undo(inst, g, st, ca, cb, absent, null, nc);
            throw MetaException.capacity("instance '" + inst.id + "' index is full: " + inst.index.keyCount()
                    + " keys of max_key_count " + g.maxKeyCount());
        }
        undo(inst, g, st, ca, cb, absent, r.inserted(), nc);
        if (guess) {
            // what the look-up would have found: the keys the step did not insert were cached (or being written)
            boolean[] ins = r.inserted();
            inst.recordStart(nc, nc - r.session().size());
            touchExisting(inst, ck, nc, c -> !ins[c]);
        }
        // a key that appeared between the look-up and the insert got an extra replica, not a new key: give
        // back the key bytes reserved for it (only possible with min_replica_count > 1)
        long notNew = 0;
        for (int c = 0; c < nc; c++) {
            if (absent[c] && r.inserted()[c] && !r.created()[c]) {
                notNew += inst.bytesPerKey;
            }
        }
        if (notNew > 0) {
            ledger.add(g.name(), -notNew, st.kind, 0);
        }

        boolean[] existing = new boolean[keys.length];
        Arrays.fill(existing, true);
        int n = 0;
        for (int c = 0; c < nc; c++) {
            n += r.inserted()[c] ? 1 : 0;
        }
        long[] ok = new long[n], oa = new long[n], ob = new long[n];
        n = 0;
        for (int c = 0; c < nc; c++) {
            if (r.inserted()[c]) {
                existing[cand[c]] = false;
                ok[n] = ck[c];
                oa[n] = ca[c];
                ob[n++] = cb[c];
            }
        }
        return new StartOutcome(sessionId, Mask.existing(existing), inst, st, ok, oa, ob);
    }

    /**
     * Frees slots allocated for a start that will not use them: at once when they are here (the usual case, the
     * quota check took as long), else when they arrive, off the Redis client's thread.
     */
    private void giveBack(Instance inst, Storage st, java.util.concurrent.CompletableFuture<long[]> slots) {
        if (!st.usesFiles()) {
            return;
        }
        if (!slots.isDone()) {
            slots.thenAcceptAsync(a -> freeSlots(inst, st, a), deleter);
        } else if (!slots.isCompletedExceptionally()) {
            freeSlots(inst, st, slots.join());
        }
    }

    /**
     * A write extending cached blocks uses them: refresh their access time so a prefix is never older than what
     * extends it (the prefix-aware policy relies on it; plain LRU benefits too).
     */
    private void touchExisting(Instance inst, long[] keys, int len, java.util.function.IntPredicate cached) {
        long[] hit = new long[len];
        int n = 0;
        for (int i = 0; i < len; i++) {
            if (cached.test(i)) {
                hit[n++] = keys[i];
            }
        }
        if (n > 0) {
            inst.index.touch(hit, 0, n, nowSec());
        }
    }

    /** Gives back reservations and slots of candidates the index did not insert (all when inserted is null). */
    private void undo(Instance inst, GroupConfig g, Storage st, long[] ca, long[] cb, boolean[] absent,
                      boolean[] inserted, int nc) {
        long total = 0, type = 0;
        long[] unused = new long[nc];
        int nu = 0;
        for (int c = 0; c < nc; c++) {
            if (inserted == null || !inserted[c]) {
                if (absent[c]) {
                    total += inst.bytesPerKey;
                }
                type += inst.bytesOf(Loc.specGroup(ca[c]));
                unused[nu++] = cb[c];
            }
        }
        if (total != 0 || type != 0) {
            ledger.add(g.name(), -total, st.kind, -type);
        }
        if (st.usesFiles()) {
            freeSlots(inst, st, Arrays.copyOf(unused, nu));
        }
    }

    private int usableReplicas(Block bl) {
        int n = 0;
        for (int i = 0; i < bl.size(); i++) {
            int s = Loc.status(bl.a(i));
            if ((s == Loc.WRITING || s == Loc.SERVING) && usable(Loc.storage(bl.a(i)))) {
                n++;
            }
        }
        return n;
    }

    private boolean usable(int storageNumber) {
        Storage st = registry.storageByNumber(storageNumber);
        return st != null && st.available();
    }

    private String describeUsage(GroupConfig g) {
        QuotaLedger.Usage u = ledger.usage(g.name());
        return "used " + u.total() + " of " + g.capacity() + " bytes" + (u.types().isEmpty() ? "" : ", by type " + u.types());
    }

    /** §3.9.2 steps 4-7: candidates in list order, available, within their type quota, then the prefer rule. */
    Storage selectStorage(GroupConfig g, long typeBytes, Block[] seen, int[] cand, int nc) {
        // usage is a round trip on a shared ledger: read it only when a type quota needs it
        QuotaLedger.Usage u = g.typeQuotas().isEmpty() ? null : ledger.usage(g.name());
        Set<Integer> avoid = new HashSet<>(); // storages that already hold a replica of a key we add one to
        for (int c = 0; c < nc; c++) {
            Block bl = seen[cand[c]];
            for (int i = 0; bl != null && i < bl.size(); i++) {
                avoid.add(Loc.storage(bl.a(i)));
            }
        }
        List<Storage> ok = new ArrayList<>();
        boolean quotaExcluded = false;
        List<String> missing = new ArrayList<>(0);
        for (String name : g.storageCandidates()) {
            Storage st = registry.storage(name);
            if (st == null) {
                // a candidate may name a storage that does not exist yet (KVCM §3.11: groups are stored as given);
                // it is used from the moment the storage arrives (config stream or resync), never before
                missing.add(name);
                continue;
            }
            if (!st.available() || st.kind == StorageKind.PACE) {
                continue; // PACE allocation is not implemented (nor is it at the KVCM baseline)
            }
            Long cap = g.typeQuotas().get(st.kind.usageKind());
            if (cap != null && u != null && u.byType(st.kind) + typeBytes > cap) {
                quotaExcluded = true;
                continue;
            }
            ok.add(st);
        }
        List<Storage> fresh = ok.stream().filter(s -> !avoid.contains(s.number)).toList();
        if (!fresh.isEmpty()) {
            ok = fresh;
        }
        GroupConfig.Prefer p = g.prefer();
        if (p.kind() != null) {
            for (Storage st : ok) {
                if (st.kind == p.kind()) {
                    return st;
                }
            }
            if (p.always()) {
                throw MetaException.internal("instance group '" + g.name() + "' requires a " + p.kind().scheme
                        + " storage and none of its candidates " + g.storageCandidates() + " is usable"
                        + notYet(missing));
            }
        }
        if (ok.isEmpty()) {
            if (quotaExcluded) {
                throw MetaException.capacity("instance group '" + g.name() + "': every candidate storage type is at its quota ("
                        + describeUsage(g) + ")");
            }
            // §3.9.2 step 7 "no candidate → fail": INTERNAL_ERROR (3), KVCM's code for "no storage"
            throw MetaException.internal("instance group '" + g.name() + "' has no available storage among "
                    + g.storageCandidates() + notYet(missing));
        }
        return ok.get(0);
    }

    private static String notYet(List<String> missing) {
        return missing.isEmpty() ? "" : "; no storage is named " + String.join(" or ", missing)
                + " yet (writes use it once it is added)";
    }

    // ---- finish and expiry ---------------------------------------------------------------------------------

    /**
     * FinishWriteCache; returns the number of blocks that became SERVING. The mask is checked against the session
     * in the same store call that closes it (one round trip on a remote store).
     */
    public int finish(Instance inst, String sessionId, Mask mask, IndexStoreOwner owner) {
        boolean[] ok = mask.bools();
        if (ok == null) {
            // a prefix: the first offset locations succeeded. No session holds more than MAX_KEYS_PER_CALL
            // locations, so a larger offset fits none just the same, without allocating what a client named
            ok = new boolean[Math.max(0, Math.min(mask.offset(), dev.kvpool.api.limits.Limits.MAX_KEYS_PER_CALL + 1))];
            Arrays.fill(ok, true);
        }
        InstanceIndex.FinishResult r = mask.offset() < 0 && mask.bools() == null
                ? failAll(inst, sessionId) // a negative offset fits no session
                : inst.index.finishWrite(sessionId, ok, mask.bools() != null, nowSec());
        if (r == null) {
            String other = owner.sessionOwner(sessionId);
            if (other != null && !other.equals(inst.id)) {
                throw MetaException.invalid("write session '" + dev.kvpool.api.naming.Text.safe(sessionId)
                        + "' belongs to another instance");
            }
            throw MetaException.internal("write session '" + dev.kvpool.api.naming.Text.safe(sessionId)
                    + "' is unknown, expired or already finished");
        }
        release(inst, r.failed());
        if (!r.maskFits()) {
            // the session is over either way: its locations were released rather than leaked (§3.6.2 step 3)
            throw MetaException.invalid("success_blocks (" + mask.describe() + ") does not fit the " + r.session().size()
                    + " locations this session returned; the session was closed as failed");
        }
        return r.served();
    }

    private InstanceIndex.FinishResult failAll(Instance inst, String sessionId) {
        InstanceIndex.FinishResult r = inst.index.finishWrite(sessionId, new boolean[0], nowSec());
        return r == null ? null : new InstanceIndex.FinishResult(r.session(), r.served(), r.failed(), false);
    }

    /** What finish needs from the store: which instance owns a session id. */
    public interface IndexStoreOwner {
        String sessionOwner(String sessionId);
    }

    private InstanceIndex.FinishResult close(Instance inst, String sessionId, boolean[] ok) {
        InstanceIndex.FinishResult r = inst.index.finishWrite(sessionId, ok, nowSec());
        if (r != null) {
            release(inst, r.failed());
        }
        return r;
    }

    /** Fails every session past its deadline, exactly like a finish in which every block failed. */
    public int expire(long nowMs) {
        int n = 0;
        List<Instance> insts = List.copyOf(registry.instances());
        List<List<WriteSession>> due = registry.sessionsDue(insts, nowMs); // one round trip, only what is due
        for (int i = 0; i < insts.size(); i++) {
            for (WriteSession s : due.get(i)) {
                if (close(insts.get(i), s.id(), new boolean[s.size()]) != null) {
                    n++;
                }
            }
        }
        sessionsExpired.addAndGet(n);
        return n;
    }

    // ---- remove, trim, delete ------------------------------------------------------------------------------

    /**
     * RemoveCache: unmasked keys leave service at once; bytes and metadata go asynchronously. A location still being
     * written goes too (KVCM: any status → DELETING; its session's finish then fails it), but its slot is freed only
     * after the session's deadline: its writer may still be writing to it, and a slot given to the next write at
     * once would take those late bytes over the new block's.
     */
    public void remove(Instance inst, long[] keys, Mask mask) {
        LocList moved = inst.index.markDeleting(keys, 0, keys.length, mask::masked, true);
        LocList served = new LocList(), writing = new LocList();
        for (int i = 0; i < moved.size(); i++) {
            (moved.wasWriting(i) ? writing : served).add(moved.key(i), moved.a(i), moved.b(i), false);
        }
        submitDelete(inst, served);
        if (writing.size() > 0) {
            submitDelete(inst, writing, untilWritersAreDone(inst, writing));
        }
    }

    /** Milliseconds until the sessions that opened these locations are past their deadline (a second's grace). */
    private long untilWritersAreDone(Instance inst, LocList locs) {
        java.util.Set<Long> ids = new java.util.HashSet<>();
        for (int i = 0; i < locs.size(); i++) {
            ids.add(Loc.id(locs.a(i)));
        }
        long now = clock.millis(), last = now;
        for (var s : inst.index.sessions()) {
            for (long id : s.locIds()) {
                if (ids.contains(id)) {
                    last = Math.max(last, s.deadlineMs());
                    break;
                }
            }
        }
        return last > now ? last - now + 1_000 : 0;
    }

    public void trim(Instance inst, Trim strategy, int begin, int end) {
        switch (strategy) {
            // what is cached: sessions in flight (on any replica) keep their WRITING locations — moving those to
            // DELETING freed their slots while their writers still wrote to them — and serve them when they finish
            case REMOVE_ALL_CACHE -> removeAll(inst, true, false);
            // metadata only: the storage's files stay (their slots are free for new blocks). Location by location, as
            // for REMOVE_ALL_CACHE, and not by clearing the index: a clear also dropped the WRITING locations of
            // sessions in flight and freed every slot, theirs too, so a slot could be handed out while its writer
            // still wrote to it, and the usage those sessions reserved was never given back
            case REMOVE_ALL_META -> removeAll(inst, false, false);
            case TIMESTAMP -> {
                if (end <= begin) {
                    throw MetaException.invalid("TS_TIMESTAMP needs begin_timestamp < end_timestamp (epoch seconds), got ["
                            + begin + ", " + end + ")");
                }
                long[] keys = inst.index.keysWhere(meta -> {
                    int w = Loc.writeSec(meta);
                    return w >= begin && w < end;
                });
                for (int off = 0; off < keys.length; off += 1024) {
                    submitDelete(inst, inst.index.markDeleting(keys, off, Math.min(1024, keys.length - off), null, false));
                }
            }
        }
    }

    /** Before an instance is forgotten: every location goes, those of sessions in flight too (their finish fails). */
    public void removeEverything(Instance inst) {
        removeAll(inst, true, true);
    }

    /**
     * Every SERVING location of the instance leaves service at once; bytes (if {@code deleteFiles}), slots, usage
     * and metadata go asynchronously. WRITING locations, unless {@code writing}, are left to their session, which
     * finishes or expires them as usual.
     */
    private void removeAll(Instance inst, boolean deleteFiles, boolean writing) {
        // a scan is exact only on a quiet index: purges running meanwhile move keys, so repeat passes until one
        // finds nothing left to move (bounded, in case writes keep arriving)
        long[] page = new long[1024];
        for (int pass = 0; pass < 8; pass++) {
            long moved = 0, cursor = 0;
            do {
                int[] n = {0};
                cursor = inst.index.scan(cursor, page.length, k -> page[n[0]++] = k);
                LocList m = inst.index.markDeleting(page, 0, n[0], null, writing);
                moved += m.size();
                submitDelete(inst, m, 0, deleteFiles);
            } while (cursor != 0);
            if (moved == 0) {
                break;
            }
        }
    }

    /**
     * A storage deleted from the configuration: every block with a location on it leaves service and is deleted
     * through the normal path (reader lease, bytes, slots, usage, metadata). A block that also has replicas on other
     * storages goes whole: the index moves keys, not single replicas, to DELETING. Returns the locations moved.
     */
    public long removeBlocksOn(Storage st) {
        long moved = 0;
        for (Instance inst : registry.instances()) {
            long cursor = 0;
            do {
                List<Long> page = new ArrayList<>(1024);
                cursor = inst.index.scan(cursor, 1024, page::add);
                long[] keys = page.stream().mapToLong(Long::longValue).toArray();
                Block[] blocks = new Block[keys.length];
                inst.index.getAll(keys, 0, keys.length, blocks);
                int n = 0;
                for (int i = 0; i < keys.length; i++) {
                    Block bl = blocks[i];
                    boolean on = false;
                    for (int j = 0; bl != null && j < bl.size() && !on; j++) {
                        on = Loc.storage(bl.a(j)) == st.number;
                    }
                    if (on) {
                        keys[n++] = keys[i];
                    }
                }
                if (n > 0) {
                    // WRITING ones stay with their session, which finishes them as failed (the storage is gone
                    // from the configuration) or expires them, releasing what it reserved
                    LocList m = inst.index.markDeleting(keys, 0, n, null, false);
                    moved += m.size();
                    submitDelete(inst, m, readerLeaseMs(inst));
                }
            } while (cursor != 0);
        }
        LOG.infof("storage %s deleted from the configuration: %d locations on it leave service and are deleted",
                st.name, moved);
        return moved;
    }

    void submitDelete(Instance inst, LocList deleting) {
        submitDelete(inst, deleting, 0);
    }

    public void submitDelete(Instance inst, LocList deleting, long delayMs) {
        submitDelete(inst, deleting, delayMs, true);
    }

    /**
     * Deletes locations already moved to DELETING: after {@code delayMs} (the reader lease: a reader that got the
     * location just before it left service can still finish its read), bytes and slots are freed, then each
     * location is removed if it is still DELETING.
     */
    private void submitDelete(Instance inst, LocList deleting, long delayMs, boolean deleteFiles) {
        if (deleting.size() == 0) {
            return;
        }
        // until the purge releases it, usage still counts what is leaving: keep it apart so the reclaimer does
        // not evict it twice over
        long keys = 0, prev = 0;
        for (int i = 0; i < deleting.size(); i++) {
            if (i == 0 || deleting.key(i) != prev) {
                keys++;
                prev = deleting.key(i);
            }
            Storage st = registry.storageByNumber(Loc.storage(deleting.a(i)));
            if (st != null) {
                leaving.add(inst.group, 0, st.kind, inst.bytesOf(Loc.specGroup(deleting.a(i))));
            }
        }
        long total = keys * inst.bytesPerKey;
        leaving.add(inst.group, total, null, 0);
        Runnable job = () -> {
            try {
                purge(inst, deleting, deleteFiles);
            } finally {
                leaving.add(inst.group, -total, null, 0);
                for (int i = 0; i < deleting.size(); i++) {
                    Storage st = registry.storageByNumber(Loc.storage(deleting.a(i)));
                    if (st != null) {
                        leaving.add(inst.group, 0, st.kind, -inst.bytesOf(Loc.specGroup(deleting.a(i))));
                    }
                }
            }
        };
        // a replica's local copy of the index may serve a DELETING location this much longer than Redis does
        delayMs += registry.readerStalenessMs();
        if (delayMs <= 0) {
            deleter.execute(job);
        } else {
            delayed.schedule(() -> deleter.execute(job), delayMs, TimeUnit.MILLISECONDS);
        }
    }

    /** Usage already on its way out (DELETING, purge pending), per group; subtract it from the ledger's. */
    public QuotaLedger.Usage leaving(String group) {
        return leaving.usage(group);
    }

    /** Locations per purge batch: what a failed call can leave unreleased until the next start-up rebuild. */
    private static final int PURGE_BATCH = 1024;

    private void purge(Instance inst, LocList deleting, boolean deleteFiles) {
        try {
            for (int off = 0; off < deleting.size(); off += PURGE_BATCH) {
                LocList batch = new LocList();
                for (int i = off; i < Math.min(deleting.size(), off + PURGE_BATCH); i++) {
                    batch.add(deleting.key(i), deleting.a(i), deleting.b(i), deleting.keyGone(i));
                }
                LocList gone = inst.index.purgeAll(batch);
                release(inst, gone, deleteFiles);
                locationsDeleted.addAndGet(gone.size());
            }
        } catch (RuntimeException e) {
            LOG.errorf(e, "deleting %d locations of instance %s failed", deleting.size(), inst.id);
        }
    }

    /**
     * Returns quota and slots of locations that left the index, in one ledger update per storage and one batched
     * free per slot allocator (a shared ledger and allocator live in Redis: a round trip per location made
     * evicting or failing big batches slow); deletes files that no block uses any more.
     */
    void release(Instance inst, LocList removed) {
        release(inst, removed, true);
    }

    private void release(Instance inst, LocList removed, boolean deleteFiles) {
        Map<Integer, long[]> quota = new HashMap<>(); // storage number -> {key bytes, type bytes}
        Map<Integer, long[]> slots = new HashMap<>(); // storage number -> {count, addresses...}
        for (int i = 0; i < removed.size(); i++) {
            long a = removed.a(i);
            Storage st = registry.storageByNumber(Loc.storage(a));
            if (st == null) {
                continue;
            }
            long[] q = quota.computeIfAbsent(st.number, n -> new long[2]);
            q[0] += removed.keyGone(i) ? inst.bytesPerKey : 0;
            q[1] += inst.bytesOf(Loc.specGroup(a));
            if (st.usesFiles()) {
                long[] list = slots.computeIfAbsent(st.number, n -> new long[1 + removed.size()]);
                list[1 + (int) list[0]++] = removed.b(i);
            }
        }
        quota.forEach((number, q) -> {
            Storage st = registry.storageByNumber(number);
            if (st != null) {
                ledger.add(inst.group, -q[0], st.kind, -q[1]);
            }
        });
        slots.forEach((number, list) -> {
            Storage st = registry.storageByNumber(number);
            if (st != null) {
                freeSlots(inst, st, Arrays.copyOfRange(list, 1, 1 + (int) list[0]), deleteFiles);
            }
        });
    }

    private void freeSlots(Instance inst, Storage st, long[] addresses) {
        freeSlots(inst, st, addresses, true);
    }

    private void freeSlots(Instance inst, Storage st, long[] addresses, boolean deleteFiles) {
        dev.kvpool.meta.slots.Slots alloc = inst.allocatorIfAny(st.number);
        if (alloc == null || addresses.length == 0) {
            return;
        }
        long[] emptied = alloc.freeAll(addresses);
        if (emptied.length == 0 || !deleteFiles) {
            return;
        }
        List<Path> files = new ArrayList<>();
        for (long address : emptied) {
            files.addAll(Locations.localFiles(inst, st, 0, address, 0));
        }
        deleter.execute(() -> {
            for (Path p : files) {
                try {
                    if (Files.deleteIfExists(p)) {
                        filesDeleted.incrementAndGet();
                    }
                    Files.deleteIfExists(SlabFiles.checksums(p)); // the agents' checksum records of that slab
                } catch (IOException e) {
                    LOG.warnf("cannot delete %s: %s", p, e.getMessage());
                }
            }
        });
    }

    // ---- start-up ------------------------------------------------------------------------------------------

    /**
     * Rebuilds what is derived from the index — group usage and slot maps — and resumes deletions a crash
     * interrupted, reading up to {@code threads} instances' indexes at once (one HSCAN stream each on Redis, where
     * one instance's read is bound by round trips and decoding, not by the server). Open sessions were recovered
     * with the index; the expiry loop fails those past their deadline. Only for a process alone with its store: a
     * replica joining others over a shared one reads nothing (their usage and slots are in use), and what a lost
     * replica left DELETING is found by the leader's sweep
     * ({@link dev.kvpool.meta.reclaim.Reclaimer#sweepAfterLostReplicas}).
     */
    public void recover(int threads) {
        recover(threads, Runtime.getRuntime().maxMemory() / 2);
    }

    /** @param heapBudget bytes the instances read at once may hold (their slot addresses, ~24 bytes a block) */
    void recover(int threads, long heapBudget) {
        for (GroupConfig g : registry.groups()) {
            ledger.reset(g.name());
        }
        List<Instance> insts = List.copyOf(registry.instances());
        if (insts.isEmpty()) {
            return;
        }
        Progress progress = new Progress("rebuilding usage and slots from the index", insts);
        recovering = progress;
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, insts.size())), r -> {
            Thread t = new Thread(r, "kvpool-recovery");
            t.setDaemon(true);
            return t;
        });
        // an instance's slot addresses are held while it is read (~24 bytes a block): instances read at once share
        // the budget (half the heap), and one larger than that is read alone, as it would be by a single thread
        int budgetKib = (int) Math.max(1, Math.min(Integer.MAX_VALUE, heapBudget / 1024));
        java.util.concurrent.Semaphore heap = new java.util.concurrent.Semaphore(budgetKib);
        try {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (Instance inst : insts) {
                int needKib = (int) Math.min(budgetKib, progress.keys(inst) * 24 / 1024 + 1);
                fs.add(pool.submit(() -> {
                    heap.acquireUninterruptibly(needKib);
                    try {
                        return recoverInstance(inst, progress);
                    } finally {
                        heap.release(needKib);
                    }
                }));
            }
            for (var f : fs) {
                f.get();
            }
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while recovering the index", e);
        } finally {
            pool.shutdownNow();
        }
        progress.finished();
    }

    /** How far {@link #recover} got (keys read of those the indexes held when it began), or null before it began. */
    public record RecoveryProgress(long keys, long totalKeys, int instancesDone, int instances, long elapsedMs) {
    }

    private volatile Progress recovering;

    public RecoveryProgress recoveryProgress() {
        Progress p = recovering;
        return p == null ? null : p.snapshot();
    }

    /**
     * Purges locations found DELETING by a sweep (a lost replica's, whose purges were queued in its own process),
     * each after its group's reader lease: the replica that marked one may be alive and a reader may still hold it;
     * purges are idempotent, so whichever of two runs second finds nothing left to do.
     */
    public void resumeDeleting(Instance inst, LocList deleting) {
        submitDelete(inst, deleting, readerLeaseMs(inst));
    }

    /** Reads one instance's index: its usage and slots, and its DELETING locations resumed. */
    private int recoverInstance(Instance inst, Progress progress) {
        // usage summed here and written once per instance and type: on a shared ledger each add is a round trip,
        // and one per block made a cold start of a Redis-backed cluster take ~3 minutes per million blocks
        QuotaLedger.Usage usage = new QuotaLedger.Usage();
        LocList deleting = new LocList();
        long[] keys = {0};
        // slot addresses per storage, unboxed: a cold start may find hundreds of millions
        Map<Integer, java.util.stream.LongStream.Builder> used = new HashMap<>();
        inst.index.forEach(bl -> {
            if ((++keys[0] & Progress.EVERY - 1) == 0) {
                progress.add(Progress.EVERY);
            }
            countUsage(inst, bl, usage);
            for (int i = 0; i < bl.size(); i++) {
                long a = bl.a(i);
                Storage st = registry.storageByNumber(Loc.storage(a));
                if (st == null) {
                    continue;
                }
                if (st.usesFiles()) {
                    used.computeIfAbsent(st.number, n -> java.util.stream.LongStream.builder()).add(bl.b(i));
                }
                if (Loc.status(a) == Loc.DELETING) {
                    deleting.add(bl.key(), a, bl.b(i), false);
                }
            }
        });
        progress.add(keys[0] & Progress.EVERY - 1);
        addUsage(inst.group, usage, 1); // before its deletions resume: their purge subtracts what is added here
        inst.resetSlots();
        for (var e : used.entrySet()) {
            inst.allocator(registry.storageByNumber(e.getKey())).rebuild(e.getValue().build().toArray());
        }
        resumeDeleting(inst, deleting);
        progress.instanceDone();
        LOG.infof("instance %s: %d keys, %d open write sessions, %d deletions resumed", inst.id, keys[0],
                inst.index.sessions().size(), deleting.size());
        return deleting.size();
    }

    private long readerLeaseMs(Instance inst) {
        GroupConfig g = registry.group(inst.group);
        return (g == null ? dev.kvpool.meta.reclaim.ReclaimConfig.DEFAULT : g.reclaim()).delayBeforeDeleteMs();
    }

    /**
     * A read of every index, logged every 10 s by whichever reading thread passes the mark, so a start-up that
     * reads hundreds of millions of keys shows how far it got and how fast it goes.
     */
    private static final class Progress {
        static final int EVERY = 1 << 14;
        private static final long PERIOD_NS = 10_000_000_000L;
        private final String what;
        private final int instances;
        private final long total;
        private final long t0 = System.nanoTime();
        private final java.util.concurrent.atomic.LongAdder keys = new java.util.concurrent.atomic.LongAdder();
        private final java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
        private final AtomicLong nextLogNs = new AtomicLong(t0 + PERIOD_NS);

        private final Map<String, Long> keysOf = new HashMap<>();

        Progress(String what, List<Instance> insts) {
            this.what = what;
            this.instances = insts.size();
            long t = 0;
            for (Instance i : insts) {
                try {
                    long k = i.index.keyCount();
                    keysOf.put(i.id, k);
                    t += k;
                } catch (RuntimeException e) {
                    // only the estimate suffers
                }
            }
            this.total = t;
        }

        /** The instance's key count when the read began (0 if unknown). */
        long keys(Instance inst) {
            return keysOf.getOrDefault(inst.id, 0L);
        }

        void add(long n) {
            keys.add(n);
            long now = System.nanoTime(), next = nextLogNs.get();
            if (now >= next && nextLogNs.compareAndSet(next, now + PERIOD_NS)) {
                long k = keys.sum();
                LOG.infof("%s: %,d of ~%,d keys (%d%%), %,d keys/s, %d of %d instances done", what, k, total,
                        total == 0 ? 100 : Math.min(100, k * 100 / total), rate(k, now), done.get(), instances);
            }
        }

        void instanceDone() {
            done.incrementAndGet();
        }

        RecoveryProgress snapshot() {
            return new RecoveryProgress(keys.sum(), total, done.get(), instances, (System.nanoTime() - t0) / 1_000_000);
        }

        void finished() {
            long k = keys.sum(), now = System.nanoTime();
            LOG.infof("%s: %,d keys of %d instances in %.1f s (%,d keys/s)", what, k, instances,
                    (now - t0) / 1e9, rate(k, now));
        }

        private long rate(long k, long now) {
            return k * 1_000_000_000L / Math.max(1, now - t0);
        }
    }

    /**
     * Adds ({@code sign} 1) or takes away (-1) usage summed over many blocks: one ledger call for the total, one per
     * storage type.
     */
    private void addUsage(String group, QuotaLedger.Usage u, int sign) {
        ledger.add(group, sign * u.total(), null, 0);
        u.types().forEach((kind, bytes) -> ledger.add(group, 0, kind, sign * bytes));
    }

    /** Adds one block to a usage sum: the key once, each location by its storage type (§3.9.1). */
    private void countUsage(Instance inst, Block bl, QuotaLedger.Usage into) {
        into.add(inst.bytesPerKey, null, 0);
        for (int i = 0; i < bl.size(); i++) {
            Storage st = registry.storageByNumber(Loc.storage(bl.a(i)));
            if (st != null) {
                into.add(0, st.kind, inst.bytesOf(Loc.specGroup(bl.a(i))));
            }
        }
    }

    /** What one usage audit of a group found: null difference when the group was busy and nothing was compared. */
    public record Audit(String group, Long totalDifference, java.util.Map<StorageKind, Long> typeDifferences) {
    }

    /**
     * The usage invariant, checked: recounts a group's usage from its instances' indexes (as a cold start does)
     * and compares it with the ledger. Writes and deletions move both while the count runs, so the comparison
     * counts only when the ledger stood still and no write session was open from before the count to after it;
     * otherwise the group was busy and the result says nothing (null difference). Differences are ledger minus
     * index: positive when the ledger holds usage no block accounts for.
     */
    public Audit auditUsage(String group) {
        List<Instance> insts = registry.instancesOf(group);
        if (insts.stream().anyMatch(i -> i.index.sessionCount() > 0)) {
            return new Audit(group, null, java.util.Map.of());
        }
        QuotaLedger.Usage before = ledger.usage(group);
        QuotaLedger.Usage counted = new QuotaLedger.Usage();
        for (Instance inst : insts) {
            inst.index.forEach(bl -> countUsage(inst, bl, counted));
        }
        QuotaLedger.Usage after = ledger.usage(group);
        if (before.total() != after.total() || !before.types().equals(after.types())
                || insts.stream().anyMatch(i -> i.index.sessionCount() > 0)) {
            return new Audit(group, null, java.util.Map.of());
        }
        java.util.Map<StorageKind, Long> types = new java.util.EnumMap<>(StorageKind.class);
        java.util.Set<StorageKind> kinds = java.util.EnumSet.noneOf(StorageKind.class);
        kinds.addAll(after.types().keySet());
        kinds.addAll(counted.types().keySet());
        for (StorageKind k : kinds) {
            long d = after.byType(k) - counted.byType(k);
            if (d != 0) {
                types.put(k, d);
            }
        }
        return new Audit(group, after.total() - counted.total(), types);
    }

    /** Waits for queued deletions, delayed ones included (tests, shutdown). */
    public void drain() {
        long until = System.currentTimeMillis() + 30_000;
        while (delayed.getQueue().size() > 0
                && System.currentTimeMillis() < until) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        try {
            deleter.submit(() -> { }).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("deleter did not drain", e);
        }
    }

    /**
     * A clean stop: purges whose reader lease is still running are let run for at most {@code maxMs} instead of
     * being dropped. False when some were left (the replica should then be counted as lost, so the leader sweeps).
     */
    public boolean finishDeletions(long maxMs) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMs);
        delayed.shutdown(); // delayed tasks still run after shutdown (the executor's default policy)
        try {
            if (!delayed.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return false;
            }
            deleter.shutdown();
            return deleter.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void close() {
        delayed.shutdownNow();
        deleter.shutdown();
        try {
            deleter.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
