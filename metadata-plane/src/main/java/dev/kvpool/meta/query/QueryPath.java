package dev.kvpool.meta.query;

import dev.kvpool.api.proto.meta.BackendLocationSelector;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.CacheLocationVector;
import dev.kvpool.api.proto.meta.StorageType;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.LocationSink;
import dev.kvpool.meta.registry.Locations;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Read side of the index (§3.4): prefix, batch and reverse sliding-window matches over SERVING replicas on
 * available storages, GetCacheMeta, and the Part B length / per-backend variants. A hit refreshes the block's
 * access time (KVCM only refreshes on writes, which makes its LRU evict hot blocks).
 */
public final class QueryPath {
    private final Registry registry;

    private final java.time.InstantSource clock;

    public QueryPath(Registry registry) {
        this(registry, java.time.InstantSource.system());
    }

    /** With a clock of its own: simulations replay a trace's timeline through the real read path. */
    public QueryPath(Registry registry, java.time.InstantSource clock) {
        this.registry = registry;
        this.clock = clock;
    }

    int nowSec() {
        return (int) (clock.millis() / 1000);
    }

    /** Index of the SERVING replica a reader gets (weighted by storage type, §3.5.3), or -1. */
    int pickServing(Block bl, StorageType only) {
        if (bl == null) {
            return -1;
        }
        if (bl.size() == 1) {
            return usable(bl.a(0), only) != null ? 0 : -1;
        }
        int total = 0;
        int[] w = new int[bl.size()];
        for (int i = 0; i < w.length; i++) {
            Storage st = usable(bl.a(i), only);
            w[i] = st == null ? 0 : st.kind.readWeight;
            total += w[i];
        }
        if (total == 0) {
            return -1;
        }
        int r = ThreadLocalRandom.current().nextInt(total);
        for (int i = 0; i < w.length; i++) {
            r -= w[i];
            if (r < 0) {
                return i;
            }
        }
        return -1;
    }

    private Storage usable(long a, StorageType only) {
        if (Loc.status(a) != Loc.SERVING) {
            return null;
        }
        Storage st = registry.storageByNumber(Loc.storage(a));
        if (st == null || !st.available() || (only != null && Locations.wire(st.kind) != only)) {
            return null;
        }
        return st;
    }

    private CacheLocation render(Instance inst, Block bl, int replica, Set<String> filter) {
        long a = bl.a(replica);
        return Locations.render(inst, registry.storageByNumber(Loc.storage(a)), bl.key(), a, bl.b(replica), filter);
    }

    private void emit(Instance inst, Block bl, int replica, LocationSink sink) {
        long a = bl.a(replica);
        sink.location(inst, registry.storageByNumber(Loc.storage(a)), bl.key(), a, bl.b(replica));
    }

    private static Block[] lookup(Instance inst, long[] keys) {
        Block[] out = new Block[keys.length];
        inst.index.getAll(keys, 0, keys.length, out);
        return out;
    }

