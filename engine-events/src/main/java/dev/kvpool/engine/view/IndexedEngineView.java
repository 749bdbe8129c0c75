package dev.kvpool.engine.view;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The engine view for a router's request path: per instance one open-addressing table block key → the pods holding
 * it, each as a packed {@code long} (pod id in the high 32 bits, a bitmask of tiers in the low 32), pods and tiers
 * interned to small ints. A key held by one pod keeps its entry inline in the table; a key held by several keeps an
 * array of entries sorted by pod id.
 *
 * <p>{@link #score} looks up key 0 once, keeps its visible holders as candidates, and for each next key narrows them
 * by a merge (or, when the key has many more holders than candidates are left, a binary search) of two sorted lists;
 * it stops at the first key no candidate holds. Cost: O(Σ over the walked keys of min(holders + candidates,
 * candidates · log holders)) — pods that do not hold the first block cost nothing, where the map walk probes every pod
 * and tier at least once. Results equal {@link MapWalkEngineView}'s (the tests' oracle) to the bit: per-tier prefixes,
 * longest prefix, and the score summed in key order.
 *
 * <p>Concurrency: one {@link ReentrantReadWriteLock} per instance. Scores are short (µs) and many, and must not block
 * each other: they share the read lock. Ingest writes one event (a batch of keys) per write-lock hold, so a score waits
 * at most one event's work. A StampedLock's optimistic read would save the read-lock CAS but a score reads several
 * arrays that a concurrent write may grow or shift, so every read would need re-validation and a retry path; the
 * non-fair RW lock also parks new readers behind a queued writer, so ingest is not starved by a stream of scores.
 * Different instances never contend.
 *
 * <p>Memory: the table is 3 parallel arrays (key, inline entry, entry array reference) at ≤ 3/4 load; measured by
 * {@code bench engine-score} (docs/benchmarks.md, engine-events/README.md). {@link #clearPod} and {@link #replace}
 * scan the instance's table once (O(keys), rare: AllBlocksCleared, a new engine epoch, a full snapshot) instead of
 * keeping a second per-pod key set, which would double the memory. At most 32 distinct tiers per instance.
 */
public final class IndexedEngineView implements EngineView {

    /** Tiers per instance: the low 32 bits of a packed entry. */
    public static final int MAX_TIERS = 32;

    private final Map<String, Inst> instances = new ConcurrentHashMap<>();

    private Inst inst(String instance) {
        return instances.computeIfAbsent(instance, k -> new Inst());
    }

    @Override
    public void store(String instance, String pod, String tier, long[] keys) {
        Inst in = inst(instance);
        in.lock.writeLock().lock();
        try {
            int p = in.podId(pod);
            int t = in.tierId(MapWalkEngineView.tier(tier));
            in.touched[p] |= 1 << t;
            for (long k : keys) {
                if (in.table.add(k, p, 1 << t)) {
                    in.counts[p][t]++;
                }
            }
        } finally {
            in.lock.writeLock().unlock();
        }
    }

    @Override
    public void remove(String instance, String pod, String tier, long[] keys) {
        Inst in = instances.get(instance);
        if (in == null) {
            return;
        }
        in.lock.writeLock().lock();
        try {
            Integer p = in.podIds.get(pod);
            Integer t = in.tierIds.get(MapWalkEngineView.tier(tier));
            if (p == null || t == null) {
                return;
            }
            for (long k : keys) {
                if (in.table.remove(k, p, 1 << t)) {
                    in.counts[p][t]--;
                }
            }
        } finally {
            in.lock.writeLock().unlock();
        }
    }

    @Override
    public void replace(String instance, String pod, Map<String, long[]> tiers) {
        Inst in = inst(instance);
        in.lock.writeLock().lock();
        try {
            int p = in.podId(pod);
            in.clear(p);
            for (Map.Entry<String, long[]> e : tiers.entrySet()) {
                int t = in.tierId(MapWalkEngineView.tier(e.getKey()));
                in.touched[p] |= 1 << t;
                for (long k : e.getValue()) {
                    if (in.table.add(k, p, 1 << t)) {
                        in.counts[p][t]++;
                    }
                }
            }
        } finally {
            in.lock.writeLock().unlock();
        }
    }

    @Override
    public void clearPod(String instance, String pod) {
        Inst in = instances.get(instance);
        if (in == null) {
            return;
        }
        in.lock.writeLock().lock();
        try {
            Integer p = in.podIds.get(pod);
            if (p != null) {
                in.clear(p);
            }
        } finally {
            in.lock.writeLock().unlock();
        }
    }

    @Override
    public void setVisible(String instance, String pod, boolean visible) {
        Inst in = inst(instance);
        in.lock.writeLock().lock();
        try {
            int p = in.podId(pod); // first: it may grow in.visible
            in.visible[p] = visible;
        } finally {
            in.lock.writeLock().unlock();
        }
    }

    @Override
    public void dropInstance(String instance) {
        instances.remove(instance);
    }

    @Override
    public PrefixScores score(String instance, long[] keys, TierWeights weights) {
        List<PrefixScores.PodScore> out = keys.length == 0 ? List.of()
                : read(instance, List.of(), in -> in.score(keys, weights));
        return new PrefixScores(keys.length, out); // already best first (Inst.score)
    }

    @Override
    public boolean holds(String instance, String pod, String tier, long key) {
        return read(instance, false, in -> {
            Integer p = in.podIds.get(pod);
            Integer t = in.tierIds.get(MapWalkEngineView.tier(tier));
            return p != null && t != null && (in.table.mask(key, p) & (1 << t)) != 0;
        });
    }

    @Override
    public Set<String> instances() {
        return Set.copyOf(instances.keySet());
    }

    @Override
    public List<PodSummary> pods(String instance) {
        return read(instance, List.of(), in -> {
            List<PodSummary> out = new ArrayList<>();
            for (int p = 0; p < in.podNames.size(); p++) {
                Map<String, Long> counts = new TreeMap<>();
                for (int t = 0; t < in.tierNames.size(); t++) {
                    if ((in.touched[p] & (1 << t)) != 0) {
                        counts.put(in.tierNames.get(t), in.counts[p][t]);
                    }
                }
                out.add(new PodSummary(in.podNames.get(p), in.visible[p], counts));
            }
            out.sort(Comparator.comparing(PodSummary::pod));
            return out;
        });
    }

    /** {@code f} of the instance under its read lock; {@code absent} for an unknown instance. */
    private <T> T read(String instance, T absent, java.util.function.Function<Inst, T> f) {
        Inst in = instances.get(instance);
        if (in == null) {
            return absent;
        }
        in.lock.readLock().lock();
        try {
            return f.apply(in);
        } finally {
            in.lock.readLock().unlock();
        }
    }

    /** Approximate heap bytes of the instance's key table and entry arrays (not the pod / tier names). */
    public long tableBytes(String instance) {
        return read(instance, 0L, in -> in.table.bytes());
    }

    /** Distinct keys of an instance (held by at least one pod on some tier). */
    public long keyCount(String instance) {
        return read(instance, 0L, in -> (long) in.table.size);
    }

    private static final class Inst {
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        final Map<String, Integer> podIds = new HashMap<>();
        final List<String> podNames = new ArrayList<>();
        final Map<String, Integer> tierIds = new HashMap<>();
        final List<String> tierNames = new ArrayList<>();
        boolean[] visible = new boolean[8];
        /** Tiers a pod has had since its last clear (the map walk's per-pod tier sets, even when empty). */
        int[] touched = new int[8];
        int[] nameRank = new int[8];
        long[][] counts = new long[8][];
        final KeyTable table = new KeyTable();

        int podId(String pod) {
            Integer id = podIds.get(pod);
            if (id != null) {
                return id;
            }
            int p = podNames.size();
            if (p == visible.length) {
                int n = p * 2;
                visible = Arrays.copyOf(visible, n);
                touched = Arrays.copyOf(touched, n);
                counts = Arrays.copyOf(counts, n);
            }
            podNames.add(pod);
            podIds.put(pod, p);
            // rank of each pod's name, so scores sort by (score, name) on ints; pods join rarely
            Integer[] byName = new Integer[p + 1];
            for (int i = 0; i <= p; i++) {
                byName[i] = i;
            }
            Arrays.sort(byName, Comparator.comparing(podNames::get));
            nameRank = new int[visible.length];
            for (int r = 0; r <= p; r++) {
                nameRank[byName[r]] = r;
            }
            visible[p] = true;
            counts[p] = new long[MAX_TIERS];
            return p;
        }

        int tierId(String tier) {
            Integer id = tierIds.get(tier);
            if (id != null) {
                return id;
            }
            if (tierNames.size() == MAX_TIERS) {
                throw new IllegalArgumentException("more than " + MAX_TIERS + " distinct tiers in one instance: "
                        + tier);
            }
            tierNames.add(tier);
            tierIds.put(tier, tierNames.size() - 1);
            return tierNames.size() - 1;
        }

        void clear(int p) {
            long held = 0;
            for (long c : counts[p]) {
                held += c;
            }
            if (held > 0) {
                table.removePod(p);
            }
            touched[p] = 0;
            Arrays.fill(counts[p], 0);
        }

        /** Unsorted scores of the visible pods holding keys[0]; under the read lock. */
        List<PrefixScores.PodScore> score(long[] keys, TierWeights weights) {
            int nt = tierNames.size();
            double[] w = new double[nt];
            for (int t = 0; t < nt; t++) {
                w[t] = weights.of(tierNames.get(t));
            }
            // candidates, sorted by pod id: id, tiers still contiguous, per-tier prefix, score
            long[] first = table.entries(keys[0]);
            long[] single = new long[1];
            int c = 0;
            int[] pod = new int[first.length];
            int[] held = new int[first.length];   // tiers holding the current key
            int[] alive = new int[first.length];  // tiers holding every key so far
            int[] perTier = new int[first.length * Math.max(nt, 1)];
            double[] score = new double[first.length];
            int[] longest = new int[first.length];
            for (long e : first) {
                int p = (int) (e >>> 32);
                if (visible[p]) {
                    pod[c] = p;
                    held[c] = (int) e;
                    alive[c] = (int) e;
                    c++;
                }
            }
            int live = c; // candidates [0, live) are still walking; the others are done
            int[] order = new int[c];
            for (int i = 0; i < c; i++) {
                order[i] = i;
            }
            for (int k = 0; live > 0; k++) {
                // account key k for every live candidate (held[] = its tiers holding key k)
                for (int j = 0; j < live; j++) {
                    int i = order[j];
                    int m = held[i];
                    double best = -1;
                    for (int bits = m; bits != 0; bits &= bits - 1) {
                        best = Math.max(best, w[Integer.numberOfTrailingZeros(bits)]);
                    }
                    score[i] += best;
                    int dropped = alive[i] & ~m;
                    for (int bits = dropped; bits != 0; bits &= bits - 1) {
                        perTier[i * nt + Integer.numberOfTrailingZeros(bits)] = k;
                    }
                    alive[i] &= m;
                    longest[i] = k + 1;
                }
                if (k + 1 == keys.length) {
                    break;
                }
                // narrow to the holders of key k + 1: entries arr[lo, hi), sorted by pod
                int slot = table.slot(keys[k + 1]);
                long[] arr;
                int lo;
                int hi;
                if (slot < 0) {
                    live = 0;
                    break;
                } else if (table.many[slot] == null) {
                    single[0] = table.one[slot];
                    arr = single;
                    lo = 0;
                    hi = 1;
                } else {
                    arr = table.many[slot];
                    lo = 1;
                    hi = 1 + (int) arr[0];
                }
                int kept = 0;
                if (hi - lo > 8 * live) {
                    for (int j = 0; j < live; j++) {
                        int i = order[j];
                        int m = find(arr, lo, hi, pod[i]);
                        if (m != 0) {
                            held[i] = m;
                            order[kept++] = i;
                        }
                    }
                } else {
                    int a = lo;
                    for (int j = 0; j < live; j++) {
                        int i = order[j];
                        while (a < hi && (int) (arr[a] >>> 32) < pod[i]) {
                            a++;
                        }
                        if (a < hi && (int) (arr[a] >>> 32) == pod[i]) {
                            held[i] = (int) arr[a];
                            order[kept++] = i;
                        }
                    }
                }
                live = kept;
            }
            // best first: score desc, then pod name asc (the map walk's order), sorted on primitives
            int[] sorted = new int[c];
            for (int i = 0; i < c; i++) {
                sorted[i] = i;
            }
            mergeSort(sorted, new int[c], 0, c, score, pod);
            List<PrefixScores.PodScore> out = new ArrayList<>(c);
            for (int i : sorted) {
                Map<String, Integer> tiers = new TreeMap<>();
                for (int t = 0; t < nt; t++) {
                    int n = (alive[i] & (1 << t)) != 0 ? longest[i] : perTier[i * nt + t];
                    if (n > 0) {
                        tiers.put(tierNames.get(t), n);
                    }
                }
                out.add(new PrefixScores.PodScore(podNames.get(pod[i]), longest[i], tiers, score[i]));
            }
            return out;
        }

        private boolean before(int a, int b, double[] score, int[] pod) {
            int c = Double.compare(score[b], score[a]);
            return c != 0 ? c < 0 : nameRank[pod[a]] < nameRank[pod[b]];
        }

        private void mergeSort(int[] a, int[] tmp, int from, int to, double[] score, int[] pod) {
            if (to - from < 12) {
                for (int i = from + 1; i < to; i++) {
                    int v = a[i];
                    int j = i - 1;
                    while (j >= from && before(v, a[j], score, pod)) {
                        a[j + 1] = a[j];
                        j--;
                    }
                    a[j + 1] = v;
                }
                return;
            }
            int mid = (from + to) >>> 1;
            mergeSort(a, tmp, from, mid, score, pod);
            mergeSort(a, tmp, mid, to, score, pod);
            if (!before(a[mid], a[mid - 1], score, pod)) {
                return;
            }
            System.arraycopy(a, from, tmp, from, to - from);
            for (int i = from, l = from, r = mid; i < to; i++) {
                a[i] = r >= to || (l < mid && !before(tmp[r], tmp[l], score, pod)) ? tmp[l++] : tmp[r++];
            }
        }

        /** The tier mask of pod among entries[from, to), 0 when absent. */
        private static int find(long[] entries, int from, int to, int pod) {
            int lo = from;
            int hi = to - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                int p = (int) (entries[mid] >>> 32);
                if (p < pod) {
                    lo = mid + 1;
                } else if (p > pod) {
                    hi = mid - 1;
                } else {
                    return (int) entries[mid];
                }
            }
            return 0;
        }
    }

    /**
     * Open addressing, linear probing, backward-shift deletion (no tombstones). A slot is free when both its inline
     * entry is 0 and it has no entry array: a live entry always has a non-zero tier mask, so 0 never encodes one.
     */
    static final class KeyTable {
        private static final long[] NONE = new long[0];
        long[] keys = new long[16];
        long[] one = new long[16];      // the entry when exactly one pod holds the key
        long[][] many = new long[16][]; // [count, entries sorted by pod...] when several do
        int size;

        static int mix(long k) {
            k ^= k >>> 33;
            k *= 0xff51afd7ed558ccdL;
            k ^= k >>> 33;
            k *= 0xc4ceb9fe1a85ec53L;
            k ^= k >>> 33;
            return (int) k;
        }

        private boolean used(int s) {
            return one[s] != 0 || many[s] != null;
        }

        int slot(long key) {
            int m = keys.length - 1;
            for (int s = mix(key) & m; used(s); s = (s + 1) & m) {
                if (keys[s] == key) {
                    return s;
                }
            }
            return -1;
        }

        /** The entries of {@code key}, sorted by pod; do not modify. */
        long[] entries(long key) {
            int s = slot(key);
            if (s < 0) {
                return NONE;
            }
            if (many[s] == null) {
                return new long[] {one[s]};
            }
            long[] a = many[s];
            return Arrays.copyOfRange(a, 1, 1 + (int) a[0]);
        }

        int mask(long key, int pod) {
            int s = slot(key);
            if (s < 0) {
                return 0;
            }
            if (many[s] == null) {
                return (int) (one[s] >>> 32) == pod ? (int) one[s] : 0;
            }
            long[] a = many[s];
            int i = search(a, pod);
            return i > 0 ? (int) a[i] : 0;
        }

        /** Index in a [count, entries...] array of pod's entry, or -(insertion index) - 1. */
        private static int search(long[] a, int pod) {
            int lo = 1;
            int hi = (int) a[0];
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                int p = (int) (a[mid] >>> 32);
                if (p < pod) {
                    lo = mid + 1;
                } else if (p > pod) {
                    hi = mid - 1;
                } else {
                    return mid;
                }
            }
            return -lo - 1;
        }

        static long pack(int pod, int mask) {
            return ((long) pod << 32) | (mask & 0xffffffffL);
        }

        /** Adds tier bit(s) for pod at key; true when the bit was new. */
        boolean add(long key, int pod, int bit) {
            int m = keys.length - 1;
            int s = mix(key) & m;
            while (used(s)) {
                if (keys[s] == key) {
                    return addTo(s, pod, bit);
                }
                s = (s + 1) & m;
            }
            keys[s] = key;
            one[s] = pack(pod, bit);
            size++;
            if (size * 4 > keys.length * 3) { // load <= 3/4: with a mixed hash, ~2.5 probes per hit
                grow();
            }
            return true;
        }

        private boolean addTo(int s, int pod, int bit) {
            long[] a = many[s];
            if (a == null) {
                long e = one[s];
                int p = (int) (e >>> 32);
                if (p == pod) {
                    if (((int) e & bit) != 0) {
                        return false;
                    }
                    one[s] = e | (bit & 0xffffffffL);
                    return true;
                }
                long mine = pack(pod, bit);
                many[s] = p < pod ? new long[] {2, e, mine, 0} : new long[] {2, mine, e, 0};
                one[s] = 0;
                return true;
            }
            int i = search(a, pod);
            if (i > 0) {
                if (((int) a[i] & bit) != 0) {
                    return false;
                }
                a[i] |= bit & 0xffffffffL;
                return true;
            }
            int at = -i - 1;
            int n = (int) a[0];
            if (n + 1 == a.length) {
                a = Arrays.copyOf(a, a.length + (a.length >> 1) + 1);
                many[s] = a;
            }
            System.arraycopy(a, at, a, at + 1, n + 1 - at);
            a[at] = pack(pod, bit);
            a[0] = n + 1;
            return true;
        }

        /** Clears tier bit(s) for pod at key; true when one was set. */
        boolean remove(long key, int pod, int bit) {
            int s = slot(key);
            if (s < 0) {
                return false;
            }
            long[] a = many[s];
            if (a == null) {
                long e = one[s];
                if ((int) (e >>> 32) != pod || ((int) e & bit) == 0) {
                    return false;
                }
                long left = e & ~(bit & 0xffffffffL);
                if ((int) left == 0) {
                    delete(s);
                } else {
                    one[s] = left;
                }
                return true;
            }
            int i = search(a, pod);
            if (i < 0 || ((int) a[i] & bit) == 0) {
                return false;
            }
            a[i] &= ~(bit & 0xffffffffL);
            if ((int) a[i] == 0) {
                dropEntry(s, a, i);
            }
            return true;
        }

        private void dropEntry(int s, long[] a, int i) {
            int n = (int) a[0];
            System.arraycopy(a, i + 1, a, i, n - i);
            a[n] = 0;
            a[0] = n - 1;
            if (n - 1 == 1) {
                one[s] = a[1];
                many[s] = null;
            }
        }

        /** Drops every entry of pod: one scan, then the emptied keys deleted. */
        void removePod(int pod) {
            for (int s = 0; s < keys.length; s++) {
                long[] a = many[s];
                if (a == null) {
                    if (one[s] != 0 && (int) (one[s] >>> 32) == pod) {
                        // placeholder (pod 2^31, no tier: never a real entry) keeps probe chains intact until deleted
                        one[s] = Long.MIN_VALUE;
                    }
                } else {
                    int i = search(a, pod);
                    if (i > 0) {
                        dropEntry(s, a, i);
                    }
                }
            }
            // delete placeholders; a backward shift may move a placeholder into an earlier slot, so rescan there
            for (int s = 0; s < keys.length; s++) {
                while (many[s] == null && one[s] == Long.MIN_VALUE) {
                    delete(s);
                }
            }
        }

        private void delete(int s) {
            int m = keys.length - 1;
            int hole = s;
            int j = s;
            while (true) {
                j = (j + 1) & m;
                if (!used(j)) {
                    break;
                }
                int home = mix(keys[j]) & m;
                // move j into the hole when its home is not cyclically in (hole, j]
                if (((j - home) & m) >= ((j - hole) & m)) {
                    keys[hole] = keys[j];
                    one[hole] = one[j];
                    many[hole] = many[j];
                    hole = j;
                }
            }
            keys[hole] = 0;
            one[hole] = 0;
            many[hole] = null;
            size--;
        }

        private void grow() {
            long[] ok = keys;
            long[] oo = one;
            long[][] om = many;
            int n = ok.length * 2;
            keys = new long[n];
            one = new long[n];
            many = new long[n][];
            int m = n - 1;
            for (int i = 0; i < ok.length; i++) {
                if (oo[i] != 0 || om[i] != null) {
                    int s = mix(ok[i]) & m;
                    while (used(s)) {
                        s = (s + 1) & m;
                    }
                    keys[s] = ok[i];
                    one[s] = oo[i];
                    many[s] = om[i];
                }
            }
        }

        long bytes() {
            long b = 3L * 16 + keys.length * (8L + 8L + 4L);
            for (long[] a : many) {
                if (a != null) {
                    b += 16 + 8L * a.length;
                }
            }
            return b;
        }
    }
}
