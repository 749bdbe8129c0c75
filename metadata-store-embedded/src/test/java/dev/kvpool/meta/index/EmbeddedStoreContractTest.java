package dev.kvpool.meta.index;

import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.io.TempDir;

/** The store contract on the embedded store: memory only, and on a directory (restarted inside the tests). */
class EmbeddedStoreContractTest {

    @Nested
    class MemoryOnly extends IndexStoreContractTest {
        @Override
        protected IndexStore newStore() {
            return new EmbeddedStore(EmbeddedStore.Options.memory(16));
        }
    }

    @Nested
    class SingleShard extends IndexStoreContractTest {
        @Override
        protected IndexStore newStore() {
            return new EmbeddedStore(EmbeddedStore.Options.memory(1));
        }
    }

    @Nested
    class OnDisk extends IndexStoreContractTest {
        @TempDir
        Path dir;

        private EmbeddedStore open() {
            // no background snapshot; the interval fsync runs but cannot change what the tests see
            return new EmbeddedStore(new EmbeddedStore.Options(dir, 4, false, Duration.ofMinutes(10), Long.MAX_VALUE));
        }

        @Override
        protected IndexStore newStore() {
            return open();
        }

        @Override
        protected IndexStore restart(IndexStore s) {
            s.close();
            return open();
        }
    }

    @Nested
    class OnDiskWithSnapshots extends IndexStoreContractTest {
        @TempDir
        Path dir;

        private EmbeddedStore open() {
            // a short sync interval: the background fsync runs while the tests write
            return new EmbeddedStore(new EmbeddedStore.Options(dir, 8, false, Duration.ofMillis(10), Long.MAX_VALUE));
        }

        @Override
        protected IndexStore newStore() {
            return open();
        }

        /** Every other restart goes through a snapshot, so recovery from snapshot + journal is exercised too. */
        private int restarts;

        @Override
        protected IndexStore restart(IndexStore s) {
            if (restarts++ % 2 == 0) {
                ((EmbeddedStore) s).snapshot();
            }
            s.close();
            return open();
        }
    }
}
