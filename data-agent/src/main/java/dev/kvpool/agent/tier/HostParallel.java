package dev.kvpool.agent.tier;

import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * CPU work over the blocks of one batch (checksums, staging copies), spread over the cores when the batch is big:
 * one thread checksums or copies ~8–10 GB/s, a fifth of what one GPU's copy engines move, so a single-threaded
 * pass would cap every tier above NVMe speed.
 */
public final class HostParallel {
    /** Below this many bytes a batch runs on the calling thread (fork/join overhead would dominate). */
    static final long MIN_PARALLEL_BYTES = 8L << 20;
    private static final ForkJoinPool POOL = new ForkJoinPool(Runtime.getRuntime().availableProcessors(),
            p -> {
                var t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(p);
                t.setName("kvpool-host-" + t.getPoolIndex());
                t.setDaemon(true);
                return t;
            }, null, false);

    private HostParallel() {
    }

    /** Runs {@code op} for 0..n-1, in parallel when {@code totalBytes} is large; returns when all are done. */
    public static void forEach(int n, long totalBytes, IntConsumer op) {
        if (n <= 1 || totalBytes < MIN_PARALLEL_BYTES || POOL.getParallelism() < 4) { // 2-3 cores: the callers
            // and the device workers already keep them busy
            for (int i = 0; i < n; i++) {
                op.accept(i);
            }
            return;
        }
        POOL.submit(() -> IntStream.range(0, n).parallel().forEach(op)).join();
    }
}
