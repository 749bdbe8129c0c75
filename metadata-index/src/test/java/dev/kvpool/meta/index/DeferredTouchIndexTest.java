package dev.kvpool.meta.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.embedded.EmbeddedStore;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class DeferredTouchIndexTest {
    private static final int NOW = 1_763_800_000;

    private static InstanceIndex served(IndexStore s, long... keys) {
        InstanceIndex ix = s.index("i");
        long[] a = new long[keys.length], b = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            a[i] = Loc.a(i + 1, Loc.WRITING, 1, 0);
        }
        var r = ix.startWrite(keys, a, b, 1, x -> true, 0, "s-" + keys[0], Long.MAX_VALUE, NOW);
        boolean[] ok = new boolean[r.session().size()];
        java.util.Arrays.fill(ok, true);
        ix.finishWrite(r.session().id(), ok, NOW);
        return ix;
    }

    @Test
    void touchLandsLaterAndReadsDoNotWaitForIt() throws Exception {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(16)) {
            InstanceIndex raw = served(store, 1, 2, 3);
            var ix = new DeferredTouchIndex(raw, toucher);
            // block the touch thread: the touch must return at once and reads still answer
            CountDownLatch hold = blockTouchThread(toucher);
            long[] keys = {2, 3};
            ix.touch(keys, 0, 2, NOW + 50);
            keys[0] = 99; // the caller reuses its array: the queued touch must not see it
            assertNotNull(ix.get(2));
            assertEquals(NOW, raw.get(2).accessSec(), "not yet applied");
            hold.countDown();
            toucher.drain();
            assertEquals(NOW + 50, raw.get(2).accessSec());
            assertEquals(NOW + 50, raw.get(3).accessSec());
            assertEquals(NOW, raw.get(1).accessSec());
            assertEquals(0, toucher.dropped.get());
        }
    }

    @Test
    void aFullQueueDropsTouchesAndCountsThem() throws Exception {
        try (var store = new EmbeddedStore(EmbeddedStore.Options.memory(4));
             var toucher = new DeferredTouchIndex.Toucher(2)) {
            var ix = new DeferredTouchIndex(served(store, 1), toucher);
            CountDownLatch hold = blockTouchThread(toucher);
            for (int i = 0; i < 10; i++) {
                ix.touch(new long[]{1}, 0, 1, NOW + i);
            }
            assertTrue(toucher.dropped.get() >= 7, "dropped " + toucher.dropped.get());
            hold.countDown();
            toucher.drain();
        }
    }

    /** Parks the touch thread until the returned latch opens, so touches queue up behind it. */
    private static CountDownLatch blockTouchThread(DeferredTouchIndex.Toucher toucher) {
        CountDownLatch hold = new CountDownLatch(1);
        toucher.submit(() -> {
            try {
                hold.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return hold;
    }
}
