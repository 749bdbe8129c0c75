package dev.kvpool.bench;

import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.QueryType;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Time from launching the metadata plane (the packaged jar, embedded store) to {@code /q/health/started} UP with N
 * blocks of one instance in its index, written over the KVCM API: after a clean stop (SIGTERM) and after kill -9
 * with a journal tail, against the same plane started on an empty data directory and against reading the index's
 * files, in the same run. Issue 39's target: ready within 5 s at 10 M blocks.
 *
 * <pre>
 *   ./mvnw -o -B -DskipTests -pl metadata-plane -am package   # the plane's jar
 *   ./kvpool bench plane-restart --blocks 10000000 [--tail 200000] [--threads 4]
 * </pre>
 */
final class PlaneRestartBench {
    private static final Path JAR = Path.of("metadata-plane/target/quarkus-app/quarkus-run.jar");
    private static final String INSTANCE = "bench-restart";

    private PlaneRestartBench() {
    }

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        long blocks = Long.parseLong(opt.getOrDefault("blocks", "10000000").replace("_", ""));
        long tail = Long.parseLong(opt.getOrDefault("tail", String.valueOf(Math.min(200_000, blocks / 50))));
        int threads = o.integer("threads", 4);
        if (!Files.exists(JAR)) {
            throw new IOException(JAR + " is missing: ./mvnw -o -B -DskipTests -pl metadata-plane -am package");
        }
        Path dir = Path.of(opt.getOrDefault("dir", "/var/tmp/kvpool-plane-restart"));
        Path empty = dir.resolveSibling(dir.getFileName() + "-empty");
        deleteTree(dir);
        deleteTree(empty);
        Files.createDirectories(dir);
        Files.createDirectories(empty);
        long heapMb = Math.max(1024, (blocks + tail) * 100 / (1 << 20) + 1024);
        System.out.printf(Locale.ROOT, "plane-restart: %,d blocks of one instance over KVCM HTTP (%d threads), a tail of "
                + "%,d, plane heap %,d MiB, %d cores%n", blocks, threads, tail, heapMb,
                Runtime.getRuntime().availableProcessors());

        Plane p0 = Plane.start(empty, heapMb);
        double emptyReady = p0.awaitStarted();
        p0.stop();
        System.out.printf(Locale.ROOT, "  empty data directory: started in %.2f s (the JVM and the plane alone)%n",
                emptyReady);

        Plane p = Plane.start(dir, heapMb);
        p.awaitStarted();
        String url = "http://127.0.0.1:" + p.http;
        try (KvcmHttp kv = new KvcmHttp(url)) {
            Main.register(kv, INSTANCE, 16, 4096);
        }
        double fillS = fill(url, 0, blocks, threads);
        System.out.printf(Locale.ROOT, "  filled %,d blocks in %.1f s (%,.0f blocks/s)%n", blocks, fillS, blocks / fillS);
        long t0 = System.nanoTime();
        p.stop();
        System.out.printf(Locale.ROOT, "  clean stop (SIGTERM; the index snapshots on close) took %.2f s%n",
                (System.nanoTime() - t0) / 1e9);

        Path index = dir.resolve("index");
        IndexRestartBench.readAll(index);
        double readClean = IndexRestartBench.readAll(index);
        Plane p2 = Plane.start(dir, heapMb);
        double cleanLookups = p2.awaitLookups(blocks);
        double cleanReady = p2.awaitStarted();
        String cleanLoad = p2.logged(Pattern.compile("embedded index recovered .* in (\\d+) ms"));
        check(p2, blocks);
        fill("http://127.0.0.1:" + p2.http, blocks, tail, threads);
        p2.kill();
        IndexRestartBench.readAll(index);
        double readCrash = IndexRestartBench.readAll(index);
        Plane p3 = Plane.start(dir, heapMb);
        double crashLookups = p3.awaitLookups(blocks + tail);
        double crashReady = p3.awaitStarted();
        String crashLoad = p3.logged(Pattern.compile("embedded index recovered .* in (\\d+) ms"));
        check(p3, blocks + tail);
        p3.stop();

