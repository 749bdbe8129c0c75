package dev.kvpool.agent.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.events.BlockBatch.BlockEvent;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class GatedSinkTest {
    @Test
    void heldUntilOpenThenInOrderAndStraightThrough() throws Exception {
        List<Long> out = new CopyOnWriteArrayList<>();
        GatedSink g = new GatedSink(e -> out.add(e.blockHashes()[0]));
        Thread[] ts = new Thread[4];
        for (int t = 0; t < ts.length; t++) {
            int base = t * 10_000;
            ts[t] = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 5_000; i++) {
                    g.publish(BlockEvent.removed(new long[] {base + i}, "disk"));
                }
            });
        }
        Thread.sleep(5); // real time: the publisher threads get going before the gate opens
        assertTrue(out.isEmpty(), "nothing passes before open");
        g.open(); // while the publishers may still be going
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(20_000, out.size());
        for (int t = 0; t < ts.length; t++) { // each publisher's events in its own order, none twice
            long prev = -1;
            for (long k : out) {
                if (k / 10_000 == t) {
                    assertTrue(k > prev, "order of publisher " + t);
                    prev = k;
                }
            }
        }
    }

    @Test
    void opensEarlyRatherThanHoldWithoutBound() {
        List<BlockEvent> out = new CopyOnWriteArrayList<>();
        GatedSink g = new GatedSink(out::add, 10);
        for (int i = 0; i < 9; i++) {
            g.publish(BlockEvent.removed(new long[] {i}, "disk"));
        }
        assertTrue(out.isEmpty());
        g.publish(BlockEvent.removed(new long[] {9}, "disk"));
        assertEquals(10, out.size());
        assertTrue(g.isOpen());
    }

    @Test
    void openingAtAPaceRunsBeforeEachHeldEventWhileLaterOnesQueueBehind() {
        List<Long> out = new CopyOnWriteArrayList<>();
        GatedSink g = new GatedSink(e -> out.add(e.blockHashes()[0]));
        for (long k = 0; k < 3; k++) {
            g.publish(BlockEvent.removed(new long[] {k}, "disk"));
        }
        int[] paces = {0};
        g.open(() -> {
            if (paces[0]++ == 0) { // a publisher while the held ones drain: it goes behind them, not ahead
                g.publish(BlockEvent.removed(new long[] {3}, "disk"));
            }
            assertEquals(paces[0] - 1, out.size(), "one event per pace");
        });
        assertEquals(List.of(0L, 1L, 2L, 3L), out);
        assertEquals(5, paces[0], "once per held event, and once to find none left");
        g.publish(BlockEvent.removed(new long[] {4}, "disk"));
        assertEquals(5, out.size(), "straight through once open");
    }
}
