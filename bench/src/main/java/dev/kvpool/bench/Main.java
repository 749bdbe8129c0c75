package dev.kvpool.bench;

import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.meta.sim.MooncakeTrace;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Metadata-plane benchmarks, each against a baseline measured in the same run:
 * <ul>
 * <li>{@code replay}: the Mooncake conversation trace (per request a prefix query of its hash_ids, then
 * start/finish writes for the missed blocks) against a running metadata plane, and the same key reads and
 * writes as Redis MGET/MSET of location-sized values;</li>
 * <li>{@code prefix}: the target case, a 1,024-key fully cached prefix match over HTTP vs a Redis MGET of the same
 * 1,024 keys, alternated A/B in rounds; the ratio reported is the median of the per-round p50 ratios;</li>
 * <li>{@code engine-ingest}: vLLM KV-event batches on kvpool.engine-events, KVPool's ingest vs Kafka's own consumer
 * (see {@link EngineIngestBench});</li>
 * <li>{@code engine-score}: a router's prefix scores over 1,000 pods' engine caches, {@code IndexedEngineView} vs
 * the map walk (see {@link EngineScoreBench});</li>
 * <li>{@code heap}: heap bytes per block of the embedded index at 10 M blocks (see {@link HeapPerBlock});</li>
 * <li>{@code policies}: hit rate of each eviction policy versus capacity on the Mooncake traces, replayed in
 * process through the metadata plane's read path, write path and reclaimer (see {@link PolicyBench}).</li>
 * </ul>
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        Map<String, String> opt = options(args);
        String cmd = args.length == 0 || args[0].startsWith("--") ? "help" : args[0];
        if (cmd.equals("replay") || cmd.equals("prefix") || cmd.equals("writes")) {
            System.out.println(idleNote());
        }
        try {
            run(cmd, args, opt);
        } catch (IllegalArgumentException e) { // a bad option: say which, no stack trace
            System.err.println("bench " + cmd + ": " + e.getMessage());
            System.exit(2);
        } catch (java.net.ConnectException e) { // the plane or Redis is not up: say so, not a stack trace
            System.err.println("bench " + cmd + ": cannot connect (" + e.getMessage()
                    + "); is the metadata plane up (./kvpool up) and Redis at --redis?");
            System.exit(1);
        }
    }

    private static void run(String cmd, String[] args, Map<String, String> opt) throws Exception {
        switch (cmd) {
            case "replay" -> replay(opt);
            case "prefix" -> prefix(opt);
            case "policies" -> PolicyBench.run(opt);
            case "writes" -> WriteBench.run(opt);
            case "deletes" -> DeleteBench.run(opt);
            case "reclaim" -> ReclaimBench.run(opt);
            case "sweep" -> SweepBench.run(opt);
            case "agent" -> dev.kvpool.bench.agent.AgentBench.run(opt,
                    args.length > 1 && !args[1].startsWith("--") ? args[1] : "all");
            case "gpu" -> dev.kvpool.bench.agent.GpuBench.run(opt);
            case "control-plane-ha" -> ControlPlaneHaBench.run(opt);
            case "gds" -> dev.kvpool.bench.agent.GdsBench.run(opt);
            case "propagation" -> PropagationBench.run(opt);
            case "engine-ingest" -> EngineIngestBench.run(opt);
            case "engine-score" -> EngineScoreBench.run(opt);
            case "index-restart" -> IndexRestartBench.run(opt);
            case "plane-restart" -> PlaneRestartBench.run(opt);
            case "heap" -> HeapPerBlock.main(opt.containsKey("blocks") ? new String[] {opt.get("blocks")} : new String[0]);
            default -> System.out.println("""
                    usage: ./kvpool bench <replay|prefix|writes|deletes|reclaim|sweep|propagation|engine-score|engine-ingest|heap|policies|agent|gpu|gds|control-plane-ha> [--url http://127.0.0.1:6382] [--redis 127.0.0.1:6379]
                      replay   [--trace ../shared/data/mooncake/conversation_trace.jsonl] [--limit N]
                      prefix   [--keys 1024] [--rounds 10] [--iters 200] [--warmup 3000] [--grpc 127.0.0.1:6381]
                      writes   [--threads 4] [--batch 64] [--batches 200] [--rounds 6] [--floor false] (no native-floor phase)
                      deletes  [--blocks 32768] [--batch 1024] [--rounds 4]   (RemoveCache until purged vs pipelined HDEL)
                      reclaim  [--blocks 1000000] [--step 1000] [--keep 0.5] [--fill-seconds 200] [--policy PREFIX_LRU]
                               (PREFIX_LRU eviction vs one HSCAN pass per round, and another Redis client's
                               GET latency meanwhile; a plane of its own)
                      sweep    [--blocks 100000] [--orphans 200000] [--rounds 3]   (storage sweep of files holding
                               no block vs find -mmin +60 -delete; on the host of the plane's file storage)
                      propagation [--samples 20] [--resync 3s] [--control-jar ..] [--meta-jar ..] (issue 34: a group
                               change acknowledged by the control plane until visible on 2 metadata planes, with
                               Kafka and with only the resync; starts Kafka, the control plane and the planes)
                      heap     [--blocks 10000000]   (run with a large -Xmx; ./kvpool bench uses -Xmx4g)
                      engine-score [--pods 1000] [--blocks 1024] [--rounds 5] [--warmup 3] [--gpu-requests 8] [--cpu-lag 2]
                      engine-ingest [--batches 200000] [--pods 16] [--rounds 2]
                               [--holdout 0.1] [--seed 36] [--trace <file.jsonl>] (engine prefix scores: indexed view vs
                               the map walk, in process; see EngineScoreBench)
                      policies [--trace conversation|synthetic|both|<file.jsonl>|kafka:<bootstrap>] [--capacities 1M,3M,10M,30M]
                               [--policies LRU,LFU,TTL,PREFIX_LRU] [--water 0.9] [--step-percentage 5]
                               [--lfu-decay 60] [--limit N] [--svg-dir docs/img|none]
                               kafka:<bootstrap> replays the traffic recorded on kvpool.cache: [--instance ID]
                               (default: all) [--block-tokens 16] (the instance's block size, for token capacities)
                               [--writes recorded|misses] (as recorded, or each query writing what it missed)
                      agent    [disk|pool|events|all] (data agent vs fio / summed bandwidth / Kafka's producer tool;
                               see data-agent/README.md)
                      agent layerwise [--blocks 1024] [--layers 64] [--bs 256,2048] [--pairs 5] (time to the first
                               layer and to the whole load vs whole-block loads)
                      gpu      [--blocks 256K,2M] [--batch-mib 256] [--rounds 7] (GPU tier vs PyTorch's copies and
                               one contiguous copy; needs a CUDA device)
                      control-plane-ha [--jar control-plane/target/quarkus-app/quarkus-run.jar] [--pg 127.0.0.1:5432]
                               [--db kvpool_bench_ha] [--lease 2000] [--loop lease/10] [--threads 8] [--seconds 10]
                               [--kills 5] (admin write throughput 3 replicas vs 1; leader take-over after kill -9)
                      gds      [--blocks 256K,2M] [--file-mib 1024] [--rounds 5] [--dir /var/tmp/kvpool-gds] [--batch 128]
                               [--qd 16] (NVMe <-> GPU through cuFile vs the bounce path, against min(disk O_DIRECT,
                               host<->GPU copy); needs a CUDA device; libcufile from -Dkvpool.agent.gds.library)
                    replay, prefix and writes need a running metadata plane (./kvpool up) and a local Redis;
                    heap and policies run in process.""");
        }
    }

    /**
     * How this machine's idle CPUs wake up, printed with every latency bench: on a VM whose cpuidle driver is
     * haltpoll with {@code guest_halt_poll_ns} 0, an idle vCPU halts at once and each wake-up of a thread on it
     * costs tens of µs. A KVCM call over the Redis store crosses processes four times (client → plane → Redis →
     * plane → client) where MGET crosses twice, so this setting alone moves the ratios (docs/benchmarks.md).
     */
    static String idleNote() {
        String driver = readSys("/sys/devices/system/cpu/cpuidle/current_driver");
        String poll = readSys("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
        String note = "machine: " + Runtime.getRuntime().availableProcessors() + " CPUs, cpuidle driver "
                + (driver == null ? "unknown" : driver)
                + (poll == null ? "" : ", guest_halt_poll_ns " + poll);
        if ("haltpoll".equals(driver) && "0".equals(poll)) {
            note += " (idle vCPUs halt at once: every cross-CPU wake-up is slow, latency ratios read high)";
        }
        return note;
    }

    private static String readSys(String path) {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of(path)).trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** {@code --key value} and bare {@code --flag} (= "true") options. */
    public static Map<String, String> options(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--")) {
                m.put(args[i].substring(2), i + 1 < args.length && !args[i + 1].startsWith("--") ? args[++i] : "true");
            }
        }
        return m;
    }

    static String register(KvcmHttp kv, String instance, int blockSize, long specBytes) throws IOException {
        RegisterInstanceResponse r = kv.call("registerInstance", RegisterInstanceRequest.newBuilder().setTraceId("bench")
                .setInstanceGroup("default").setInstanceId(instance).setBlockSize(blockSize)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("bench-model").setDtype("bf16").setTpSize(1))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(specBytes)).build(),
                RegisterInstanceResponse.newBuilder()).build();
        if (r.getHeader().getStatus().getCode() != ErrorCode.OK) {
            throw new IOException("registerInstance failed: " + r.getHeader().getStatus());
        }
        return r.getStorageConfigs();
    }

    // ---- replay --------------------------------------------------------------------------------------------

    static void replay(Map<String, String> opt) throws Exception {
        Path trace = opt.containsKey("trace") ? Path.of(opt.get("trace")) : MooncakeTrace.conversation();
        Opts o = new Opts(opt);
        int limit = o.integer("limit", Integer.MAX_VALUE);
        KvcmHttp kv = new KvcmHttp(o.url());
        String instance = "bench-replay-" + System.currentTimeMillis();
        // block size 512 tokens as in the trace; 16 KiB per block keeps 180 k blocks inside the default quota
        register(kv, instance, 512, 16384);
        List<long[]> requests = MooncakeTrace.read(trace, limit).stream().map(MooncakeTrace.Request::hashIds).toList();
        System.out.printf("replaying %d requests of %s against %s (instance %s) and Redis %s%n", requests.size(),
                trace.getFileName(), o.url(), instance, o.redisAddress());
        Stats get = new Stats(), getX = new Stats(), start = new Stats(), finish = new Stats(), mget = new Stats(),
                mset = new Stats();
        long asked = 0, hit = 0, redisHit = 0;
        String prefix = "kvpool-bench:" + instance + ":";
        try (Resp redis = o.redis()) {
            int done = 0;
            long t0 = System.nanoTime();
            for (long[] keys : requests) {
                // KVPool: prefix query, then write what missed
                // timed twice over: the whole call as a Java client makes it (encode, exchange, decode), and the
                // exchange alone, as the MGET below (its command built before, its values not decoded)
                long s = System.nanoTime();
                byte[] qBytes = ProtoJson.print(GetCacheLocationRequest.newBuilder()
                        .setTraceId("r").setInstanceId(instance).setQueryType(QueryType.QT_PREFIX_MATCH)
                        .addAllBlockKeys(boxed(keys)).setBlockMask(BlockMask.newBuilder().setOffset(0)).build());
                long encoded = System.nanoTime();
                byte[] body = kv.post("/api/getCacheLocation", qBytes);
                long exchanged = System.nanoTime();
                GetCacheLocationResponse q = ProtoJson.merge(body, GetCacheLocationResponse.newBuilder()).build();
                get.add(System.nanoTime() - s);
                getX.add(exchanged - encoded);
                int h = q.getLocationsCount();
                asked += keys.length;
                hit += h;
                String firstUri = "";
                if (h < keys.length) {
                    s = System.nanoTime();
                    StartWriteCacheResponse sw = kv.call("startWriteCache", StartWriteCacheRequest.newBuilder()
                            .setTraceId("r").setInstanceId(instance).addAllBlockKeys(boxed(keys))
                            .setWriteTimeoutSeconds(30).build(), StartWriteCacheResponse.newBuilder()).build();
                    start.add(System.nanoTime() - s);
                    if (sw.getHeader().getStatus().getCode() != ErrorCode.OK) {
                        throw new IOException("startWriteCache failed: " + sw.getHeader().getStatus());
                    }
                    BoolMasksType.Builder ok = BoolMasksType.newBuilder();
                    for (int i = 0; i < sw.getLocationsCount(); i++) {
                        ok.addValues(true);
                    }
                    if (sw.getLocationsCount() > 0) {
                        firstUri = sw.getLocations(0).getLocationSpecs(0).getUri();
                    }
                    s = System.nanoTime();
                    CommonResponse f = kv.call("finishWriteCache", FinishWriteCacheRequest.newBuilder().setTraceId("r")
                            .setInstanceId(instance).setWriteSessionId(sw.getWriteSessionId())
                            .setSuccessBlocks(BlockMask.newBuilder().setBoolMasks(ok)).build(),
                            CommonResponse.newBuilder()).build();
                    finish.add(System.nanoTime() - s);
                    if (f.getHeader().getStatus().getCode() != ErrorCode.OK) {
                        throw new IOException("finishWriteCache failed: " + f.getHeader().getStatus());
                    }
                }
                // Redis: the same keys, values the size of a serialized location
                byte[][] cmd = new byte[keys.length + 1][];
                cmd[0] = "MGET".getBytes(StandardCharsets.US_ASCII);
                for (int i = 0; i < keys.length; i++) {
                    cmd[i + 1] = (prefix + keys[i]).getBytes(StandardCharsets.US_ASCII);
                }
                s = System.nanoTime();
                Object[] vals = (Object[]) redis.call(cmd);
                mget.add(System.nanoTime() - s);
                int rh = 0;
                while (rh < vals.length && vals[rh] != null) {
                    rh++;
                }
                redisHit += rh;
                if (rh < keys.length) {
                    byte[][] set = new byte[1 + 2 * (keys.length - rh)][];
                    set[0] = "MSET".getBytes(StandardCharsets.US_ASCII);
                    byte[] value = locationJson(firstUri.isEmpty() ? "file://nfs_01/x/tp0/slab_00000000?blkid=0&size=16384" : firstUri);
                    for (int i = rh, j = 1; i < keys.length; i++) {
                        set[j++] = cmd[i + 1];
                        set[j++] = value;
                    }
                    s = System.nanoTime();
                    redis.call(set);
                    mset.add(System.nanoTime() - s);
                }
                if (++done % 2000 == 0) {
                    System.out.printf("  %d/%d requests, hit rate %.1f%%, %.0f req/s%n", done, requests.size(),
                            100.0 * hit / asked, done / ((System.nanoTime() - t0) / 1e9));
                }
            }
            cleanup(redis, prefix, requests);
        }
        System.out.printf("blocks asked %d, hit %d: hit rate %.2f%% (Redis baseline saw %.2f%%)%n", asked, hit,
                100.0 * hit / asked, 100.0 * redisHit / asked);
        System.out.println(get.line("getCacheLocation"));
        System.out.println(getX.line("  exchange only"));
        System.out.println(start.line("startWriteCache"));
        System.out.println(finish.line("finishWriteCache"));
        System.out.println(mget.line("redis MGET"));
        System.out.println(mset.line("redis MSET"));
        System.out.printf("ratio getCacheLocation/MGET: p50 %.2fx  p99 %.2fx%n", get.pctMicros(50) / mget.pctMicros(50),
                get.pctMicros(99) / mget.pctMicros(99));
        System.out.printf("ratio getCacheLocation/MGET, exchange only (as MGET: request built before, values not decoded): p50 %.2fx  p99 %.2fx%n",
                getX.pctMicros(50) / mget.pctMicros(50), getX.pctMicros(99) / mget.pctMicros(99));
        System.out.printf("ratio start+finish/MSET: p50 %.2fx%n", (start.pctMicros(50) + finish.pctMicros(50)) / mset.pctMicros(50));
    }

    static void cleanup(Resp redis, String prefix, List<long[]> requests) throws IOException {
        java.util.Set<Long> all = new java.util.HashSet<>();
        requests.forEach(k -> Arrays.stream(k).forEach(all::add));
        List<Long> keys = new ArrayList<>(all);
        for (int i = 0; i < keys.size(); i += 1000) {
            List<Long> part = keys.subList(i, Math.min(keys.size(), i + 1000));
            byte[][] del = new byte[part.size() + 1][];
            del[0] = "DEL".getBytes(StandardCharsets.US_ASCII);
            for (int j = 0; j < part.size(); j++) {
                del[j + 1] = (prefix + part.get(j)).getBytes(StandardCharsets.US_ASCII);
            }
            redis.call(del);
        }
    }

    static byte[] locationJson(String uri) {
        return ("{\"type\":\"ST_NFS\",\"spec_size\":1,\"location_specs\":[{\"name\":\"tp0\",\"uri\":\"" + uri + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
    }

    static List<Long> boxed(long[] keys) {
        List<Long> l = new ArrayList<>(keys.length);
        for (long k : keys) {
            l.add(k);
        }
        return l;
    }

    // ---- prefix --------------------------------------------------------------------------------------------

    private static final byte[] EMPTY_BODY = "{}".getBytes(StandardCharsets.US_ASCII);

    static void prefix(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        int n = o.integer("keys", 1024);
        int rounds = o.integer("rounds", 10);
        int iters = o.integer("iters", 200);
        KvcmHttp kv = new KvcmHttp(o.url());
        String instance = "bench-prefix-" + System.currentTimeMillis();
        register(kv, instance, 512, 16384);
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = 0x5DEECE66DL * (i + 1) ^ System.nanoTime();
        }
        StartWriteCacheResponse sw = kv.call("startWriteCache", StartWriteCacheRequest.newBuilder().setTraceId("p")
                .setInstanceId(instance).addAllBlockKeys(boxed(keys)).setWriteTimeoutSeconds(60).build(),
                StartWriteCacheResponse.newBuilder()).build();
        BoolMasksType.Builder ok = BoolMasksType.newBuilder();
        sw.getLocationsList().forEach(l -> ok.addValues(true));
        kv.call("finishWriteCache", FinishWriteCacheRequest.newBuilder().setTraceId("p").setInstanceId(instance)
                .setWriteSessionId(sw.getWriteSessionId()).setSuccessBlocks(BlockMask.newBuilder().setBoolMasks(ok))
                .build(), CommonResponse.newBuilder());
        GetCacheLocationRequest q = GetCacheLocationRequest.newBuilder().setTraceId("p").setInstanceId(instance)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllBlockKeys(boxed(keys))
                .setBlockMask(BlockMask.newBuilder().setOffset(0)).build();
        String prefix = "kvpool-bench:" + instance + ":";
        byte[][] mget = new byte[n + 1][];
        mget[0] = "MGET".getBytes(StandardCharsets.US_ASCII);
        try (Resp redis = o.redis()) {
            byte[][] set = new byte[2 * n + 1][];
            set[0] = "MSET".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < n; i++) {
                mget[i + 1] = (prefix + keys[i]).getBytes(StandardCharsets.US_ASCII);
                set[2 * i + 1] = mget[i + 1];
                set[2 * i + 2] = locationJson(sw.getLocations(i).getLocationSpecs(0).getUri());
            }
            redis.call(set);
            System.out.printf("prefix match of %d cached keys over HTTP vs Redis MGET of the same %d keys (%d-byte values): %d rounds x %d calls each%n",
                    n, n, set[2].length, rounds, iters);
            // warm-up both sides: the plane's JIT needs a few thousand calls before its times settle (rounds
            // after a short warm-up read 2-3x slower)
            int warmup = o.integer("warmup", 3000);
            for (int i = 0; i < Math.max(warmup, iters); i++) {
                kv.call("getCacheLocation", q, GetCacheLocationResponse.newBuilder());
                redis.call(mget);
            }
            // optional: the same call over the KVCM gRPC service (--grpc host:port), a cheaper transport than HTTP+JSON
            GrpcMeta stub = opt.containsKey("grpc") ? new GrpcMeta(opt.get("grpc")) : null;
            if (stub != null) {
                for (int i = 0; i < Math.max(200, iters); i++) {
                    stub.getCacheLocation(q);
                }
            }
            double[] grpcRatios = new double[rounds];
            Stats allG = new Stats();
            double[] ratios = new double[rounds], rawRatios = new double[rounds], floorRatios = new double[rounds];
            Stats allK = new Stats(), allX = new Stats(), allR = new Stats(), allF = new Stats();
            byte[] qBytes = ProtoJson.print(q);
            for (int r = 0; r < rounds; r++) {
                Stats a = new Stats(), x = new Stats(), b = new Stats(), f = new Stats(), gStats = new Stats();
                for (int i = 0; i < iters; i++) {
                    // A: the whole call as a Java client makes it: encode, exchange, decode into messages
                    long s = System.nanoTime();
                    GetCacheLocationResponse resp = kv.call("getCacheLocation", q, GetCacheLocationResponse.newBuilder()).build();
                    long d = System.nanoTime() - s;
                    a.add(d);
                    allK.add(d);
                    if (resp.getLocationsCount() != n) {
                        throw new IOException("expected " + n + " hits, got " + resp.getLocationsCount());
                    }
                    // A': the exchange alone (request bytes out, whole response read), like MGET's bulk strings
                    s = System.nanoTime();
                    byte[] body = kv.post("/api/getCacheLocation", qBytes);
                    d = System.nanoTime() - s;
                    x.add(d);
                    allX.add(d);
                    if (body.length < 30 * n) {
                        throw new IOException("short response");
                    }
                    // the HTTP floor: the same client and server, an unknown RPC answered 404 at once (no store)
                    s = System.nanoTime();
                    kv.post("/api/none", EMPTY_BODY, false);
                    d = System.nanoTime() - s;
                    f.add(d);
                    allF.add(d);
                    if (stub != null) { // G: gRPC, decoded into messages by the generated stub
                        s = System.nanoTime();
                        GetCacheLocationResponse g = stub.getCacheLocation(q);
                        d = System.nanoTime() - s;
                        allG.add(d);
                        gStats.add(d);
                        if (g.getLocationsCount() != n) {
                            throw new IOException("gRPC: expected " + n + " hits, got " + g.getLocationsCount());
                        }
                    }
                    // B: the baseline
                    s = System.nanoTime();
                    Object[] v = (Object[]) redis.call(mget);
                    d = System.nanoTime() - s;
                    b.add(d);
                    allR.add(d);
                    if (v.length != n || v[n - 1] == null) {
                        throw new IOException("redis baseline lost keys");
                    }
                }
                ratios[r] = a.pctMicros(50) / b.pctMicros(50);
                rawRatios[r] = x.pctMicros(50) / b.pctMicros(50);
                floorRatios[r] = f.pctMicros(50) / b.pctMicros(50);
                grpcRatios[r] = stub == null ? Double.NaN : gStats.pctMicros(50) / b.pctMicros(50);
                if (stub != null) {
                    System.out.printf("  round %2d: gRPC p50 %7.1f us, ratio %.2fx%n", r + 1, gStats.pctMicros(50), grpcRatios[r]);
                }
                System.out.printf("  round %2d: KVPool p50 %7.1f us (exchange only %7.1f us), Redis MGET p50 %7.1f us, ratio %.2fx (exchange only %.2fx; HTTP floor %.2fx)%n",
                        r + 1, a.pctMicros(50), x.pctMicros(50), b.pctMicros(50), ratios[r], rawRatios[r], floorRatios[r]);
            }
            Arrays.sort(ratios);
            Arrays.sort(rawRatios);
            Arrays.sort(floorRatios);
            System.out.println(allK.line("KVPool prefix " + n));
            System.out.println(allX.line("  exchange only"));
            System.out.println(allF.line("HTTP floor (404)"));
            System.out.println(allR.line("Redis MGET " + n));
            System.out.printf("RESULT prefix-%d p50 ratio KVPool/Redis, decoded into messages: median %.2fx (min %.2fx, max %.2fx)%n",
                    n, ratios[rounds / 2], ratios[0], ratios[rounds - 1]);
            System.out.printf("RESULT prefix-%d p50 ratio KVPool/Redis, exchange only (as MGET: values not decoded): median %.2fx (min %.2fx, max %.2fx); target <= 1.0x%n",
                    n, rawRatios[rounds / 2], rawRatios[0], rawRatios[rounds - 1]);
            System.out.printf("RESULT HTTP floor (unknown RPC, 404, same client) / Redis MGET of %d keys: median %.2fx%n",
                    n, floorRatios[rounds / 2]);
            if (stub != null) {
                Arrays.sort(grpcRatios);
                System.out.println(allG.line("KVPool prefix " + n + " over gRPC"));
                System.out.printf("RESULT prefix-%d p50 ratio KVPool over gRPC/Redis, decoded into messages: median %.2fx (min %.2fx, max %.2fx)%n",
                        n, grpcRatios[rounds / 2], grpcRatios[0], grpcRatios[rounds - 1]);
                stub.close();
            }
            byte[][] del = mget.clone();
            del[0] = "DEL".getBytes(StandardCharsets.US_ASCII);
            redis.call(del);
        }
    }
}
