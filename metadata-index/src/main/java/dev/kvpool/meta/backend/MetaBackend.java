package dev.kvpool.meta.backend;

import dev.kvpool.meta.ha.Leadership;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.slots.Slots;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;

/**
 * Everything the metadata plane keeps in its store, from one backend: the instance indexes, who leads the
 * replicas, the quota ledger, and the file-slot allocators, with the backend's own metrics. The embedded backend
 * (metadata-store-embedded) keeps them in this process; the Redis backend (metadata-store-redis) in Redis, shared
 * by replicas. The plane asks the backend, never the kind: no casts, no kind names compared.
 */
public interface MetaBackend extends MeterBinder, AutoCloseable {
    IndexStore store();

    Leadership leadership();

    QuotaLedger ledger();

    /** The file-slot allocation of one (instance, storage) whose files hold {@code slotsPerFile} blocks each. */
    Slots slots(String instanceId, int storageNumber, int slotsPerFile);

    /**
     * The index of an instance as the plane serves calls from it: the store's own, or behind what the backend adds
     * (a search cache, access-time updates taken off the read path).
     */
    InstanceIndex view(String instanceId);

    /**
     * How long after its deadline a write session's WRITING location, if no session names it any more, is an
     * orphan the reclaimer may take (a shared store's session expires by itself some time after its deadline);
     * null: never (sessions are kept as durably as the index).
     */
    default Duration orphanWritingAfter() {
        return null;
    }

    /**
     * How often every replica checks its instances against the store (removed by another replica, or lost with
     * the store's data); null for a store no other process writes.
     */
    default Duration reconcileEvery() {
        return null;
    }

    /** Stops background work and closes the store; the plane calls it last. */
    @Override
    void close();
}
