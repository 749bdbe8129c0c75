package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.backend.BackendContext;
import dev.kvpool.meta.backend.MetaBackend;
import dev.kvpool.meta.ha.Leadership;
import dev.kvpool.meta.index.CachedIndex;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.slots.Slots;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * One process owns everything: the index store (loaded from its snapshot and journal when it opens), an in-memory
 * quota ledger and slot allocators that the start-up rebuild restores from the index, and a leadership that is
 * always this process.
 */
final class EmbeddedBackend implements MetaBackend {
    private final EmbeddedStore store;
    private final Leadership leadership;
    private final QuotaLedger ledger = QuotaLedger.inMemory();
    private final int searchCache;

    EmbeddedBackend(EmbeddedSettings s, BackendContext context) {
        store = new EmbeddedStore(new EmbeddedStore.Options(s.persist() ? context.dataDir().resolve("index") : null,
                s.shards(), s.fsync() == EmbeddedSettings.Fsync.ALWAYS, s.syncInterval(), s.snapshotBytes()),
                context.progress());
        leadership = Leadership.single(context.nodeId());
        searchCache = s.searchCache();
    }

    @Override
    public IndexStore store() {
        return store;
    }

    @Override
    public Leadership leadership() {
        return leadership;
    }

    @Override
    public QuotaLedger ledger() {
        return ledger;
    }

    @Override
    public Slots slots(String instanceId, int storageNumber, int slotsPerFile) {
        return new SlotAllocator(slotsPerFile);
    }

    @Override
    public InstanceIndex view(String instanceId) {
        // the store is itself in memory: its search cache is off unless configured
        return searchCache > 0 ? new CachedIndex(store.index(instanceId), searchCache) : store.index(instanceId);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        // nothing of its own: the index's key counts and the cache's hit ratio are the plane's per-instance meters
    }

    @Override
    public void close() {
        store.close();
    }
}
