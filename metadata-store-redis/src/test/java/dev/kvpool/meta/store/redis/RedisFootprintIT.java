package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Memory per block in Redis (INFO memory before/after 200k blocks) and single-client throughput of the batch
 * calls. Prints its figures; asserts only loose bounds, since the server may be shared and the machine noisy.
 */
class RedisFootprintIT {
    private static final int NOW = 1_700_000_000;

    @Test
    @Timeout(180)
    void bytesPerBlockAndBatchThroughput() throws InterruptedException {
        String prefix = TestRedis.uniquePrefix("footprint");
        int blocks = Integer.getInteger("kvpool.test.footprint.blocks", 200_000), batch = 1024;
        try (TestRedis redis = new TestRedis();
             RedisStore store = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix))) {
            try {
                InstanceIndex ix = store.index("footprint");
                long mem0 = redis.usedMemory();
                long t0 = System.nanoTime();
                long id = 1;
                for (int s = 0; s < blocks; s += batch) {
                    int n = Math.min(batch, blocks - s);
                    long[] keys = new long[n], a = new long[n], b = new long[n];
                    for (int i = 0; i < n; i++) {
                        keys[i] = (s + i) * 0x9E3779B97F4A7C15L;
                        a[i] = Loc.a(id, Loc.NEW, 1, 0);
                        b[i] = (id++ << 24) | i;
                    }
                    String sid = "w" + s;
                    ix.startWrite(keys, a, b, 1, x -> true, 0, sid, System.currentTimeMillis() + 60_000, NOW);
                    boolean[] ok = new boolean[n];
                    Arrays.fill(ok, true);
                    assertEquals(n, ix.finishWrite(sid, ok, NOW).served());
                }
                double writeSec = (System.nanoTime() - t0) / 1e9;
                long mem1 = redis.usedMemory();
                assertEquals(blocks, ix.keyCount());
                double perBlock = (mem1 - mem0) / (double) blocks;

                long[] keys = new long[batch];
                Block[] out = new Block[batch];
                int rounds = 300;
                long t1 = System.nanoTime();
                for (int r = 0; r < rounds; r++) {
                    for (int i = 0; i < batch; i++) {
                        keys[i] = ((r * 7919L + i * 31L) % blocks) * 0x9E3779B97F4A7C15L;
                    }
                    ix.getAll(keys, 0, batch, out);
                }
                double getSec = (System.nanoTime() - t1) / 1e9;
                for (Block bl : out) {
                    assertEquals(Loc.SERVING, Loc.status(bl.a(0)));
                }
                long t2 = System.nanoTime();
                for (int r = 0; r < rounds; r++) {
                    ix.touch(keys, 0, batch, NOW + r);
                }
                double touchSec = (System.nanoTime() - t2) / 1e9;
                // the same reads from 4 threads at once (the plane's worker threads share one client)
                int threads = 4;
                long t3 = System.nanoTime();
                java.util.List<Thread> ts = new java.util.ArrayList<>();
                java.util.concurrent.atomic.AtomicReference<Throwable> err = new java.util.concurrent.atomic.AtomicReference<>();
                for (int t = 0; t < threads; t++) {
                    int tt = t;
                    Thread th = new Thread(() -> {
                        try {
                            long[] k = new long[batch];
                            Block[] o = new Block[batch];
                            for (int r = 0; r < rounds; r++) {
                                for (int i = 0; i < batch; i++) {
                                    k[i] = ((r * 104729L + i * 131L + tt) % blocks) * 0x9E3779B97F4A7C15L;
                                }
                                ix.getAll(k, 0, batch, o);
                            }
                        } catch (Throwable e) {
                            err.compareAndSet(null, e);
                        }
                    });
                    th.start();
                    ts.add(th);
                }
                for (Thread th : ts) {
                    th.join();
                }
                if (err.get() != null) {
                    throw new AssertionError(err.get());
                }
                double parSec = (System.nanoTime() - t3) / 1e9;
                System.out.printf("redis footprint: %d threads getAll %d keys: %.0f keys/s%n", threads, batch,
                        threads * rounds * batch / parSec);
                System.out.printf("redis footprint: %d blocks (1 location each) took %d bytes: %.1f bytes/block; "
                                + "writes (startWrite+finishWrite, %d-key batches) %.0f blocks/s; getAll %d keys: "
                                + "%.2f ms/batch, %.0f keys/s; touch %d keys: %.2f ms/batch, %.0f keys/s%n",
                        blocks, mem1 - mem0, perBlock, batch, blocks / writeSec, batch, getSec * 1000 / rounds,
                        rounds * batch / getSec, batch, touchSec * 1000 / rounds, rounds * batch / touchSec);
                assertTrue(perBlock > 24 && perBlock < 400, "bytes per block: " + perBlock);
            } finally {
                redis.deleteAll(prefix);
            }
        }
    }
}
