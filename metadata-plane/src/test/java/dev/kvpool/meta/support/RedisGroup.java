package dev.kvpool.meta.support;

import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.config.StartupConfig;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.ReclaimConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.store.redis.RedisStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.function.UnaryOperator;

/**
 * Group "g" (one file storage, 4 keys per file) on the real local Redis under a key prefix of its own, with
 * instance "i" registered (one 1000-byte spec per block); close drops the instances and deletes every key.
 * {@link #restarted} opens the same keys as a replica that starts afresh would.
 */
public final class RedisGroup implements AutoCloseable {
    public final String prefix = "kvp-group-" + UUID.randomUUID().toString().substring(0, 8);
    public final RedisStore store;
    public final Registry registry;
    public final QuotaLedger ledger = QuotaLedger.inMemory();
    public final Instance inst;
    private final StartupConfig startup;
    private final UnaryOperator<RedisStore.Options> options;
    private final java.util.List<RedisStore> more = new java.util.ArrayList<>();

    /** @param reclaim the group's reclaim strategy, or null for none */
    public RedisGroup(Path dir, long capacityBytes, ReclaimConfig reclaim, UnaryOperator<RedisStore.Options> options)
            throws Exception {
        this.options = options;
        Path cfg = dir.resolve("startup.json");
        Files.writeString(cfg, """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_r",
                   "storage_spec":{"root_path":"%s/","key_count_per_file":4}}}],
                 "instance_groups":[{"name":"g","storage_candidates":["nfs_r"],"global_quota_group_name":"q",
                   "quota":{"capacity":%d},
                   "cache_config":{%s"meta_indexer_config":{"max_key_count":0,"mutex_shard_num":4}}}]}
                """.formatted(dir.resolve("nfs"), capacityBytes,
                reclaim == null ? "" : "\"reclaim_strategy\":" + reclaim.toJson() + ","));
        startup = StartupConfig.load(cfg);
        store = RedisStore.connect("redis://127.0.0.1:6379/0", options.apply(RedisStore.Options.defaults().withPrefix(prefix)));
        try {
            registry = new Registry(store, startup, store::index);
            inst = register(registry, "i");
        } catch (Exception | Error e) {
            close();
            throw e;
        }
    }

    /** Registers another instance of group "g", with the same spec as "i". */
    public static Instance register(Registry registry, String id) {
        return registry.register(RegisterInstanceRequest.newBuilder().setInstanceGroup("g")
                .setInstanceId(id).setBlockSize(16)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1000)).build())
                .instance();
    }

    /** Finishes a session with every block written (an offset mask over all its new keys). */
    public void finishAll(dev.kvpool.meta.write.WritePath w, Instance inst, dev.kvpool.meta.write.WritePath.StartOutcome o) {
        w.finish(inst, o.sessionId(), dev.kvpool.meta.core.Mask.prefix(o.locations().size()), store::sessionOwner);
    }

    /** Writes keys [from, to) in sessions of {@code batch} keys, each finished in full. */
    public void save(dev.kvpool.meta.write.WritePath w, Instance inst, long from, long to, int batch) {
        for (long k = from; k < to; k += batch) {
            finishAll(w, inst, w.start(inst, java.util.stream.LongStream.range(k, Math.min(to, k + batch)).toArray(),
                    java.util.List.of(), 30, 1));
        }
    }

    /** A registry over a new connection to the same keys: a replica started afresh (closed with the group). */
    public Registry restarted() {
        return registry(connect());
    }

    /** A new connection to the same keys (closed with the group). */
    public RedisStore connect() {
        RedisStore s = RedisStore.connect("redis://127.0.0.1:6379/0",
                options.apply(RedisStore.Options.defaults().withPrefix(prefix)));
        more.add(s);
        return s;
    }

    /** The registry a replica over {@code s} starts with. */
    public Registry registry(RedisStore s) {
        return registry(s, UnaryOperator.identity());
    }

    /** The same, with each instance's index wrapped (to watch how it is used). */
    public Registry registry(RedisStore s, UnaryOperator<dev.kvpool.meta.index.InstanceIndex> wrap) {
        return new Registry(s, startup, id -> wrap.apply(s.index(id)));
    }

    @Override
    public void close() throws Exception {
        try {
            for (String id : store.instanceIds()) {
                store.drop(id);
            }
            more.forEach(RedisStore::close);
            store.close();
        } finally {
            new ProcessBuilder("sh", "-c", "redis-cli --scan --pattern '" + prefix + "*' | xargs -r redis-cli del")
                    .inheritIO().start().waitFor();
        }
    }
}
