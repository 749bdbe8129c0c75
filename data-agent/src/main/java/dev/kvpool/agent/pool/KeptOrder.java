package dev.kvpool.agent.pool;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The blocks a tier kept across a restart, captured while its index is rebuilt (least recently used first), for
 * the {@code stored} events that announce them. Its own compact arrays, not the live index: the order can be worked
 * out later, on another thread, while the tier already serves and evicts (a slot reused meanwhile would otherwise
 * be announced under its new key), and reading them in sequence is several times cheaper than walking the index's
 * LRU links and hash table, which cost ~1 µs a block at millions of blocks.
 */
public final class KeptOrder {
    static final KeptOrder EMPTY = new KeptOrder(new long[0], new long[0], new BitSet(), new int[0], 0,
            new String[0]);

    private final long[] keys;
    private final long[] parents;
    private final BitSet hasParent;
    private final int[] device;
    private final int n;
    private final String[] deviceIds;

    KeptOrder(long[] keys, long[] parents, BitSet hasParent, int[] device, int n, String[] deviceIds) {
        this.keys = keys;
        this.parents = parents;
        this.hasParent = hasParent;
        this.device = device;
        this.n = n;
        this.deviceIds = deviceIds;
    }

    public int size() {
        return n;
    }

    /** Per device, its kept keys, least recently used first. */
    /** Per device (by index) the kept keys, least recently used first (tests check the kept order with it). */
    public long[][] keysPerDevice() {
        int[] count = new int[deviceIds.length];
        for (int i = 0; i < n; i++) {
            count[device[i]]++;
        }
        long[][] out = new long[deviceIds.length][];
        for (int d = 0; d < out.length; d++) {
            out[d] = new long[count[d]];
        }
        int[] at = new int[deviceIds.length];
        for (int i = 0; i < n; i++) {
            out[device[i]][at[device[i]]++] = keys[i];
        }
        return out;
    }

    /**
     * In prefix order: a block whose parent was kept too comes after it (depth first from each chain's first block,
     * least recently used chains first, so a chain stays together), cut into runs where the device changes, of at
     * most 4,096 blocks. In LRU order a chain's last blocks, if used more recently than its first, would be announced
     * before their parents.
     */
    public List<PooledTier.KeptRun> inPrefixOrder() {
        // key -> position, open addressing over the kept keys (positions + 1; 0 = empty)
        int cap = Integer.highestOneBit(Math.max(4, n + n / 2) * 2 - 1);
        int mask = cap - 1;
        int[] table = new int[cap];
        for (int x = 0; x < n; x++) {
            int i = SlotIndex.home(keys[x], mask);
            while (table[i] != 0) {
                i = (i + 1) & mask;
            }
            table[i] = x + 1;
        }
        int[] par = new int[n], first = new int[n + 1], children = new int[n];
        for (int x = 0; x < n; x++) {
            par[x] = -1;
            if (hasParent.get(x)) {
                long p = parents[x];
                for (int i = SlotIndex.home(p, mask); table[i] != 0; i = (i + 1) & mask) {
                    if (keys[table[i] - 1] == p) {
                        par[x] = table[i] - 1 == x ? -1 : table[i] - 1;
                        break;
                    }
                }
            }
            if (par[x] >= 0) {
                first[par[x] + 1]++;
            }
        }
        table = null; // the largest array: let it go before the next ones
        for (int x = 0; x < n; x++) {
            first[x + 1] += first[x];
        }
        int[] fill = java.util.Arrays.copyOf(first, n);
        for (int x = 0; x < n; x++) {
            if (par[x] >= 0) {
                children[fill[par[x]]++] = x;
            }
        }
        fill = null;
        int[] order = new int[n], stack = new int[n];
        BitSet seen = new BitSet(n);
        int out = 0;
        for (int pass = 0; pass < 2; pass++) { // roots first; then whatever only a cycle of parents reaches
            for (int r = 0; r < n; r++) {
                if (seen.get(r) || (pass == 0 && par[r] >= 0)) {
                    continue;
                }
                int top = 0;
                stack[top++] = r;
                seen.set(r);
                while (top > 0) {
                    int x = stack[--top];
                    order[out++] = x;
                    for (int c = first[x + 1] - 1; c >= first[x]; c--) { // first child on top
                        if (!seen.get(children[c])) {
                            seen.set(children[c]);
                            stack[top++] = children[c];
                        }
                    }
                }
            }
        }
        List<PooledTier.KeptRun> runs = new ArrayList<>();
        for (int from = 0, to; from < n; from = to) {
            int d = device[order[from]];
            for (to = from + 1; to < n && to - from < 4096 && device[order[to]] == d; to++) {
                // same device: same run (at most 4,096, so no run costs more than a few hundred KB)
            }
            long[] k = new long[to - from];
            Long[] p = new Long[to - from];
            for (int j = from; j < to; j++) {
                int x = order[j];
                k[j - from] = keys[x];
                p[j - from] = hasParent.get(x) ? Long.valueOf(parents[x]) : null;
            }
            runs.add(new PooledTier.KeptRun(deviceIds[d], k, p));
        }
        return runs;
    }
}
