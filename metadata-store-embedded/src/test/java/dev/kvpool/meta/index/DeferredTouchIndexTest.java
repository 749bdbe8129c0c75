package dev.kvpool.meta.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeferredTouchIndexTest {
    private static final int NOW = 1_763_800_000;
    /** Long enough that nothing is applied unless the test drains. */
    private static final Duration NEVER = Duration.ofHours(1);

    private static InstanceIndex served(IndexStore s, long... keys) {
        InstanceIndex ix = s.index("i");
        long[] a = new long[keys.length], b = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            a[i] = Loc.a(i + 1, Loc.WRITING, 1, 0);
        }
        var r = ix.startWrite(keys, a, b, 1, x -> true, 0, "s-" + keys[0], Long.MAX_VALUE, NOW);
        boolean[] ok = new boolean[r.session().size()];
        Arrays.fill(ok, true);
        ix.finishWrite(r.session().id(), ok, NOW);
        return ix;
    }

    /** The real index underneath, recording what reaches it. */
    private static final class Recording extends ForwardingIndex {
        final List<long[]> keys = new ArrayList<>();
        final List<int[]> hits = new ArrayList<>();
        final List<Integer> secs = new ArrayList<>();
        volatile boolean fail;

        Recording(InstanceIndex delegate) {
            super(delegate);
        }

        @Override
        public synchronized void touch(long[] k, int[] h, int len, int nowSec) {
            if (fail) {
                throw new IllegalStateException("store down");
            }
            keys.add(Arrays.copyOf(k, len));
            hits.add(Arrays.copyOf(h, len));
            secs.add(nowSec);
            super.touch(k, h, len, nowSec);
        }
    }

    @Test
    void touchReturnsAtOnceAndLandsWhenTheBufferIsApplied() {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(1000, NEVER)) {
            InstanceIndex raw = served(store, 1, 2, 3);
            var ix = new DeferredTouchIndex(raw, toucher);
            long[] keys = {2, 3};
            ix.touch(keys, 0, 2, NOW + 50);
            keys[0] = 99; // the caller reuses its array: the buffered touch must not see it
            assertNotNull(ix.get(2));
            assertEquals(NOW, raw.get(2).accessSec(), "not yet applied");
            assertEquals(2, toucher.pending());
            toucher.drain();
            assertEquals(NOW + 50, raw.get(2).accessSec());
            assertEquals(NOW + 50, raw.get(3).accessSec());
            assertEquals(NOW, raw.get(1).accessSec());
            assertEquals(0, toucher.pending());
            assertEquals(0, toucher.dropped.get());
        }
    }

    @Test
    void repeatedHitsOfAWindowReachTheStoreAsOneCallWithCounts() {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(100_000, NEVER)) {
            var rec = new Recording(served(store, 1, 2, 3));
            var ix = new DeferredTouchIndex(rec, toucher);
            for (int i = 0; i < 100; i++) {
                ix.touch(new long[] {3, 1, 7}, 0, 3, NOW + i % 5); // 7 is absent: counted, ignored by the store
            }
            ix.touch(new long[] {2}, 0, 1, NOW + 2);
            toucher.drain();
            assertEquals(1, rec.keys.size(), "one store call for the whole window");
            assertArrayEquals(new long[] {1, 2, 3, 7}, rec.keys.get(0));
            int cap = DeferredTouchIndex.MAX_HITS_PER_WINDOW;
            assertArrayEquals(new int[] {cap, 1, cap, cap}, rec.hits.get(0));
            assertEquals(NOW + 4, rec.secs.get(0), "stamped with the latest second of the window");
            assertEquals(NOW + 4, rec.get(1).accessSec());
            // 64 hits: a logarithmic counter near log2(65) = 6; coin flips keep it within 3..10
            int f = rec.get(1).freq();
            assertTrue(f >= 3 && f <= 10, "counter after 64 hits: " + f);
            assertEquals(1, rec.get(2).freq(), "the first hit always counts");
            toucher.drain();
            assertEquals(1, rec.keys.size(), "nothing new: no store call");
            assertEquals(1, toucher.batches.get());
            assertEquals(4, toucher.applied.get());
        }
    }

    @Test
    void aFullBufferDropsTouchesAndCountsThem() {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(2, NEVER)) {
            InstanceIndex raw = served(store, 1);
            var ix = new DeferredTouchIndex(raw, toucher);
            for (int i = 0; i < 10; i++) {
                ix.touch(new long[] {1}, 0, 1, NOW + i);
            }
            assertEquals(8, toucher.dropped.get());
            toucher.drain();
            assertEquals(NOW + 1, raw.get(1).accessSec(), "the two that fitted");
            ix.touch(new long[] {1}, 0, 1, NOW + 20);
            toucher.drain();
            assertEquals(NOW + 20, raw.get(1).accessSec(), "room again once applied");
        }
    }

    @Test
    void theThreadAppliesBuffersOnItsOwnEveryInterval() throws Exception {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(1000, Duration.ofMillis(10))) {
            InstanceIndex raw = served(store, 1);
            var ix = new DeferredTouchIndex(raw, toucher);
            ix.touch(new long[] {1}, 0, 1, NOW + 7);
            long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (raw.get(1).accessSec() != NOW + 7 && System.nanoTime() < until) {
                Thread.sleep(5);
            }
            assertEquals(NOW + 7, raw.get(1).accessSec());
        }
    }

    @Test
    void aFailingStoreLosesThatWindowOnlyAndIsCounted() {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(1000, NEVER)) {
            var rec = new Recording(served(store, 1));
            var ix = new DeferredTouchIndex(rec, toucher);
            rec.fail = true;
            ix.touch(new long[] {1}, 0, 1, NOW + 5);
            toucher.drain();
            assertEquals(1, toucher.failed.get());
            assertEquals(0, toucher.pending());
            rec.fail = false;
            ix.touch(new long[] {1}, 0, 1, NOW + 6);
            toucher.drain();
            assertEquals(NOW + 6, rec.get(1).accessSec());
        }
    }

    @Test
    void closeAppliesWhatWaits() {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4))) {
            InstanceIndex raw = served(store, 1);
            var toucher = new DeferredTouchIndex.Toucher(1000, NEVER);
            new DeferredTouchIndex(raw, toucher).touch(new long[] {1}, 0, 1, NOW + 9);
            toucher.close();
            assertEquals(NOW + 9, raw.get(1).accessSec());
        }
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new DeferredTouchIndex.Toucher(0, NEVER));
        assertThrows(IllegalArgumentException.class, () -> new DeferredTouchIndex.Toucher(10, Duration.ZERO));
    }
}
