package dev.kvpool.bench;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

/**
 * Heap bytes per block of the embedded index: fills a memory-only {@link EmbeddedStore} (16 shards) with N blocks
 * each with one SERVING location, through the public API (startWrite + finishWrite in batches, every session
 * finished), then reports the used-heap delta after full GCs and the store's own estimate.
 *
 * <pre>
 *   java -Xmx8g -cp ... dev.kvpool.bench.HeapPerBlock [blocks=10000000] [batch=1024]
 * </pre>
 */
public final class HeapPerBlock {
    private HeapPerBlock() {
    }

    public static void main(String[] args) throws Exception {
        long n = args.length > 0 ? Long.parseLong(args[0].replace("_", "")) : 10_000_000L;
        int batch = args.length > 1 ? Integer.parseInt(args[1]) : 1024;
        MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
        System.out.printf("HeapPerBlock: %,d blocks, batches of %d, 16 shards; JVM %s, max heap %,d MiB, GC %s%n", n,
                batch, Runtime.version(), Runtime.getRuntime().maxMemory() >> 20,
                ManagementFactory.getGarbageCollectorMXBeans().stream().map(GarbageCollectorMXBean::getName)
                        .collect(Collectors.joining(", ")));

        EmbeddedStore store = new EmbeddedStore(EmbeddedStore.Options.memory(16));
        InstanceIndex idx = store.index("bench");
        long heapBefore = usedAfterGc(mx);

        long t0 = System.nanoTime();
        IndexFill.insert(idx, 0, n, batch);
        long insertNs = System.nanoTime() - t0;

        long heapAfter = usedAfterGc(mx);
        long delta = heapAfter - heapBefore;
        long estimate = store.heapBytes();
        if (idx.keyCount() != n || !idx.sessions().isEmpty()) {
            throw new IllegalStateException("keyCount " + idx.keyCount() + ", open sessions " + idx.sessions().size());
        }

        // a quick check that the blocks read back, and what a point lookup costs on this table
        SplittableRandom probe = new SplittableRandom(7);
        int lookups = (int) Math.min(2_000_000, n);
        long found = 0;
        long l0 = System.nanoTime();
        for (int i = 0; i < lookups; i++) {
            Block blk = idx.get(IndexFill.key(probe.nextLong(n)));
            if (blk != null && Loc.status(blk.a(0)) == Loc.SERVING) {
                found++;
            }
        }
        long lookupNs = System.nanoTime() - l0;
        if (found != lookups) {
            throw new IllegalStateException(found + " of " + lookups + " lookups found a SERVING block");
        }

        System.out.printf("insert: %,d blocks in %.2f s = %.0f ns/block (%,.0f blocks/s)%n", n, insertNs / 1e9,
                insertNs / (double) n, n / (insertNs / 1e9));
        System.out.printf("heap used after GC: before %,d B, after %,d B, delta %,d B%n", heapBefore, heapAfter, delta);
        System.out.printf("heap bytes/block (MemoryMXBean delta): %.1f%n", delta / (double) n);
        System.out.printf("heap bytes/block (EmbeddedStore.heapBytes): %.1f  (%,d B)%n", estimate / (double) n,
                estimate);
        System.out.printf("get: %,d lookups in %.2f s = %.0f ns/lookup (single thread)%n", lookups, lookupNs / 1e9,
                lookupNs / (double) lookups);
        System.out.printf("target <= 64 B/block: %s%n", delta / (double) n <= 64 ? "MET" : "MISSED");
        Reference.reachabilityFence(store);
        Reference.reachabilityFence(idx);
    }

    private static long usedAfterGc(MemoryMXBean mx) throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return mx.getHeapMemoryUsage().getUsed();
    }
}
