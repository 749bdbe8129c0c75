package dev.kvpool.meta.index;

import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The store contract with every index behind a {@link CachedIndex} (a small cache, so that entries are also
 * evicted while the suite runs): the decorator must not change any observable behaviour.
 */
class CachedIndexContractTest extends IndexStoreContractTest {

    @Override
    protected IndexStore newStore() {
        return new CachingStore(new EmbeddedStore(EmbeddedStore.Options.memory(4)), 256, 8);
    }

    /** The search cache keeps the hit counter it copied (locations are what it serves); eviction reads the store. */
    @Override
    protected InstanceIndex evictionView(InstanceIndex ix) {
        return ((CachedIndex) ix).delegate();
    }

    /** A test-only store that hands out cached views of another store's indexes. */
    static final class CachingStore implements IndexStore {
        private final IndexStore inner;
        private final long capacity;
        private final int shards;
        private final Map<String, CachedIndex> views = new ConcurrentHashMap<>();

        CachingStore(IndexStore inner, long capacity, int shards) {
            this.inner = inner;
            this.capacity = capacity;
            this.shards = shards;
        }

        @Override
        public InstanceIndex index(String instanceId) {
            InstanceIndex real = inner.index(instanceId);
            return views.compute(instanceId, (id, v) -> v != null && v.delegate() == real ? v
                    : new CachedIndex(real, capacity, shards));
        }

        @Override
        public InstanceIndex existing(String instanceId) {
            return inner.existing(instanceId) == null ? null : index(instanceId);
        }

        @Override
        public void drop(String instanceId) {
            inner.drop(instanceId);
            CachedIndex v = views.remove(instanceId);
            if (v != null) {
                v.invalidateAll();
            }
        }

        @Override
        public Set<String> instanceIds() {
            return inner.instanceIds();
        }

        @Override
        public String sessionOwner(String sessionId) {
            return inner.sessionOwner(sessionId);
        }

        @Override
        public void putRecord(String section, String name, byte[] value) {
            inner.putRecord(section, name, value);
        }

        @Override
        public void removeRecord(String section, String name) {
            inner.removeRecord(section, name);
        }

        @Override
        public Map<String, byte[]> records(String section) {
            return inner.records(section);
        }

        @Override
        public void sync() {
            inner.sync();
        }

        @Override
        public String kind() {
            return inner.kind() + "+cache";
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
