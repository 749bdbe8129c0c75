package dev.kvpool.agent.store;

import dev.kvpool.agent.events.EventSink;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * A child JVM for {@link RestartIT}: an agent store that saves {@code first} blocks, waits until they are on
 * NVMe, says so, then saves and removes blocks without pause until it is killed.
 */
public final class SavingAgent {
    private SavingAgent() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int first = Integer.parseInt(args[1]);
        BlockStore store = AgentSetup.build(RestartIT.settings(dir, "inst-a"), EventSink.NONE).store();
        try (Arena a = Arena.ofShared()) {
            MemorySegment[] src = new MemorySegment[4];
            for (int i = 0; i < 4; i++) {
                src[i] = a.allocate(RestartIT.BLOCK, 4096);
            }
            long k = 0;
            for (; k < first; k += 4) {
                save(store, k, src);
            }
            store.awaitWriteBehind();
            System.out.println("SAVED " + store.nvme().size());
            System.out.flush();
            for (; ; k += 4) { // a write load under the kill: slot records set and cleared all the time
                save(store, k, src);
                if ((k - first) % 64 == 0) { // NVMe keeps up, so the removals below find their blocks there
                    store.awaitWriteBehind();
                }
                if (k - first >= 256) {
                    store.remove(new long[] {k - 256, k - 255, k - 254, k - 253}, false);
                }
            }
        }
    }

    private static void save(BlockStore store, long k, MemorySegment[] src) {
        long[] keys = {k, k + 1, k + 2, k + 3};
        for (int i = 0; i < 4; i++) {
            RestartIT.fill(src[i], keys[i]);
        }
        store.save(keys, src, k == 0 ? null : k - 1);
    }
}