    /**
     * The read of {@link #prefix}, {@link #batch} or {@link #slidingWindow} (by query type) without blocking: the
     * lookup is the index's asynchronous one and the rest runs where it completes (an event loop of the store's
     * client). Validation errors complete the stage exceptionally.
     */
    public <S extends LocationSink> CompletionStage<S> locateAsync(Instance inst, long[] keys, Match type, Mask mask,
                                                                  int sw, S sink) {
        try {
            long[] q = switch (type) {
                case PREFIX -> unmasked(keys, mask);
                case BATCH -> keys;
                case SLIDING_WINDOW -> {
                    checkWindow(sw, keys.length);
                    yield keys;
                }
            };
            Block[] blocks = new Block[q.length];
            return inst.index.servingAsync(q, 0, q.length, blocks).thenApply(v -> switch (type) {
                case PREFIX -> prefixOf(inst, q, blocks, sink);
                case BATCH -> batchOf(inst, q, blocks, sink);
                case SLIDING_WINDOW -> slidingWindowOf(inst, q, sw, blocks, sink);
            });
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** QT_PREFIX_MATCH: masked keys skipped, stop at the first miss; the sink's count is the hit count. */
    public <S extends LocationSink> S prefix(Instance inst, long[] keys, Mask mask, S sink) {
        long[] q = unmasked(keys, mask);
        return prefixOf(inst, q, lookup(inst, q), sink);
    }

    private <S extends LocationSink> S prefixOf(Instance inst, long[] q, Block[] blocks, S sink) {
        int hits = 0;
        for (; hits < q.length; hits++) {
            int r = pickServing(blocks[hits], null);
            if (r < 0) {
                break;
            }
            emit(inst, blocks[hits], r, sink);
        }
        if (hits > 0) {
            inst.index.touch(q, 0, hits, nowSec());
        }
        return sink;
    }

    public int prefixLength(Instance inst, long[] keys) {
        Block[] blocks = lookup(inst, keys);
        int n = 0;
        while (n < keys.length && pickServing(blocks[n], null) >= 0) {
            n++;
        }
        return n;
    }

    static long[] unmasked(long[] keys, Mask mask) {
        long[] q = new long[keys.length];
        int n = 0;
        for (int i = 0; i < keys.length; i++) {
            if (!mask.masked(i)) {
                q[n++] = keys[i];
            }
        }
        return n == keys.length ? keys : Arrays.copyOf(q, n);
    }

    /** QT_BATCH_GET: one entry per key, a placeholder (uri "") for each miss; the mask is ignored. */
    public <S extends LocationSink> S batch(Instance inst, long[] keys, S sink) {
        return batchOf(inst, keys, lookup(inst, keys), sink);
    }

    private <S extends LocationSink> S batchOf(Instance inst, long[] keys, Block[] blocks, S sink) {
        long[] hits = new long[keys.length];
        int nh = 0;
        for (int i = 0; i < keys.length; i++) {
            int r = pickServing(blocks[i], null);
            if (r < 0) {
                sink.placeholder(inst);
            } else {
                emit(inst, blocks[i], r, sink);
                hits[nh++] = keys[i];
            }
        }
        inst.index.touch(hits, 0, nh, nowSec());
        return sink;
    }

    public int batchHits(Instance inst, long[] keys) {
        Block[] blocks = lookup(inst, keys);
        int n = 0;
        for (Block b : blocks) {
            if (pickServing(b, null) >= 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * QT_REVERSE_ROLL_SW_MATCH: the right-most window of {@code sw} consecutive served keys; returns the window
     * start or -1. After a failing key the next candidate window ends just before it.
     */
    int window(Block[] blocks, int[] replica, int sw) {
        int n = blocks.length;
        for (int i = 0; i < n; i++) {
            replica[i] = pickServing(blocks[i], null);
        }
        int base = n - sw;
        while (base >= 0) {
            int fail = -1;
            for (int o = sw - 1; o >= 0; o--) {
                if (replica[base + o] < 0) {
                    fail = o;
                    break;
                }
            }
            if (fail < 0) {
                return base;
            }
            base = base + fail - sw;
        }
        return -1;
    }

    static void checkWindow(int sw, int n) {
        if (sw <= 0 || sw > n) {
            throw MetaException.invalid("sw_size must be in [1, " + n + "] (the number of keys), got " + sw);
        }
    }

    public <S extends LocationSink> S slidingWindow(Instance inst, long[] keys, int sw, S sink) {
        checkWindow(sw, keys.length);
        return slidingWindowOf(inst, keys, sw, lookup(inst, keys), sink);
    }

    private <S extends LocationSink> S slidingWindowOf(Instance inst, long[] keys, int sw, Block[] blocks, S sink) {
        int[] replica = new int[keys.length];
        int start = window(blocks, replica, sw);
        for (int i = 0; i < keys.length; i++) {
            if (start >= 0 && i >= start && i < start + sw) {
                emit(inst, blocks[i], replica[i], sink);
            } else {
                sink.placeholder(inst);
            }
        }
        if (start >= 0) {
            inst.index.touch(keys, start, sw, nowSec());
        }
        return sink;
    }

    public int slidingWindowLength(Instance inst, long[] keys, int sw) {
        checkWindow(sw, keys.length);
        return window(lookup(inst, keys), new int[keys.length], sw) >= 0 ? sw : 0;
    }

    /** GetCacheMeta: masked keys dropped, first replica in any status, plus {"id","status"} JSON per key. */
    public void meta(Instance inst, long[] keys, Mask mask, List<CacheLocation> locations, List<String> metas) {
        long[] q = unmasked(keys, mask);
        Block[] blocks = lookup(inst, q);
        for (Block bl : blocks) {
            if (bl == null || bl.size() == 0) {
                locations.add(CacheLocation.newBuilder().setType(StorageType.ST_UNSPECIFIED).setSpecSize(0).build());
                metas.add("{\"status\":\"CLS_NOT_FOUND\"}");
            } else {
                locations.add(render(inst, bl, 0, null));
                metas.add("{\"id\":\"" + Loc.idString(bl.a(0)) + "\",\"status\":\"" + Loc.statusName(Loc.status(bl.a(0)))
                        + "\"}");
            }
        }
    }

    /** GetCacheLocationsByBackend (§B.3): per key and selector the SERVING replica of that backend type. */
    public List<CacheLocationVector> byBackend(Instance inst, long[] keys, List<BackendLocationSelector> selectors,
                                               Set<String> filter) {
        Block[] blocks = lookup(inst, keys);
        List<CacheLocationVector> out = new ArrayList<>(keys.length);
        for (Block bl : blocks) {
            CacheLocationVector.Builder v = CacheLocationVector.newBuilder();
            for (BackendLocationSelector sel : selectors) {
                int r = pickServing(bl, sel.getBackendType());
                if (r >= 0) {
                    v.addLocations(render(inst, bl, r, filter));
                }
            }
            out.add(v.build());
        }
        return out;
    }
}
