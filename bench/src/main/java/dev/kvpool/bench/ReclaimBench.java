package dev.kvpool.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Eviction throughput of a large instance under PREFIX_LRU (or {@code --policy}; LRU and TTL rank the whole index
 * up to the exact limit, PREFIX_LRU always): {@code
 * --blocks} blocks are saved (in chains of 512, untimed), the group's soft level is set to keep {@code --keep} of
 * them, and the time until the reclaimer has evicted the rest is measured, with how many full passes over the
 * index it made. The baseline, in the same run, is one raw HSCAN pass over the instance's own Redis hash: a
 * reclaimer that ranks the index afresh every round (KVPool before the access queue) cannot evict faster than one
 * step per such pass. While it evicts, another client's GET (one per millisecond, its own connection) measures how
 * long eviction's Redis commands make everyone else wait, against the same probe before eviction starts. Run it
 * against a plane of its own (it changes the "default" group's strategy, and puts the
 * old one back at the end): any other instance of that group is evicted too.
 */
final class ReclaimBench {
    private ReclaimBench() {
    }

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        String url = o.url();
        int blocks = o.integer("blocks", 1_000_000);
        int step = o.integer("step", 1000);
        double keep = o.number("keep", 0.5);
        // spread the saves: blocks get distinct access seconds as in a pool filled over time (a second's blocks
        // go together under PREFIX_LRU, so a fill in one burst would make a few huge rounds)
        int fillSec = o.integer("fill-seconds", 200);
        String policy = o.str("policy", "PREFIX_LRU").toUpperCase(Locale.ROOT);
        String instance = "bench-reclaim-" + System.currentTimeMillis();
        String group = url + "/api/v1/groups/default"; // allows 1,000,000 keys per instance: --blocks at most that
        System.out.printf(Locale.ROOT, "reclaim: %d blocks in chains of 512, %s down to %.0f%% in steps of %d, "
                + "saves spread over %d s, vs one HSCAN pass over the instance's Redis hash%n", blocks, policy, keep * 100, step,
                fillSec);
        try (KvcmHttp kv = new KvcmHttp(url); Resp redis = o.redis()) {
            Main.register(kv, instance, 16, 4096);
            var json = new com.fasterxml.jackson.databind.ObjectMapper();
            String strategy = json.readTree(http("GET", group, null)).get("reclaim_strategy").toString();
            // no eviction while filling (the default group's water level counts index keys too)
            http("PUT", group + "/reclaim", "{\"trigger_strategy\":{\"used_percentage\":0,\"used_size\":0}}");
            try {
                long t0 = System.nanoTime();
                int tenth = Math.max(1, blocks / 10);
                for (int off = 0; off < blocks; off += 512) {
                    long due = t0 + (long) ((double) off / blocks * fillSec * 1e9);
                    while (System.nanoTime() < due) {
                        Thread.sleep(1);
                    }
                    WriteBench.save(kv, instance, ThreadLocalRandom.current().longs(Math.min(512, blocks - off)).toArray());
                    if ((off + 512) / tenth != off / tenth) {
                        System.out.printf(Locale.ROOT, "  saved %,d blocks (%.0f s)%n", Math.min(blocks, off + 512),
                                (System.nanoTime() - t0) / 1e9);
                    }
                }
                Thread.sleep(2500); // the queue holds only seconds at least 2 s old (clock margin between replicas)

                String hash = blockHash(redis, instance);
                long fields = (Long) redis.call("HLEN", hash);
                List<Double> passes = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    passes.add(hscanPass(redis, hash));
                }
                passes.sort(Double::compare);
                double pass = passes.get(1);
                System.out.printf(Locale.ROOT, "  baseline: HSCAN over %s (%,d fields): %.3f s per pass (median of 3)%n",
                        hash, fields, pass);

                if (fields != blocks) {
                    throw new IOException("the instance holds " + fields + " blocks, not " + blocks
                            + ": something else evicted or refused them (the default group allows 1,000,000 keys per instance)");
                }
                long used = json.readTree(http("GET", group, null)).get("used_bytes").asLong();
                long target = (long) (used * keep);
                long toEvict = blocks - (long) (blocks * keep);
                double ev0 = DeleteBench.gauge(url, "kvpool_meta_reclaim_evicted_blocks_total");
                double scans0 = DeleteBench.gauge(url, "kvpool_meta_reclaim_scans");
                double rounds0 = DeleteBench.gauge(url, "kvpool_meta_reclaim_rounds");
                Stats idle = probe(o, 2_000_000_000L, () -> false);
                var evicting = new java.util.concurrent.atomic.AtomicBoolean(true);
                var during = new java.util.concurrent.CompletableFuture<Stats>();
                Thread prober = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        during.complete(probe(o, Long.MAX_VALUE, () -> !evicting.get()));
                    } catch (Exception e) {
                        during.completeExceptionally(e);
                    }
                });
                long t1 = System.nanoTime();
                http("PUT", group + "/reclaim", "{\"reclaim_policy\":\"POLICY_" + policy + "\",\"trigger_strategy\":"
                        + "{\"used_percentage\":0,\"used_size\":" + target + "},\"reclaim_step_size\":" + step
                        + ",\"reclaim_step_percentage\":0,\"delay_before_delete_ms\":0}");
                double evicted = 0;
                long lastPrint = t1;
                while (evicted < toEvict - step) {
                    Thread.sleep(50);
                    evicted = DeleteBench.gauge(url, "kvpool_meta_reclaim_evicted_blocks_total") - ev0;
                    long now = System.nanoTime();
                    if (now - lastPrint > 5_000_000_000L) {
                        lastPrint = now;
                        System.out.printf(Locale.ROOT, "  evicted %,.0f of %,d (%.0f s)%n", evicted, toEvict, (now - t1) / 1e9);
                    }
                    if (now - t1 > 1_800_000_000_000L) {
                        throw new IOException("the reclaimer evicted only " + evicted + " blocks in 30 minutes");
                    }
                }
                double secs = (System.nanoTime() - t1) / 1e9;
                evicting.set(false);
                prober.join();
                Stats busy = during.get();
                double scans = DeleteBench.gauge(url, "kvpool_meta_reclaim_scans") - scans0;
                double rounds = DeleteBench.gauge(url, "kvpool_meta_reclaim_rounds") - rounds0;
                double rate = evicted / secs;
                // a pass per round caps eviction at (blocks per round) per pass, whatever else is fast
                double ceiling = evicted / Math.max(1, rounds) / pass;
                System.out.printf(Locale.ROOT, "  evicted %,.0f blocks in %.1f s: %,.0f blocks/s; %.0f rounds, %.0f passes over "
                        + "the index%n", evicted, secs, rate, rounds, scans);
                System.out.printf(Locale.ROOT, "reclaim: %,.0f blocks/s vs at most %,.0f blocks/s with one pass per round "
                        + "(blocks per round / HSCAN pass): %.1fx%n", rate, ceiling, rate / ceiling);
                System.out.printf(Locale.ROOT, "another client's GET, one per ms on its own connection: idle p50 %.0f / p99 "
                        + "%.0f / max %.0f us; while evicting p50 %.0f / p99 %.0f / p99.9 %.0f / max %.0f us (%,d GETs)%n",
                        idle.pctMicros(50), idle.pctMicros(99), idle.pctMicros(100), busy.pctMicros(50),
                        busy.pctMicros(99), busy.pctMicros(99.9), busy.pctMicros(100), busy.count());
            } finally {
                http("PUT", group + "/reclaim", strategy); // the group's own strategy back
            }
        }
    }

    /**
     * What eviction does to everyone else on the Redis: a GET of one key about every millisecond on a connection of
     * its own (as an engine's lookup would wait behind a long command), for at most {@code nanos} or until
     * {@code stop}.
     */
    private static Stats probe(Opts o, long nanos, java.util.function.BooleanSupplier stop) throws Exception {
        Stats s = new Stats();
        try (Resp r = o.redis()) {
            long end = System.nanoTime() + Math.min(nanos, 1_800_000_000_000L);
            while (System.nanoTime() < end && !stop.getAsBoolean()) {
                long t = System.nanoTime();
                r.call("GET", "kvpool-bench:probe");
                s.add(System.nanoTime() - t);
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        }
        return s;
    }

    /** The instance's block hash: the one hash whose name holds the instance id and ends in "b". */
    private static String blockHash(Resp redis, String instance) throws IOException {
        String cursor = "0";
        do {
            Object[] page = (Object[]) redis.call("SCAN", cursor, "MATCH", "*" + instance + "*", "COUNT", "1000");
            cursor = new String((byte[]) page[0], StandardCharsets.US_ASCII);
            for (Object k : (Object[]) page[1]) {
                String key = new String((byte[]) k, StandardCharsets.UTF_8);
                if (key.endsWith("b") && "hash".equals(redis.call("TYPE", key))) {
                    return key;
                }
            }
        } while (!cursor.equals("0"));
        throw new IOException("no Redis hash of instance " + instance + " (is the plane on the Redis store?)");
    }

    /** Seconds for one HSCAN pass (COUNT 1024) over the hash, reading every field and value. */
    private static double hscanPass(Resp redis, String hash) throws IOException {
        long t = System.nanoTime();
        String cursor = "0";
        long n = 0;
        do {
            Object[] page = (Object[]) redis.call("HSCAN", hash, cursor, "COUNT", "1024");
            cursor = new String((byte[]) page[0], StandardCharsets.US_ASCII);
            n += ((Object[]) page[1]).length / 2;
        } while (!cursor.equals("0"));
        if (n == 0) {
            throw new IOException("empty hash " + hash);
        }
        return (System.nanoTime() - t) / 1e9;
    }

    private static String http(String method, String url, String body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30));
        if (body != null) {
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> r = WriteBench.Cpu.HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException(method + " " + url + ": " + r.statusCode() + " " + r.body());
        }
        return r.body();
    }
}
