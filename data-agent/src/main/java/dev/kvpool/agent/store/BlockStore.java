package dev.kvpool.agent.store;

import dev.kvpool.agent.events.EventSink;
import dev.kvpool.agent.events.GatedSink;
import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.agent.pool.KeptOrder;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.tier.GlobalPoolTier;
import dev.kvpool.agent.tier.Tier;
import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agent's block store over its tiers (G1 GPU optional, G2 host pool, G3 NVMe pool, G4 global pool):
 * <ul>
 *   <li>save: the bytes go to the host pool (the first tier) and the call returns once they are there; the NVMe
 *   copy (deferred writes, drained in idle windows) and the global-pool copy follow in the background, straight
 *   from the host slots, which stay pinned until those writes finish;</li>
 *   <li>load: each tier in order is asked for the keys still missing (an NVMe load is grouped by device and runs
 *   on all devices at once); blocks found below the host pool are promoted into it;</li>
 *   <li>a global-pool copy that failed because the metadata plane was out of reach is owed: the block goes into a
 *   {@link PoolBacklog}, and a background thread writes it once the plane answers again, from the host pool or the
 *   NVMe tier, wherever the bytes still are;</li>
 *   <li>every change is an event ({@code stored}, {@code removed}, {@code onboarded}) with its medium; the first
 *   events of a store are {@code all_cleared} and the NVMe blocks kept from before a restart ({@code stored}, in
 *   prefix order, worked out on a thread of their own while the store already serves; events of that time wait
 *   behind them).</li>
 * </ul>
 */
public final class BlockStore implements AutoCloseable {
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(BlockStore.class.getName());
    private final int blockBytes;
    private final int blockTokens;
    private final Tier gpu;
    private final PooledTier host;
    private final PooledTier nvme;
    private final GlobalPoolTier pool;
    private final EventSink events;
    private final List<Tier> loadOrder = new ArrayList<>();
    private final ConcurrentLinkedQueue<CompletableFuture<?>> background = new ConcurrentLinkedQueue<>();
    private final AtomicLong saved = new AtomicLong(), loadedHits = new AtomicLong(), loadedMisses = new AtomicLong(),
            writeBehindFailures = new AtomicLong(), backlogWritten = new AtomicLong(), backlogGone = new AtomicLong(),
            lateRetries = new AtomicLong();
    private final PoolBacklog backlog;
    private final Thread backlogWriter;
    private final CompletableFuture<Void> keptAnnounced = new CompletableFuture<>();
    private volatile boolean closed;
    /** NVMe hits into the GPU tier straight from the slot files (null: no GPU tier or no NVMe tier). */
    private volatile GpuPromoter promoter;
    private volatile String gpuPathNote = "the GPU tier is off";

    /** @param blockTokens tokens per block, the {@code block_size} of stored events */
    public BlockStore(int blockBytes, int blockTokens, Tier gpu, PooledTier host, PooledTier nvme, GlobalPoolTier pool,
                      EventSink events) {
        this(blockBytes, blockTokens, gpu, host, nvme, pool, events, null);
    }

