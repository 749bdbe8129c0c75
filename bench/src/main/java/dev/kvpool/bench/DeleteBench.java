package dev.kvpool.bench;

import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.RemoveCacheRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Deletion throughput: how fast the metadata plane takes blocks out of the pool once they leave service — the
 * work eviction and RemoveCache share (locations DELETING → purged from the index, quota returned, file slots
 * freed, emptied files deleted). Per round, {@code --blocks} fresh blocks are saved (untimed), removed with
 * RemoveCache in requests of {@code --batch} keys, and timed until the plane's {@code
 * kvpool_meta_locations_deleted} counter has counted them all; the baseline deletes as many fields from a Redis
 * hash with pipelined HDELs of the same batch size in the same round. RemoveCache hands its locations to the
 * deleter at once (no reader lease, unlike eviction), so the time measured is the deletion work itself.
 */
final class DeleteBench {
    private DeleteBench() {
    }

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        String url = o.url();
        int blocks = o.integer("blocks", 32768);
        int batch = o.integer("batch", 1024);
        int rounds = o.integer("rounds", 4);
        String instance = "bench-deletes-" + System.currentTimeMillis();
        String hash = "kvpool-bench:" + instance;
        byte[] h = hash.getBytes(StandardCharsets.US_ASCII);
        byte[] value = ("{\"spec_name\":\"tp0\",\"uri\":\"file://nfs_01/" + instance
                + "/tp0/slab_00000000?blkid=0&size=4096\"}").getBytes(StandardCharsets.US_ASCII);
        System.out.printf("deletes: %d rounds of %d blocks, RemoveCache of %d keys per request until purged, vs Redis "
                + "pipelined HDEL of as many fields, %d per pipeline%n", rounds, blocks, batch, batch);
        List<Double> ratios = new ArrayList<>();
        double kvTotal = 0, redisTotal = 0;
        try (KvcmHttp kv = new KvcmHttp(url); Resp redis = o.redis()) {
            Main.register(kv, instance, 16, 4096);
            for (int round = 0; round <= rounds; round++) {
                long[] keys = ThreadLocalRandom.current().longs(blocks).toArray();
                for (int off = 0; off < blocks; off += 512) {
                    WriteBench.save(kv, instance, java.util.Arrays.copyOfRange(keys, off, Math.min(blocks, off + 512)));
                }
                double before = gauge(url, "kvpool_meta_locations_deleted");
                long t0 = System.nanoTime();
                for (int off = 0; off < blocks; off += batch) {
                    RemoveCacheRequest.Builder b = RemoveCacheRequest.newBuilder().setTraceId("d").setInstanceId(instance)
                            .setBlockMask(BlockMask.newBuilder().setOffset(0));
                    for (int i = off; i < Math.min(blocks, off + batch); i++) {
                        b.addBlockKeys(keys[i]);
                    }
                    CommonResponse r = kv.call("removeCache", b.build(), CommonResponse.newBuilder()).build();
                    if (r.getHeader().getStatus().getCode() != ErrorCode.OK) {
                        throw new IOException("removeCache failed: " + r.getHeader().getStatus());
                    }
                }
                long deadline = System.nanoTime() + 600_000_000_000L;
                while (gauge(url, "kvpool_meta_locations_deleted") < before + blocks) {
                    if (System.nanoTime() > deadline) {
                        throw new IOException("the plane did not purge " + blocks + " locations within 10 minutes");
                    }
                    Thread.sleep(2);
                }
                double kvRate = blocks / ((System.nanoTime() - t0) / 1e9);

                List<byte[][]> fill = new ArrayList<>(blocks);
                for (long k : keys) {
                    fill.add(new byte[][] {"HSET".getBytes(StandardCharsets.US_ASCII), h,
                            Long.toString(k).getBytes(StandardCharsets.US_ASCII), value});
                }
                redis.pipeline(fill);
                long t1 = System.nanoTime();
                for (int off = 0; off < blocks; off += batch) {
                    List<byte[][]> dels = new ArrayList<>(batch);
                    for (int i = off; i < Math.min(blocks, off + batch); i++) {
                        dels.add(new byte[][] {"HDEL".getBytes(StandardCharsets.US_ASCII), h,
                                Long.toString(keys[i]).getBytes(StandardCharsets.US_ASCII)});
                    }
                    redis.pipeline(dels);
                }
                double redisRate = blocks / ((System.nanoTime() - t1) / 1e9);
                if (round == 0) {
                    System.out.printf(Locale.ROOT, "  warm-up: KVPool %.0f blocks/s, Redis HDEL %.0f blocks/s%n", kvRate, redisRate);
                    continue;
                }
                ratios.add(kvRate / redisRate);
                kvTotal += kvRate;
                redisTotal += redisRate;
                System.out.printf(Locale.ROOT, "  round %d: KVPool %.0f blocks/s purged, Redis pipelined HDEL %.0f blocks/s: %.3fx%n",
                        round, kvRate, redisRate, kvRate / redisRate);
            }
            redis.call("DEL", hash);
        }
        ratios.sort(Double::compare);
        System.out.printf(Locale.ROOT, "delete throughput: KVPool %.0f blocks/s, Redis HDEL %.0f blocks/s; median ratio %.3fx%n",
                kvTotal / rounds, redisTotal / rounds, ratios.get(ratios.size() / 2));
    }

    /** A metric of the plane's Prometheus endpoint, summed over its label sets (0 when absent). */
    static double gauge(String url, String name) throws IOException, InterruptedException {
        var r = WriteBench.Cpu.HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url + "/q/metrics"))
                .timeout(java.time.Duration.ofSeconds(5)).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        double sum = 0;
        for (String line : r.body().split("\n")) {
            if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1).trim());
            }
        }
        return sum;
    }
}
