package dev.kvpool.meta.write;

import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.index.WriteSession;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The two-phase write (§3.6): start, finish, and the expiry of sessions past their deadline. Quota is reserved
 * before storage is allocated and released for whatever the index did not keep, so a refused or lost write leaves
 * nothing behind; what a failed or expired write held is released through {@link Deletions}.
 */
public final class WritePath {
    private static final char[] ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray();
    /** The lifetime KVCM forces on a write session that allocated nothing (§3.6.1 step 8, §5.5 item 73). */
    static final int EMPTY_SESSION_TIMEOUT_SEC = 10;

    /** Write timeouts: ≤ 0 from a client means the default (KVCM would expire such a session at once). */
    public record Settings(int defaultTimeoutSec, int maxTimeoutSec) {
    }

    private final Registry registry;
    private final QuotaLedger ledger;
    private final Deletions deletions;
    private final Settings settings;
    private final SecureRandom sessionRandom = new SecureRandom();
    private final AtomicLong sessionsExpired = new AtomicLong();

    private final java.time.InstantSource clock;

    public WritePath(Registry registry, QuotaLedger ledger, Deletions deletions, Settings settings) {
        this(registry, ledger, deletions, settings, java.time.InstantSource.system());
    }

    /** With a clock of its own: simulations replay a trace's timeline through the real write path. */
    public WritePath(Registry registry, QuotaLedger ledger, Deletions deletions, Settings settings,
                     java.time.InstantSource clock) {
        this.registry = registry;
        this.ledger = ledger;
        this.deletions = deletions;
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
            deletions.giveBack(inst, st, slots);
            throw e;
        }
        if (!reserved) {
            deletions.giveBack(inst, st, slots);
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
            deletions.freeSlots(inst, st, Arrays.copyOf(unused, nu));
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
        deletions.release(inst, r.failed());
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
            deletions.release(inst, r.failed());
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

    public void bindTo(MeterRegistry meters) {
        Gauge.builder("kvpool.meta.write.sessions.open", registry,
                        r -> r.instances().stream().mapToLong(i -> i.index.sessionCount()).sum())
                .description("open two-phase write sessions").strongReference(true).register(meters);
        Gauge.builder("kvpool.meta.write.sessions.expired", this, w -> w.sessionsExpired.get())
                .description("write sessions failed by timeout since start").strongReference(true).register(meters);
    }
}