    /**
     * @param backlogLog where the owed global-pool copies are also kept, so that a restart (the NVMe tier keeps its
     *                   blocks) still owes them; null: in memory only
     */
    public BlockStore(int blockBytes, int blockTokens, Tier gpu, PooledTier host, PooledTier nvme, GlobalPoolTier pool,
                      EventSink events, SpoolLog backlogLog) {
        this.blockBytes = blockBytes;
        this.blockTokens = blockTokens;
        this.gpu = gpu;
        this.host = host;
        this.nvme = nvme;
        this.pool = pool;
        EventSink sink = events == null ? EventSink.NONE : events;
        // a restarted agent announces what the NVMe tier kept from a thread of its own, while it already serves:
        // what happens meanwhile is held back until the announcement is out
        KeptOrder kept = nvme == null ? null : nvme.takeKept(); // taken in any case: its arrays go with it
        GatedSink gate = kept == null || kept.size() == 0 || sink == EventSink.NONE ? null : new GatedSink(sink);
        this.events = gate == null ? sink : gate;
        if (gpu != null) {
            loadOrder.add(gpu);
        }
        loadOrder.add(host);
        if (nvme != null) {
            loadOrder.add(nvme);
        }
        if (pool != null) {
            loadOrder.add(pool);
        }
        for (Tier t : loadOrder) {
            t.onEvict(keys -> this.events.publish(BlockEvent.removed(keys, t.medium())));
        }
        this.backlog = new PoolBacklog((int) Math.min(Integer.MAX_VALUE - 8,
                host.capacity() + (nvme == null ? 0L : nvme.capacity())), backlogLog);
        if (backlog.keptFromLastRun() > 0) {
            LOG.info("global pool: " + backlog.keptFromLastRun() + " copies owed since the last run (saved while the"
                    + " metadata plane was out of reach) are written once it answers");
        }
        this.backlogWriter = pool == null ? null
                : Thread.ofPlatform().daemon().name("kvpool-pool-backlog").start(this::writeBacklog);
        // a (re)started agent: what consumers knew of this agent is void; then what the NVMe tier kept
        sink.publish(BlockEvent.allCleared());
        if (gate == null) {
            keptAnnounced.complete(null);
        } else {
            Thread.ofPlatform().daemon().name("kvpool-kept-events").start(() -> {
                long t0 = System.nanoTime();
                boolean[] paced = {true}; // at the pace Kafka takes them, so the spool does not drop all_cleared
                Runnable pace = () -> {
                    if (paced[0] && !sink.awaitRoom(10_000)) {
                        paced[0] = false;
                        LOG.warning("stored events for the blocks the NVMe tier kept: Kafka takes none; the rest"
                                + " goes into the spool without waiting (its oldest batches go when it is full)");
                    }
                };
                EventSink pacedSink = e -> {
                    pace.run();
                    sink.publish(e);
                };
                try {
                    for (PooledTier.KeptRun r : kept.inPrefixOrder()) { // parents before children
                        publishStored(pacedSink, r.keys(), r.parents(), nvme.medium(), r.device());
                    }
                    LOG.info(String.format("stored events for the %d blocks the NVMe tier kept: sent in %d ms",
                            kept.size(), (System.nanoTime() - t0) / 1_000_000));
                } catch (RuntimeException e) {
                    LOG.warning("stored events for the blocks the NVMe tier kept: " + e);
                } finally {
                    gate.open(pace); // what was held meanwhile goes at the same pace
                    keptAnnounced.complete(null);
                }
            });
        }
    }

    /**
     * From now on NVMe hits of a load are also promoted into the GPU tier through {@code p} (in the background,
     * after the load answered); {@code note} says why there is none where {@code p} is null.
     */
    void attachGpuPromoter(GpuPromoter p, String note) {
        this.promoter = p;
        this.gpuPathNote = note;
    }

    /** The NVMe → GPU promoter, or null ({@link #gpuPathNote} says why). */
    public GpuPromoter gpuPromoter() {
        return promoter;
    }

    public String gpuPathNote() {
        return gpuPathNote;
    }

    /** NVMe hits into the GPU tier; their stored events (medium GPU) once they are there. */
    private void promoteToGpu(long[] keys) {
        GpuPromoter p = promoter;
        if (p == null || gpu == null || keys.length == 0 || closed) {
            return;
        }
        CompletableFuture<?> done = p.promote(keys).thenAccept(r -> {
            if (r.keys().length > 0) {
                publishStored(r.keys(), r.parents(), gpu.medium(), "gpu0");
            }
        });
        background.add(done);
        done.whenComplete((r, e) -> background.remove(done));
    }

    /** Done once the {@code stored} events of the blocks kept from before the restart are out (tests, status). */
    public CompletableFuture<Void> keptAnnounced() {
        return keptAnnounced;
    }

