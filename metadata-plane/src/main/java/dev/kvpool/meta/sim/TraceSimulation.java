package dev.kvpool.meta.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.query.QueryPath;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.reclaim.Reclaimer;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.LocationSink;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.Recovery;
import dev.kvpool.meta.write.WritePath;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What-if replay: one instance in one group with a given quota and reclaim strategy, driven through the real read
 * path, write path and reclaimer on the trace's own clock (an in-memory embedded store; file slots are allocated
 * but no bytes are written). Each request is what a connector does: a prefix query, then a two-phase write of
 * the blocks that missed, then the reclaimer's round. Used by the eviction-policy benchmark and tests, and the
 * basis of the console's hit-rate-versus-capacity curves.
 */
public final class TraceSimulation implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String INSTANCE = "sim", GROUP = "sim";

    /** A clock the replay moves forward. */
    public static final class TraceClock implements InstantSource {
        private volatile long ms;

        public void set(long epochMs) {
            ms = Math.max(ms, epochMs);
        }

        @Override
        public long millis() {
            return ms;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(ms);
        }
    }

    private final TraceClock clock = new TraceClock();
    private final Path dir;
    private final EmbeddedStore store;
    private final Registry registry;
    private final QuotaLedger ledger = QuotaLedger.inMemory();
    private final Deletions deletions;
    private final WritePath write;
    private final QueryPath query;
    private final Reclaimer reclaimer;
    private final Instance inst;
    public long requests, queriedBlocks, hitBlocks, writtenBlocks, refusedBlocks, evictedBlocks;

    /**
     * @param capacityBlocks the group's hard quota in blocks; the reclaim strategy's water level is a fraction of it
     */
    public TraceSimulation(ReclaimConfig reclaim, long capacityBlocks, int blockSize) {
        try {
            dir = Files.createTempDirectory("kvpool-sim-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long bytesPerBlock = 1024; // one 1 KiB spec per block: quota in blocks = bytes / 1024
        ObjectNode root = JSON.createObjectNode();
        ObjectNode st = root.putArray("storages").addObject();
        st.put("type", "file").put("global_unique_name", "sim_nfs").putObject("storage_spec")
                .put("root_path", Storage.normaliseRoot(dir.toString())).put("key_count_per_file", 64);
        ObjectNode g = root.putArray("instance_groups").addObject();
        g.put("name", GROUP).put("global_quota_group_name", GROUP).putArray("storage_candidates").add("sim_nfs");
        g.putObject("quota").put("capacity", capacityBlocks * bytesPerBlock);
        ObjectNode cache = g.putObject("cache_config");
        cache.set("reclaim_strategy", reclaim.toJson());
        cache.putObject("meta_indexer_config").put("max_key_count", 0).put("mutex_shard_num", 16);
        Path cfg = dir.resolve("startup.json");
        try {
            Files.writeString(cfg, root.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        store = new EmbeddedStore(EmbeddedStore.Options.memory(16));
        registry = new Registry(store, StartupConfig.load(cfg), store::index);
        deletions = new Deletions(registry, ledger, clock);
        write = new WritePath(registry, ledger, deletions, new WritePath.Settings(30, 3600), clock);
        query = new QueryPath(registry, clock);
        reclaimer = new Reclaimer(registry, ledger, deletions, new Recovery(registry, ledger, deletions), () -> true,
                (i, p, r, keys, blocks, bytes) -> evictedBlocks += blocks, Reclaimer.Settings.DEFAULT);
        this.blockSize = blockSize;
        inst = addInstance(INSTANCE);
    }

    private final int blockSize;

    /** Another instance in the same group (fairness what-ifs); each has its own 1 KiB-per-block spec. */
    public Instance addInstance(String id) {
        return registry.register(RegisterInstanceRequest.newBuilder().setInstanceGroup(GROUP).setInstanceId(id)
                .setBlockSize(blockSize)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("sim").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1024))
                .build()).instance();
    }

    /** One request at {@code tsMs}; returns the prefix hit length in blocks. */
    public int request(long tsMs, long[] keys) {
        return request(inst, tsMs, keys);
    }

    public int request(Instance inst, long tsMs, long[] keys) {
        clock.set(tsMs);
        int hits = prefixQuery(inst, keys);
        if (hits < keys.length) {
            save(inst, keys, keys.length - hits);
        }
        reclaim(tsMs);
        return hits;
    }

    /** A query alone (a recorded workload replays its writes as they happened): the prefix hit length. */
    public int query(long tsMs, long[] keys) {
        clock.set(tsMs);
        int hits = prefixQuery(inst, keys);
        reclaim(tsMs);
        return hits;
    }

    /** A write alone, of whichever of {@code keys} are not cached, each one written successfully. */
    public void write(long tsMs, long[] keys) {
        clock.set(tsMs);
        save(inst, keys, keys.length);
        reclaim(tsMs);
    }

    private int prefixQuery(Instance inst, long[] keys) {
        requests++;
        int hits = query.prefix(inst, keys, Mask.EMPTY, new Counting()).count();
        queriedBlocks += keys.length;
        hitBlocks += hits;
        return hits;
    }

    /** @param missing how many blocks count as refused when the hard quota refuses the write */
    private void save(Instance inst, long[] keys, int missing) {
        try {
            WritePath.StartOutcome o = write.start(inst, keys, List.of(), 30, 1);
            int n = o.count();
            if (o.sessionId() == null || o.sessionId().isEmpty()) {
                return; // nothing new to write
            }
            boolean[] all = new boolean[n];
            java.util.Arrays.fill(all, true);
            write.finish(inst, o.sessionId(), Mask.of(all), store::sessionOwner);
            writtenBlocks += n;
        } catch (MetaException e) {
            refusedBlocks += missing; // hard quota reached: the blocks are simply not cached
        }
    }

    private void reclaim(long tsMs) {
        GroupConfig g = registry.group(GROUP);
        for (int round = 0; round < 64 && reclaimer.runGroup(g, tsMs) > 0; round++) {
            deletions.drain();
        }
    }

    public double hitRate() {
        return queriedBlocks == 0 ? 0 : (double) hitBlocks / queriedBlocks;
    }

    /** Keys that have a SERVING replica now. */
    public Set<Long> cached() {
        return cached(inst);
    }

    public Set<Long> cached(Instance inst) {
        deletions.drain();
        Set<Long> out = new HashSet<>();
        inst.index.forEach(b -> {
            if (b.first(Loc.SERVING) >= 0) {
                out.add(b.key());
            }
        });
        return out;
    }

    public long usedBlocks() {
        return inst.index.keyCount();
    }

    /** File slots in use over every storage of the instance. */
    public long usedSlots(Instance inst) {
        return inst.allocators().values().stream().mapToLong(dev.kvpool.meta.slots.Slots::usedSlots).sum();
    }

    public Registry registry() {
        return registry;
    }

    public WritePath write() {
        return write;
    }

    public Instance instance() {
        return inst;
    }

    public Reclaimer reclaimer() {
        return reclaimer;
    }

    public TraceClock clock() {
        return clock;
    }

    @Override
    public void close() {
        deletions.close();
        store.close();
        try (var s = Files.walk(dir)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temp directory; nothing to keep
        }
    }

    /** Counts hits without rendering locations. */
    private static final class Counting implements LocationSink {
        private int n;

        @Override
        public void location(Instance inst, Storage st, long key, long a, long b) {
            n++;
        }

        @Override
        public void placeholder(Instance inst) {
        }

        @Override
        public int count() {
            return n;
        }
    }
}