        System.out.println();
        System.out.println("| start | index files read (warm) | index loaded | first lookup answered | started (launch → UP) | empty data dir |");
        System.out.println("|---|---|---|---|---|---|");
        System.out.printf(Locale.ROOT, "| after a clean stop, %,d blocks | %.0f ms | %s ms | **%.2f s** | **%.2f s** | %.2f s |%n",
                blocks, readClean, cleanLoad, cleanLookups, cleanReady, emptyReady);
        System.out.printf(Locale.ROOT, "| after kill -9, %,d blocks + a tail of %,d | %.0f ms | %s ms | **%.2f s** | **%.2f s** | %.2f s |%n",
                blocks, tail, readCrash, crashLoad, crashLookups, crashReady, emptyReady);
        if (!opt.containsKey("keep")) {
            deleteTree(dir);
        }
        deleteTree(empty);
    }

    /** Every key written, in 512-key start + finish pairs on {@code threads} connections; seconds. */
    private static double fill(String url, long from, long count, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicLong next = new AtomicLong(from);
        long end = from + count;
        long t0 = System.nanoTime();
        long tenth = Math.max(1, count / 10);
        AtomicLong done = new AtomicLong();
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            fs.add(pool.submit(() -> {
                try (KvcmHttp kv = new KvcmHttp(url)) {
                    for (long at; (at = next.getAndAdd(512)) < end; ) {
                        int n = (int) Math.min(512, end - at);
                        long[] keys = new long[n];
                        for (int i = 0; i < n; i++) {
                            keys[i] = IndexRestartBench.key(at + i);
                        }
                        WriteBench.save(kv, INSTANCE, keys);
                        long d = done.addAndGet(n);
                        if (d / tenth != (d - n) / tenth) {
                            System.out.printf(Locale.ROOT, "    %,d blocks, %.0f s%n", d, (System.nanoTime() - t0) / 1e9);
                        }
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : fs) {
            f.get();
        }
        pool.shutdown();
        return (System.nanoTime() - t0) / 1e9;
    }

    /** A prefix match of 1,024 written keys finds all of them. */
    private static void check(Plane p, long written) throws IOException {
        try (KvcmHttp kv = new KvcmHttp("http://127.0.0.1:" + p.http)) {
            GetCacheLocationRequest.Builder q = GetCacheLocationRequest.newBuilder().setTraceId("c")
                    .setInstanceId(INSTANCE).setQueryType(QueryType.QT_PREFIX_MATCH);
            long from = written - 1024;
            for (int i = 0; i < 1024; i++) {
                q.addBlockKeys(IndexRestartBench.key(from + i));
            }
            GetCacheLocationResponse r = kv.call("getCacheLocation", q.build(), GetCacheLocationResponse.newBuilder())
                    .build();
            if (r.getHeader().getStatus().getCode() != ErrorCode.OK || r.getLocationsCount() != 1024) {
                throw new IOException("after the restart a prefix of 1,024 written keys matched "
                        + r.getLocationsCount() + ": " + r.getHeader().getStatus());
            }
        }
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            for (Path x : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** One metadata plane process on a data directory, its output in {@code plane.log} there. */
    private static final class Plane {
        final Process process;
        final int http;
        final Path log;
        final long launchedNs;

        private Plane(Process process, int http, Path log, long launchedNs) {
            this.process = process;
            this.http = http;
            this.log = log;
            this.launchedNs = launchedNs;
        }

        static Plane start(Path dir, long heapMb) throws IOException {
            Path config = dir.resolve("startup.json");
            if (!Files.exists(config)) {
                Files.writeString(config, startupConfig(dir));
            }
            int http = freePort(), grpc = freePort();
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Path log = dir.resolve("plane.log");
            List<String> cmd = List.of(java, "-Xmx" + heapMb + "m", "-Dkvpool.data-dir=" + dir,
                    "-Dkvpool.meta.startup-config=" + config, "-Dkvpool.meta.http-port=" + http,
                    "-Dkvpool.meta.grpc-port=" + grpc, "-jar", JAR.toString());
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            return new Plane(p, http, log, t0);
        }

        /** Seconds from launch until /q/health/started answers 200. */
        double awaitStarted() throws Exception {
            HttpClient c = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(200)).build();
            HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http + "/q/health/started"))
                    .timeout(Duration.ofSeconds(2)).build();
            long deadline = launchedNs + Duration.ofMinutes(10).toNanos();
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IOException("the plane exited (" + process.exitValue() + "); see " + log);
                }
                try {
                    if (c.send(r, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                        return (System.nanoTime() - launchedNs) / 1e9;
                    }
                } catch (IOException e) {
                    // not listening yet
                }
                Thread.sleep(20); // polling another process
            }
            throw new IOException("not started within 10 minutes; see " + log);
        }

        /** Seconds from launch until a prefix match of the last 1,024 written keys is answered with all of them. */
        double awaitLookups(long written) throws Exception {
            GetCacheLocationRequest.Builder q = GetCacheLocationRequest.newBuilder().setTraceId("l")
                    .setInstanceId(INSTANCE).setQueryType(QueryType.QT_PREFIX_MATCH);
            for (int i = 0; i < 1024; i++) {
                q.addBlockKeys(IndexRestartBench.key(written - 1024 + i));
            }
            GetCacheLocationRequest req = q.build();
            long deadline = launchedNs + Duration.ofMinutes(10).toNanos();
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IOException("the plane exited (" + process.exitValue() + "); see " + log);
                }
                try (KvcmHttp kv = new KvcmHttp("http://127.0.0.1:" + http)) {
                    GetCacheLocationResponse r = kv.call("getCacheLocation", req, GetCacheLocationResponse.newBuilder())
                            .build();
                    if (r.getHeader().getStatus().getCode() == ErrorCode.OK && r.getLocationsCount() == 1024) {
                        return (System.nanoTime() - launchedNs) / 1e9;
                    }
                } catch (IOException | RuntimeException e) {
                    // not listening yet
                }
                Thread.sleep(20); // polling another process
            }
            throw new IOException("no lookup answered within 10 minutes; see " + log);
        }

        String logged(Pattern p) throws IOException {
            String found = "?";
            for (String line : Files.readAllLines(log)) {
                Matcher m = p.matcher(line);
                if (m.find()) {
                    found = m.group(1);
                }
            }
            return found;
        }

        void stop() throws InterruptedException {
            process.destroy(); // SIGTERM: Quarkus shuts down, the store closes
            process.waitFor();
        }

        void kill() throws InterruptedException {
            process.destroyForcibly(); // SIGKILL
            process.waitFor();
        }
    }

    private static String startupConfig(Path dir) {
        return """
                {"storages":[{"storage_config":{"type":"file","global_unique_name":"nfs_01",
                   "storage_spec":{"root_path":"%s/nfs/","key_count_per_file":8}}}],
                 "instance_groups":[{"name":"default","storage_candidates":["nfs_01"],
                   "global_quota_group_name":"default_quota_group","max_instance_count":10,
                   "quota":{"capacity":1000000000000000,"quota_config":[{"storage_type":"file","capacity":1000000000000000}]},
                   "cache_config":{"reclaim_strategy":{"reclaim_policy":1,"trigger_strategy":{"used_percentage":0.99},
                       "delay_before_delete_ms":1000,"storage_unique_name":""},
                     "cache_prefer_strategy":2,
                     "meta_indexer_config":{"max_key_count":1000000000,"mutex_shard_num":16,"batch_key_size":16,
                       "meta_storage_backend_config":{"storage_type":"local","storage_uri":""},
                       "meta_cache_policy_config":{"capacity":10000,"type":"LRU","cache_shard_bits":0,
                         "high_pri_pool_ratio":0.0}}},
                   "user_data":"{}","version":1}]}
                """.formatted(dir.toAbsolutePath());
    }
}