    public int blockBytes() {
        return blockBytes;
    }

    public List<Tier> tiers() {
        return List.copyOf(loadOrder);
    }

    /** The GPU tier (G1), or null when off. */
    public Tier gpu() {
        return gpu;
    }

    public PooledTier host() {
        return host;
    }

    public PooledTier nvme() {
        return nvme;
    }

    public GlobalPoolTier pool() {
        return pool;
    }

    /**
     * Saves blocks; returns when they are in the host pool (per key whether they are).
     *
     * @param parent the block hash before the first key, or null
     */
    public boolean[] save(long[] keys, MemorySegment[] src, Long parent) {
        // the keys of one save are a chain: each block's parent is the key before it
        Long[] chain = new Long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            chain[i] = i == 0 ? parent : Long.valueOf(keys[i - 1]);
        }
        boolean[] ok = host.put(keys, src, false, null, chain).join();
        long[] stored = select(keys, ok, true);
        if (stored.length == 0) {
            return ok;
        }
        Long[] parents = new Long[stored.length];
        for (int i = 0, j = 0; i < keys.length; i++) {
            if (ok[i]) {
                parents[j++] = chain[i];
            }
        }
        saved.addAndGet(stored.length);
        publishStored(stored, parents, host.medium(), "host");
        if (gpu != null) {
            writeBehind(gpu, stored, parents, "gpu0");
        }
        if (nvme != null) {
            writeBehind(nvme, stored, parents, "nvme");
        }
        if (pool != null) {
            writeBehind(pool, stored, parents, "pool");
        }
        return ok;
    }

    /**
     * {@code stored} events for blocks with their parents: one event per run of blocks that extend each other (the
     * vocabulary's {@code block_hashes} are a chain, {@code parent_block_hash} the block before the first), so a
     * block whose neighbour failed, or whose parent is unknown, is never announced as a link of someone else's
     * chain.
     */
    private void publishStored(long[] keys, Long[] parents, String medium, String where) {
        publishStored(events, keys, parents, medium, where);
    }

    private void publishStored(EventSink to, long[] keys, Long[] parents, String medium, String where) {
        int from = 0;
        for (int i = 1; i <= keys.length; i++) {
            boolean chained = i < keys.length && parents[i] != null && parents[i] == keys[i - 1] && i - from < 1024;
            if (!chained) {
                long[] run = Arrays.copyOfRange(keys, from, i);
                to.publish(BlockEvent.stored(run, parents[from], blockTokens, medium, where,
                        (long) run.length * blockBytes));
                from = i;
            }
        }
    }

    private void writeBehind(Tier tier, long[] keys, Long[] parents, String where) {
        Object[] handles = new Object[keys.length];
        MemorySegment[] mem = host.pinMemory(keys, handles);
        List<Integer> have = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            if (mem[i] != null) {
                have.add(i);
            }
        }
        long[] k = new long[have.size()];
        Long[] par = new Long[have.size()];
        MemorySegment[] m = new MemorySegment[have.size()];
        for (int j = 0; j < k.length; j++) {
            k[j] = keys[have.get(j)];
            par[j] = parents[have.get(j)];
            m[j] = mem[have.get(j)];
        }
        if (k.length == 0) {
            host.release(handles);
            return;
        }
        CompletableFuture<boolean[]> f;
        int[] owedAgain = {0}; // blocks of this copy owed for another try: not failures
        if (tier instanceof PooledTier p) { // the host pool already has each block's CRC32C
            int[] crcs = new int[k.length];
            for (int j = 0; j < k.length; j++) {
                crcs[j] = PooledTier.crcOf(handles[have.get(j)]);
            }
            f = p.put(k, m, true, crcs, par);
        } else if (tier == pool) {
            // blocks left out because the session neared its deadline (the plane or the storage was slow) are owed
            // like those of an outage: the backlog writer tries them once more, in a session of their own
            f = pool.putOutcome(k, m).thenApply(o -> {
                owedAgain[0] = owe(k, par, o.late());
                return o.stored();
            });
        } else {
            f = tier.put(k, m, true);
        }
        CompletableFuture<?> done = f.whenComplete((res, err) -> {
            host.release(handles);
            writeBehindDone(tier, k, par, where, res, err, owedAgain[0]);
        });
        background.add(done);
        done.whenComplete((r, e) -> background.remove(done));
    }

    /** The end of a background copy: events for what was stored; what the plane could not take yet is owed. */
    private void writeBehindDone(Tier tier, long[] k, Long[] par, String where, boolean[] res, Throwable err,
                                 int owed) {
        if (err != null) {
            if (tier == pool && GlobalPoolTier.outOfReach(err)) {
                backlog.add(k, par);
            } else {
                writeBehindFailures.addAndGet(k.length);
            }
            return;
        }
        long[] stored = select(k, res, true);
        writeBehindFailures.addAndGet(k.length - stored.length - owed);
        if (stored.length > 0) {
            Long[] storedParents = new Long[stored.length];
            for (int i = 0, j = 0; i < k.length; i++) {
                if (res[i]) {
                    storedParents[j++] = par[i];
                }
            }
            publishStored(stored, storedParents, tier.medium(), where);
        }
    }

    /** Puts the flagged blocks in the backlog (another try, in a session of their own); returns how many. */
    private int owe(long[] k, Long[] par, boolean[] flagged) {
        long[] keys = select(k, flagged, true);
        if (keys.length == 0) {
            return 0;
        }
        Long[] parents = new Long[keys.length];
        for (int i = 0, j = 0; i < k.length; i++) {
            if (flagged[i]) {
                parents[j++] = par[i];
            }
        }
        backlog.add(keys, parents);
        lateRetries.addAndGet(keys.length);
        return keys.length;
    }

    /**
     * Writes the owed global-pool copies, oldest first, in batches of at most 32 MiB, while the plane answers;
     * backs off (1 s doubling to 30 s) while it does not. A block that left the local tiers meanwhile (evicted or
     * removed by the engine) is no longer owed.
     */
    private void writeBacklog() {
        int batch = (int) Math.max(1, Math.min(256, (32L << 20) / blockBytes));
        long[] k = new long[batch];
        Long[] p = new Long[batch];
        long backoff = 1000;
        long writtenSinceEmpty = 0;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) { // device workers fill it
            MemorySegment scratch = null; // for blocks only the NVMe tier still holds
            while (!closed) {
                backlog.awaitEntries(1000);
                int n = backlog.take(k, p);
                if (n == 0) {
                    continue;
                }
                if (scratch == null && nvme != null) {
                    scratch = arena.allocate((long) batch * blockBytes, 4096);
                }
                try {
                    writtenSinceEmpty += writeOwed(Arrays.copyOf(k, n), Arrays.copyOf(p, n), scratch);
                    backlog.settled(n);
                    backoff = 1000;
                    if (backlog.owed() == 0 && writtenSinceEmpty > 0) {
                        LOG.info("global pool: " + writtenSinceEmpty + " blocks saved while the metadata plane was"
                                + " out of reach are written now");
                        writtenSinceEmpty = 0;
                    }
                } catch (StillOutOfReach e) { // what is still local goes back in front
                    backlog.putBack(e.keys, e.parents, e.keys.length, n);
                    Thread.sleep(backoff);
                    backoff = Math.min(30_000, backoff * 2);
                } catch (RuntimeException e) { // a local failure, not a matter of waiting: no longer owed
                    backlog.settled(n);
                    writeBehindFailures.addAndGet(n);
                    LOG.warning("global pool: " + n + " owed blocks not written: " + e);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // closing
        }
    }

    /** The plane is still out of reach: the blocks of the batch that are still local, to be put back. */
    private static final class StillOutOfReach extends RuntimeException {
        final long[] keys;
        final Long[] parents;

        StillOutOfReach(long[] keys, Long[] parents, RuntimeException cause) {
            super(cause.getMessage(), cause, false, false);
            this.keys = keys;
            this.parents = parents;
        }
    }

    /**
     * One batch of owed blocks, from the host pool (pinned, no copy) or else read back from the NVMe tier; blocks
     * found in neither are no longer owed. Throws, with the rest back in the backlog, while the plane is out of reach.
     */
    private int writeOwed(long[] keys, Long[] parents, MemorySegment scratch) {
        Object[] handles = new Object[keys.length];
        MemorySegment[] mem = host.pinMemory(keys, handles);
        try {
            if (nvme != null) {
                List<Integer> fromNvme = new ArrayList<>();
                for (int i = 0; i < keys.length; i++) {
                    if (mem[i] == null && nvme.contains(keys[i])) {
                        fromNvme.add(i);
                    }
                }
                if (!fromNvme.isEmpty()) {
                    long[] nk = new long[fromNvme.size()];
                    MemorySegment[] dst = new MemorySegment[nk.length];
                    for (int j = 0; j < nk.length; j++) {
                        nk[j] = keys[fromNvme.get(j)];
                        dst[j] = scratch.asSlice((long) j * blockBytes, blockBytes);
                    }
                    boolean[] hit;
                    try {
                        hit = nvme.get(nk, dst).join();
                    } catch (RuntimeException e) { // a failed read is a miss, as for any load
                        hit = new boolean[nk.length];
                    }
                    for (int j = 0; j < nk.length; j++) {
                        if (hit[j]) {
                            mem[fromNvme.get(j)] = dst[j];
                        }
                    }
                }
            }
            List<Integer> have = new ArrayList<>();
            for (int i = 0; i < keys.length; i++) {
                if (mem[i] != null) {
                    have.add(i);
                }
            }
            backlogGone.addAndGet(keys.length - have.size());
            if (have.isEmpty()) {
                return 0;
            }
            long[] k = new long[have.size()];
            Long[] par = new Long[k.length];
            MemorySegment[] m = new MemorySegment[k.length];
            for (int j = 0; j < k.length; j++) {
                k[j] = keys[have.get(j)];
                par[j] = parents[have.get(j)];
                m[j] = mem[have.get(j)];
            }
            boolean[] res;
            try {
                res = pool.put(k, m, false).join();
            } catch (RuntimeException e) {
                if (GlobalPoolTier.outOfReach(e)) {
                    throw new StillOutOfReach(k, par, e);
                }
                writeBehindFailures.addAndGet(k.length); // not a matter of waiting: not owed any more
                return 0;
            }
            backlogWritten.addAndGet(k.length);
            writeBehindDone(pool, k, par, "pool", res, null, 0);
            return k.length;
        } finally {
            host.release(handles);
        }
    }

    /** Result of a load: per key whether found and in which tier. */
    public record LoadResult(boolean[] found, String[] tier) {
        public int hits() {
            int n = 0;
            for (boolean b : found) {
                n += b ? 1 : 0;
            }
            return n;
        }
    }

    /** Loads blocks into {@code dst}, asking each tier in turn for what is still missing. */
    public LoadResult load(long[] keys, MemorySegment[] dst) {
        boolean[] found = new boolean[keys.length];
        String[] where = new String[keys.length];
        for (Tier t : loadOrder) {
            List<Integer> miss = new ArrayList<>();
            for (int i = 0; i < keys.length; i++) {
                if (!found[i]) {
                    miss.add(i);
                }
            }
            if (miss.isEmpty()) {
                break;
            }
            long[] k = new long[miss.size()];
            MemorySegment[] d = new MemorySegment[miss.size()];
            for (int j = 0; j < k.length; j++) {
                k[j] = keys[miss.get(j)];
                d[j] = dst[miss.get(j)];
            }
            boolean[] hit;
            try {
                hit = t.get(k, d).join();
            } catch (RuntimeException e) {
                continue; // a tier that fails is a miss, the next tier may have it
            }
            for (int j = 0; j < k.length; j++) {
                if (hit[j]) {
                    found[miss.get(j)] = true;
                    where[miss.get(j)] = t.name();
                }
            }
            served(t, k, d, hit);
        }
        int h = 0;
        for (boolean b : found) {
            h += b ? 1 : 0;
        }
        loadedHits.addAndGet(h);
        loadedMisses.addAndGet(keys.length - h);
        return new LoadResult(found, where);
    }

    /**
     * What a load found in tier {@code t}: {@code onboarded} events, and the blocks found below the host pool
     * promoted into it (their bytes read from {@code d}, where the load put them).
     */
    private void served(Tier t, long[] k, MemorySegment[] d, boolean[] hit) {
        List<Long> promote = new ArrayList<>();
        List<MemorySegment> promoteSrc = new ArrayList<>();
        for (int j = 0; j < k.length; j++) {
            if (hit[j] && t != host && t != gpu) {
                promote.add(k[j]);
                promoteSrc.add(d[j].asSlice(0, blockBytes));
            }
        }
        long[] hits = select(k, hit, true);
        if (hits.length > 0) {
            events.publish(BlockEvent.onboarded(hits, t.medium()));
            if (t == nvme) { // the next load of this prefix is served from GPU memory
                promoteToGpu(hits);
            }
        }
        if (!promote.isEmpty()) {
            long[] pk = promote.stream().mapToLong(Long::longValue).toArray();
            // parents as the serving tier knows them (the NVMe tier from the save; the global pool not at all)
            Long[] pp = t instanceof PooledTier pt ? pt.parents(pk) : new Long[pk.length];
            boolean[] pok = host.put(pk, promoteSrc.toArray(MemorySegment[]::new), false, null, pp).join();
            long[] stored = select(pk, pok, true);
            if (stored.length > 0) {
                Long[] sp = new Long[stored.length];
                for (int i = 0, j = 0; i < pk.length; i++) {
                    if (pok[i]) {
                        sp[j++] = pp[i];
                    }
                }
                publishStored(stored, sp, host.medium(), "host");
            }
        }
    }

    /** Told of each layer of a layer-wise load once it is in place, in layer order. */
    public interface LayerListener {
        /**
         * Layer {@code layer} of every block not in {@code missing} (indexes into the load's keys, ascending,
         * cumulative) is in its buffer and verified.
         */
        void layer(int layer, int[] missing);
    }

    /** Layers per block (1 unless {@code kvpool.agent.layers} says otherwise). */
    public int layers() {
        return host.layout().layers();
    }

    /**
     * Loads blocks as {@link #load} does, telling {@code listener} of each layer as soon as it is in {@code dst} for
     * every block found and verified, in layer order. Each block is served by the first tier that holds it: host
     * and NVMe blocks layer by layer at once, reads queued in layer order on every device (and verified per layer
     * where the layout is layered; contiguous: whole blocks, every layer told once they are in); GPU-tier and
     * global-pool blocks whole, before layer 0 is told. A block whose layer fails its read or check is missing from
     * that layer on (and dropped from its tier), never reported with wrong bytes; a block that leaves its tier between
     * the look-up and the read is missing from layer 0 (no other tier is asked). Promotion into the host pool and
     * the events come after the last layer, before this returns. A listener that throws gets no more layers; the
     * load still completes (no read is left writing into {@code dst}), then the exception is thrown.
     */
    public LoadResult loadLayerwise(long[] keys, MemorySegment[] dst, LayerListener listener) {
        int n = keys.length, layers = layers();
        List<List<Integer>> by = new ArrayList<>(); // per tier of loadOrder: the keys it serves
        for (int t = 0; t < loadOrder.size(); t++) {
            by.add(new ArrayList<>());
        }
        for (int i = 0; i < n; i++) {
            for (int t = 0; t < loadOrder.size(); t++) {
                Tier tier = loadOrder.get(t);
                if (tier == pool || tier.contains(keys[i])) { // the pool is asked for whatever no local tier has
                    by.get(t).add(i);
                    break;
                }
            }
        }
        List<long[]> tk = new ArrayList<>();
        List<MemorySegment[]> td = new ArrayList<>();
        List<List<CompletableFuture<boolean[]>>> perLayer = new ArrayList<>();
        for (int t = 0; t < loadOrder.size(); t++) {
            List<Integer> idx = by.get(t);
            long[] k = new long[idx.size()];
            MemorySegment[] d = new MemorySegment[idx.size()];
            for (int j = 0; j < k.length; j++) {
                k[j] = keys[idx.get(j)];
                d[j] = dst[idx.get(j)];
            }
            tk.add(k);
            td.add(d);
            Tier tier = loadOrder.get(t);
            List<CompletableFuture<boolean[]>> f;
            if (k.length == 0) {
                f = java.util.Collections.nCopies(layers, CompletableFuture.completedFuture(new boolean[0]));
            } else if (tier instanceof PooledTier p && (tier == host || tier == nvme)) {
                f = p.getLayers(k, d);
            } else { // whole blocks, all in before layer 0 is told
                CompletableFuture<boolean[]> all = tier.get(k, d);
                f = java.util.Collections.nCopies(layers, all);
            }
            perLayer.add(f);
        }
        boolean[] bad = new boolean[n]; // not served, or a layer failed: missing from then on
        boolean[] served = new boolean[n];
        for (List<Integer> idx : by) {
            for (int i : idx) {
                served[i] = true;
            }
        }
        for (int i = 0; i < n; i++) {
            bad[i] = !served[i];
        }
        RuntimeException failed = null;
        for (int l = 0; l < layers; l++) {
            for (int t = 0; t < loadOrder.size(); t++) {
                boolean[] ok;
                try {
                    ok = perLayer.get(t).get(l).join();
                } catch (RuntimeException e) {
                    ok = new boolean[tk.get(t).length]; // a tier that fails is a miss
                }
                List<Integer> idx = by.get(t);
                for (int j = 0; j < idx.size(); j++) {
                    if (!ok[j]) {
                        bad[idx.get(j)] = true;
                    }
                }
            }
            if (failed == null) {
                try {
                    listener.layer(l, java.util.stream.IntStream.range(0, n).filter(i -> bad[i]).toArray());
                } catch (RuntimeException e) {
                    failed = e; // the rest is still waited for: no read may land in dst after this returns
                }
            }
        }
        boolean[] found = new boolean[n];
        String[] where = new String[n];
        for (int t = 0; t < loadOrder.size(); t++) {
            List<Integer> idx = by.get(t);
            boolean[] hit = new boolean[idx.size()];
            for (int j = 0; j < idx.size(); j++) {
                int i = idx.get(j);
                hit[j] = !bad[i];
                found[i] = hit[j];
                where[i] = hit[j] ? loadOrder.get(t).name() : null;
            }
            if (failed == null && idx.size() > 0) {
                served(loadOrder.get(t), tk.get(t), td.get(t), hit);
            }
        }
        if (failed != null) {
            throw failed;
        }
        int h = 0;
        for (boolean b : found) {
            h += b ? 1 : 0;
        }
        loadedHits.addAndGet(h);
        loadedMisses.addAndGet(n - h);
        return new LoadResult(found, where);
    }

    /** Per key the tiers holding it (local tiers from their index, the global pool by one BATCH_GET). */
    public List<List<String>> query(long[] keys) {
        List<List<String>> out = new ArrayList<>();
        boolean[] inPool = pool == null ? null : safePresent(keys);
        for (int i = 0; i < keys.length; i++) {
            List<String> l = new ArrayList<>();
            for (Tier t : loadOrder) {
                if (t == pool) {
                    if (inPool != null && inPool[i]) {
                        l.add(t.name());
                    }
                } else if (t.contains(keys[i])) {
                    l.add(t.name());
                }
            }
            out.add(l);
        }
        return out;
    }

    private boolean[] safePresent(long[] keys) {
        try {
            return pool.present(keys);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Removes blocks from the local tiers (and the pool when {@code global}); per key whether any held it. */
    public boolean[] remove(long[] keys, boolean global) {
        boolean[] any = new boolean[keys.length];
        for (Tier t : loadOrder) {
            if (t == pool && !global) {
                continue;
            }
            boolean[] r = new boolean[keys.length];
            for (int i = 0; i < keys.length; i++) {
                r[i] = t.remove(keys[i]);
                any[i] |= r[i];
            }
            long[] gone = select(keys, r, true);
            if (gone.length > 0) {
                events.publish(BlockEvent.removed(gone, t.medium()));
            }
        }
        return any;
    }

    /** Waits for the write-behinds started so far (tests, shutdown). */
    public void awaitWriteBehind() {
        for (CompletableFuture<?> f : background.toArray(CompletableFuture[]::new)) {
            try {
                f.join();
            } catch (RuntimeException ignored) {
                // counted in writeBehindFailures
            }
        }
    }

    public long savedBlocks() {
        return saved.get();
    }

    public long loadHits() {
        return loadedHits.get();
    }

    public long loadMisses() {
        return loadedMisses.get();
    }

    public long writeBehindFailures() {
        return writeBehindFailures.get();
    }

    /** Global-pool copies owed because the metadata plane was out of reach (see {@link #writeBacklog}). */
    public int poolBacklog() {
        return backlog.owed();
    }

    /** Owed copies read back at start-up (a previous run stopped during a plane outage). */
    public int poolBacklogKeptFromLastRun() {
        return backlog.keptFromLastRun();
    }

    /** Owed copies dropped because the backlog was full (oldest first). */
    public long poolBacklogDropped() {
        return backlog.dropped();
    }

    /** Owed copies written once the plane answered again. */
    public long poolBacklogWritten() {
        return backlogWritten.get();
    }

    /** Owed copies given up because the block had left the local tiers before the plane came back. */
    public long poolBacklogGone() {
        return backlogGone.get();
    }

    /**
     * Pool copies left out because their session neared its deadline, and put in the backlog for one more try
     * (the backlog writer's own late blocks are not tried again: a plane that slow is left to catch up).
     */
    public long poolLateRetries() {
        return lateRetries.get();
    }

    static long[] select(long[] keys, boolean[] mask, boolean want) {
        return java.util.stream.IntStream.range(0, keys.length).filter(i -> mask[i] == want).mapToLong(i -> keys[i])
                .toArray();
    }

    @Override
    public void close() {
        try { // the announcement's events before the publisher closes
            keptAnnounced.get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.warning("stored events for the blocks the NVMe tier kept: not all out at close: " + e);
        }
        awaitWriteBehind();
        closed = true;
        GpuPromoter p = promoter;
        if (p != null) { // before the tiers: its cuFile registrations go before the GPU memory does
            awaitWriteBehind();
            p.close();
        }
        if (backlogWriter != null) {
            backlogWriter.interrupt();
            try {
                backlogWriter.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (backlog.owed() > 0) {
                LOG.warning("global pool: " + backlog.owed() + " blocks saved while the metadata plane was out of"
                        + " reach were not written to it yet" + (backlog.persistent()
                        ? "; the next start writes those still on NVMe" : ""));
            }
        }
        backlog.close();
        for (Tier t : loadOrder) {
            t.close();
        }
    }

    @Override
    public String toString() {
        return "BlockStore" + Arrays.toString(loadOrder.stream().map(Tier::name).toArray());
    }
}
