package dev.kvpool.meta.kvcm;

import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.api.naming.Text;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.index.StoreException;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.api.events.CacheEvent;
import dev.kvpool.meta.events.CacheEvents;
import dev.kvpool.meta.index.IndexDroppedException;
import dev.kvpool.meta.query.QueryPath;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.JsonLocations;
import dev.kvpool.meta.registry.LocationSink;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.write.Deletions;
import dev.kvpool.meta.write.WritePath;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The KVCM MetaService semantics, once, for both transports: leader gate, then the instance pre-check, then
 * validation, then the work. Logical errors are returned in header.status — never thrown to the transport.
 */
public final class KvcmMeta {
    private static final Logger LOG = Logger.getLogger(KvcmMeta.class);

    /** Who this node is and where a client finds the leader (GetClusterInfo). */
    public record Node(String nodeId, String host, int rpcPort, int httpPort) {
    }

    private final Registry registry;
    private final QueryPath query;
    private final WritePath write;
    private final Deletions deletions;
    private final WritePath.IndexStoreOwner sessions;
    private final BooleanSupplier leader;
    private final BooleanSupplier lookups;
    private final Node node;
    private final MeterRegistry meters;
    private final Supplier<CacheEvents> events;
    private final dev.kvpool.meta.stats.StatsCounters stats;
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    public KvcmMeta(Registry registry, QueryPath query, WritePath write, Deletions deletions,
                    WritePath.IndexStoreOwner sessions, BooleanSupplier leader, BooleanSupplier lookups, Node node,
                    MeterRegistry meters, Supplier<CacheEvents> events, dev.kvpool.meta.stats.StatsCounters stats) {
        this.registry = registry;
        this.lookups = lookups;
        this.query = query;
        this.write = write;
        this.deletions = deletions;
        this.sessions = sessions;
        this.leader = leader;
        this.node = node;
        this.meters = meters;
        this.events = events;
        this.stats = stats;
    }

    /** What this replica served per instance, for the control plane's stats reports. */
    public dev.kvpool.meta.stats.StatsCounters stats() {
        return stats;
    }

    /** The mask as the event carries it: the bool vector, or the offset (decoded once, by {@link KvcmMasks}). */
    private static Object maskOf(boolean has, BlockMask m) {
        if (!has) {
            return null;
        }
        Mask d = KvcmMasks.of(m);
        return d.bools() != null ? d.bools() : (Object) d.offset();
    }

    // ---- plumbing ------------------------------------------------------------------------------------------

    private static CommonResponseHeader header(String traceId, ErrorCode code, String message) {
        return CommonResponseHeader.newBuilder()
                .setStatus(Status.newBuilder().setCode(code).setMessage(message == null ? "" : message))
                .setRequestId(traceId + "_" + (System.currentTimeMillis() * 1000 + (System.nanoTime() / 1000) % 1000))
                .build();
    }

    private static CommonResponseHeader ok(String traceId, String message) {
        return header(traceId, ErrorCode.OK, message);
    }

    /**
     * Runs one RPC: {@code body} builds the OK response; a refusal (or any failure) becomes an error response
     * built by {@code error} from the header, so every response carries a header whatever happens.
     */
    private final FailureLog storeFailures = new FailureLog(LOG,
            "KVCM calls to the index store", java.time.Duration.ofSeconds(30), StoreException.class::isInstance);

    /** Which calls a starting replica answers: see {@link #lookupGate()}. */
    private enum Gate { NONE, LOOKUP, ALL }

    private <R> R call(String api, String traceId, Gate gate, Supplier<R> body,
                       Function<CommonResponseHeader, R> error) {
        long t0 = System.nanoTime();
        try {
            if (gate == Gate.ALL) {
                leaderGate();
            } else if (gate == Gate.LOOKUP) {
                lookupGate();
            }
            checkTrace(traceId);
            R out;
            try {
                out = body.get();
            } catch (IndexDroppedException d) {
                // removed by another replica (the retry answers INSTANCE_NOT_EXIST) or lost with the store's data
                // (the retry writes into a new index): either way the caller gets an answer, not a stale failure
                registry.reconcile(d.instanceId());
                out = body.get();
            }
            served(api, t0, ErrorCode.OK);
            return out;
        } catch (RuntimeException e) {
            return failed(api, traceId, t0, e, error);
        }
    }

    /**
     * trace_id is opaque (vLLM passes the request id a user chose) but it is echoed into request_id, events and
     * logs: bounded, and no control characters.
     */
    static void checkTrace(String traceId) {
        String p = Text.opaqueProblem(traceId, Limits.MAX_TEXT);
        if (p != null) {
            throw MetaException.invalid("trace_id: " + p);
        }
    }

    private void leaderGate() {
        if (!leader.getAsBoolean()) {
            throw new MetaException(MetaException.Kind.NOT_LEADER, "Server is not leader");
        }
    }

    /**
     * Lookups read only the registry and the index, so a replica answers them as soon as its index is loaded, while
     * usage and file slots are still being rebuilt (which writes, removals and registrations need).
     */
    private void lookupGate() {
        if (!lookups.getAsBoolean()) {
            throw new MetaException(MetaException.Kind.NOT_LEADER, "Server is not leader");
        }
    }

    /** The requests {@link #lookupGate()} lets through once the index is loaded. */
    public static boolean isLookup(Object request) {
        return request instanceof GetCacheLocationRequest || request instanceof GetCacheLocationLenRequest
                || request instanceof GetCacheLocationsByBackendRequest || request instanceof GetCacheMetaRequest
                || request instanceof GetInstanceInfoRequest;
    }

    /** The error response for a failure: a refusal keeps its code ({@link KvcmCodes}), anything else is INTERNAL_ERROR. */
    private <R> R failed(String api, String traceId, long t0, Throwable e, Function<CommonResponseHeader, R> error) {
        if (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        ErrorCode code = KvcmCodes.of(e);
        String message;
        if (code != null) {
            message = e.getMessage();
        } else {
            code = ErrorCode.INTERNAL_ERROR;
            message = api + " failed: " + e;
            if (e instanceof dev.kvpool.meta.index.StoreException) {
                storeFailures.failed(e); // an outage fails every call alike: reported, not logged per call
            } else {
                LOG.errorf(e, "%s failed (trace %s)", api, Text.safe(traceId));
            }
        }
        try {
            return error.apply(header(traceId, code, message));
        } finally {
            served(api, t0, code);
        }
    }

    private void served(String api, long t0, ErrorCode code) {
        if (code == ErrorCode.OK) {
            storeFailures.ok();
        }
        timers.computeIfAbsent(api, a -> Timer.builder("kvpool.meta.requests").tag("api", a)
                .description("KVCM meta RPCs served").register(meters)).record(System.nanoTime() - t0,
                java.util.concurrent.TimeUnit.NANOSECONDS);
        if (code != ErrorCode.OK) {
            counters.computeIfAbsent(api + "/" + code, k -> Counter.builder("kvpool.meta.errors").tag("api", api)
                    .tag("code", code.name()).register(meters)).increment();
        }
    }

    /** The §1.9 pre-check (after the leader gate): an unknown or empty instance id is INSTANCE_NOT_EXIST. */
    private Instance instance(String id) {
        Instance inst = registry.lookup(id);
        if (inst == null) {
            throw MetaException.noInstance(id.isEmpty() ? "instance_id is empty"
                    : "instance '" + Text.safe(id) + "' is not registered");
        }
        return inst;
    }

    /**
     * KVCM's fault injection (§3.16): after the leader gate and the instance pre-check, before field validation, an
     * injected fault fails the call with INTERNAL_ERROR before it does any work. The table is empty unless the debug
     * service is enabled and a fault was injected.
     */
    private static void faultCheck(String api, String traceId) {
        if (dev.kvpool.meta.debug.FaultTable.PROCESS.fires(api, traceId)) {
            throw MetaException.internal(api + " fail due to fault injection");
        }
    }

    static long[] toArray(List<Long> list) {
        long[] out = new long[list.size()];
        if (list instanceof com.google.protobuf.Internal.LongList ll) {
            for (int i = 0; i < out.length; i++) {
                out[i] = ll.getLong(i);
            }
        } else {
            for (int i = 0; i < out.length; i++) {
                out[i] = list.get(i);
            }
        }
        return out;
    }

    /** §3.2.1: block_keys win; else keys derived from token_ids with the instance's scheme. */
    static long[] keys(Instance inst, List<Long> blockKeys, List<Long> tokenIds) {
        if (blockKeys.size() > Limits.MAX_KEYS_PER_CALL) {
            throw MetaException.invalid("block_keys: at most " + Limits.MAX_KEYS_PER_CALL
                    + " keys per call, got " + blockKeys.size());
        }
        if (tokenIds.size() > Limits.MAX_TOKENS_PER_CALL) {
            throw MetaException.invalid("token_ids: at most " + Limits.MAX_TOKENS_PER_CALL
                    + " tokens per call, got " + tokenIds.size());
        }
        if (!blockKeys.isEmpty()) {
            return toArray(blockKeys);
        }
        if (tokenIds.isEmpty()) {
            throw MetaException.invalid("block_keys and token_ids are both empty");
        }
        if (inst.blockSize <= 0) {
            throw MetaException.invalid("token_ids need a block_size > 0; instance '" + inst.id + "' registered block_size "
                    + inst.blockSize);
        }
        if (tokenIds.size() / inst.blockSize > Limits.MAX_KEYS_PER_CALL) {
            throw MetaException.invalid("token_ids: " + tokenIds.size() + " tokens make more than "
                    + Limits.MAX_KEYS_PER_CALL + " blocks of " + inst.blockSize);
        }
        return inst.keysOf(toArray(tokenIds));
    }

    private void counted(Instance inst, String what, long n) {
        counters.computeIfAbsent(what + "/" + inst.id, k -> Counter.builder("kvpool.meta.blocks." + what)
                .tag("instance", inst.id).register(meters)).increment(n);
    }

    private static Set<String> filter(List<String> names) {
        return names.isEmpty() ? null : new HashSet<>(names);
    }

    private QueryType queryType(Instance inst, QueryType t) {
        if (t == QueryType.QT_UNSPECIFIED || t == QueryType.UNRECOGNIZED) {
            t = inst.info.getDefaultQueryType();
        }
        return switch (t) {
            case QT_BATCH_GET, QT_PREFIX_MATCH, QT_REVERSE_ROLL_SW_MATCH -> t;
            case QT_PREFIX_MATCH_WITH_MAMBA -> throw new MetaException(MetaException.Kind.UNSUPPORTED, 
                    "QT_PREFIX_MATCH_WITH_MAMBA is not supported yet");
            default -> throw MetaException.invalid("query_type is required (QT_BATCH_GET, QT_PREFIX_MATCH or "
                    + "QT_REVERSE_ROLL_SW_MATCH) and the instance registered no default_query_type");
        };
    }

    /** A query type {@link #queryType} accepted, as the query path's match. */
    private static dev.kvpool.meta.query.Match match(QueryType t) {
        return switch (t) {
            case QT_PREFIX_MATCH -> dev.kvpool.meta.query.Match.PREFIX;
            case QT_BATCH_GET -> dev.kvpool.meta.query.Match.BATCH;
            default -> dev.kvpool.meta.query.Match.SLIDING_WINDOW;
        };
    }

    private static dev.kvpool.meta.write.Trim trim(TrimStrategy s) {
        return switch (s) {
            case TS_REMOVE_ALL_CACHE -> dev.kvpool.meta.write.Trim.REMOVE_ALL_CACHE;
            case TS_REMOVE_ALL_META -> dev.kvpool.meta.write.Trim.REMOVE_ALL_META;
            case TS_TIMESTAMP -> dev.kvpool.meta.write.Trim.TIMESTAMP;
            default -> throw MetaException.invalid("strategy must be TS_REMOVE_ALL_CACHE, TS_REMOVE_ALL_META or TS_TIMESTAMP");
        };
    }

    // ---- RPCs ----------------------------------------------------------------------------------------------

    public RegisterInstanceResponse registerInstance(RegisterInstanceRequest r) {
        return call("RegisterInstance", r.getTraceId(), Gate.ALL, () -> {
            Registry.Registration reg = registry.register(r);
            GroupConfig g = registry.group(reg.instance().group);
            return RegisterInstanceResponse.newBuilder()
                    .setHeader(ok(r.getTraceId(), reg.created() ? "Instance registered successfully"
                            : "Instance already registered with the same configuration"))
                    .setStorageConfigs(registry.storageConfigsJson(g))
                    .setExtraInfo(g == null ? "" : g.extraInfo()).build();
        }, h -> RegisterInstanceResponse.newBuilder().setHeader(h).build());
    }

    public GetInstanceInfoResponse getInstanceInfo(GetInstanceInfoRequest r) {
        return call("GetInstanceInfo", r.getTraceId(), Gate.LOOKUP, () -> {
            if (r.getInstanceId().isEmpty()) {
                throw MetaException.invalid("instance_id is required");
            }
            Instance inst = instance(r.getInstanceId());
            return GetInstanceInfoResponse.newBuilder().setHeader(ok(r.getTraceId(), ""))
                    .setInstanceGroup(inst.group).setInstanceInfo(inst.info).build();
        }, h -> GetInstanceInfoResponse.newBuilder().setHeader(h).build());
    }

    public GetCacheLocationResponse getCacheLocation(GetCacheLocationRequest r) {
        return call("GetCacheLocation", r.getTraceId(), Gate.LOOKUP, () -> {
            var sink = locate(r, new LocationSink.Protos(filter(r.getLocationSpecNamesList())));
            return GetCacheLocationResponse.newBuilder().setHeader(ok(r.getTraceId(), LOCATED))
                    .addAllLocations(sink.locations()).build();
        }, h -> GetCacheLocationResponse.newBuilder().setHeader(h).build());
    }

    private static final String LOCATED = "Cache locations retrieved successfully";
    private static final byte[] LOCATIONS_KEY = ",\"locations\":".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /**
     * GetCacheLocation answered as proto3 JSON bytes, writing the locations straight from the index (the HTTP hot
     * path; byte-identical to printing {@link #getCacheLocation}'s message).
     */
    public byte[] getCacheLocationJson(GetCacheLocationRequest r) {
        Object out = call("GetCacheLocation", r.getTraceId(), Gate.LOOKUP, () -> {
            var sink = locate(r, jsonSink(r));
            return located(sink);
        }, h -> GetCacheLocationResponse.newBuilder().setHeader(h).build());
        return out instanceof byte[] b ? b : ProtoJson.print((GetCacheLocationResponse) out);
    }

    /**
     * {@link #getCacheLocationJson} without blocking the caller (an event loop): the index read is asynchronous.
     * Only instances known here are found ({@link Registry#lookup} of an unknown id may read the store): callers
     * send other ids to {@link #getCacheLocationJson} on a worker.
     */
    public java.util.concurrent.CompletionStage<byte[]> getCacheLocationJsonAsync(GetCacheLocationRequest r) {
        return locateAsync(r, () -> jsonSink(r), this::located, ProtoJson::print);
    }

    /** {@link #getCacheLocation} without blocking the caller (the gRPC event loop); same rules as the JSON one. */
    public java.util.concurrent.CompletionStage<GetCacheLocationResponse> getCacheLocationAsync(GetCacheLocationRequest r) {
        return locateAsync(r, () -> new LocationSink.Protos(filter(r.getLocationSpecNamesList())),
                sink -> GetCacheLocationResponse.newBuilder().setHeader(ok(r.getTraceId(), LOCATED))
                        .addAllLocations(sink.locations()).build(), e -> e);
    }

    private <S extends LocationSink, T> java.util.concurrent.CompletionStage<T> locateAsync(GetCacheLocationRequest r,
            java.util.function.Supplier<S> sinks, Function<S, T> done, Function<GetCacheLocationResponse, T> error) {
        long t0 = System.nanoTime();
        java.util.concurrent.CompletionStage<T> out;
        try {
            lookupGate();
            checkTrace(r.getTraceId());
            Query q = query(r, false);
            out = query.locateAsync(q.inst, q.keys, match(q.type), q.mask, r.getSwSize(), sinks.get()).thenApply(sink -> {
                counted(q, r, sink);
                return done.apply(sink);
            });
        } catch (RuntimeException e) {
            out = java.util.concurrent.CompletableFuture.failedFuture(e);
        }
        return out.handle((res, e) -> {
            if (e == null) {
                served("GetCacheLocation", t0, ErrorCode.OK);
                return res;
            }
            return error.apply(failed("GetCacheLocation", r.getTraceId(), t0, e,
                    h -> GetCacheLocationResponse.newBuilder().setHeader(h).build()));
        });
    }

    /**
     * The locations of a successful answer go straight after its header in one buffer: {"header":{...},
     * "locations":[...]} is then copied once, not assembled from pieces (a 1,024-block answer is ~170 KB).
     */
    private JsonLocations jsonSink(GetCacheLocationRequest r) {
        byte[] header = ProtoJson.print(CommonResponse.newBuilder().setHeader(ok(r.getTraceId(), LOCATED)));
        byte[] head = java.util.Arrays.copyOf(header, header.length - 1 + LOCATIONS_KEY.length); // without the closing '}'
        System.arraycopy(LOCATIONS_KEY, 0, head, header.length - 1, LOCATIONS_KEY.length);
        return new JsonLocations(filter(r.getLocationSpecNamesList()), r.getBlockKeysCount(), head);
    }

    private byte[] located(JsonLocations sink) {
        return sink.finishObject();
    }

    private record Query(Instance inst, long[] keys, QueryType type, Mask mask) {
    }

    /** {@code mayReadStore} false: only instances known here (an event loop must not wait on the store). */
    private Query query(GetCacheLocationRequest r, boolean mayReadStore) {
        Instance inst = mayReadStore ? instance(r.getInstanceId()) : registry.instance(r.getInstanceId());
        if (inst == null) {
            throw MetaException.noInstance("instance '"
                    + Text.safe(r.getInstanceId()) + "' is not registered");
        }
        faultCheck("GetCacheLocation", r.getTraceId());
        long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
        return new Query(inst, keys, queryType(inst, r.getQueryType()),
                KvcmMasks.of(r.hasBlockMask() ? r.getBlockMask() : null));
    }

    private <S extends LocationSink> S locate(GetCacheLocationRequest r, S sink) {
        Query q = query(r, true);
        switch (q.type) {
            case QT_PREFIX_MATCH -> query.prefix(q.inst, q.keys, q.mask, sink);
            case QT_BATCH_GET -> query.batch(q.inst, q.keys, sink);
            default -> query.slidingWindow(q.inst, q.keys, r.getSwSize(), sink);
        }
        counted(q, r, sink);
        return sink;
    }

    private void counted(Query q, GetCacheLocationRequest r, LocationSink sink) {
        counted(q.inst, "queried", q.keys.length);
        if (q.type == QueryType.QT_PREFIX_MATCH) {
            int hits = sink.count();
            counted(q.inst, "hit", hits);
            stats.prefixQuery(q.inst, q.keys.length, hits);
        }
        CacheEvents ev = events.get();
        if (ev.enabled()) {
            ev.offer(new CacheEvent(CacheEvent.GET_CACHE_LOCATION, q.inst.id, CacheEvents.nowMicros(), q.type.name(),
                    q.keys, maskOf(r.hasBlockMask(), r.getBlockMask()), q.type == QueryType.QT_REVERSE_ROLL_SW_MATCH
                    ? r.getSwSize() : null, sink.count(), null, null, null));
        }
    }

    public GetCacheLocationLenResponse getCacheLocationLen(GetCacheLocationLenRequest r) {
        return call("GetCacheLocationLen", r.getTraceId(), Gate.LOOKUP, () -> {
            Instance inst = instance(r.getInstanceId());
            long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
            long len = switch (queryType(inst, r.getQueryType())) {
                case QT_PREFIX_MATCH -> {
                    long n = query.prefixLength(inst, keys);
                    stats.prefixQuery(inst, keys.length, Math.min(n, keys.length));
                    yield n;
                }
                case QT_BATCH_GET -> query.batchHits(inst, keys);
                default -> query.slidingWindowLength(inst, keys, r.getSwSize());
            };
            return GetCacheLocationLenResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cache location length retrieved"))
                    .setCacheLocationLen(len).build();
        }, h -> GetCacheLocationLenResponse.newBuilder().setHeader(h).build());
    }

    public GetCacheLocationsByBackendResponse getCacheLocationsByBackend(GetCacheLocationsByBackendRequest r) {
        return call("GetCacheLocationsByBackend", r.getTraceId(), Gate.LOOKUP, () -> {
            Instance inst = instance(r.getInstanceId());
            long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
            if (queryType(inst, r.getQueryType()) != QueryType.QT_BATCH_GET) {
                throw MetaException.invalid("GetCacheLocationsByBackend supports only QT_BATCH_GET");
            }
            if (r.getBackendSelectorsCount() == 0) {
                throw MetaException.invalid("backend_selectors must not be empty");
            }
            return GetCacheLocationsByBackendResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cache locations retrieved successfully"))
                    .addAllKeyLocations(query.byBackend(inst, keys, r.getBackendSelectorsList(),
                            filter(r.getLocationSpecNamesList()))).build();
        }, h -> GetCacheLocationsByBackendResponse.newBuilder().setHeader(h).build());
    }

    public GetCacheMetaResponse getCacheMeta(GetCacheMetaRequest r) {
        return call("GetCacheMeta", r.getTraceId(), Gate.LOOKUP, () -> {
            Instance inst = instance(r.getInstanceId());
            long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
            var locs = new java.util.ArrayList<CacheLocation>();
            var metas = new java.util.ArrayList<String>();
            query.meta(inst, keys, KvcmMasks.of(r.hasBlockMask() ? r.getBlockMask() : null), locs, metas);
            return GetCacheMetaResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cache meta retrieved successfully"))
                    .addAllLocations(locs).addAllMetas(metas).build();
        }, h -> GetCacheMetaResponse.newBuilder().setHeader(h).build());
    }

    public StartWriteCacheResponse startWriteCache(StartWriteCacheRequest r) {
        return call("StartWriteCache", r.getTraceId(), Gate.ALL, () -> {
            WritePath.StartOutcome o = started(r);
            return startAnswer(r, o).addAllLocations(o.locations()).build();
        }, h -> StartWriteCacheResponse.newBuilder().setHeader(h).build());
    }

    /**
     * StartWriteCache answered as proto3 JSON bytes, its locations written straight from the index words (the
     * HTTP path; byte-identical to printing {@link #startWriteCache}'s message, without building one message per
     * block and printing it by reflection).
     */
    public byte[] startWriteCacheJson(StartWriteCacheRequest r) {
        Object out = call("StartWriteCache", r.getTraceId(), Gate.ALL, () -> {
            WritePath.StartOutcome o = started(r);
            byte[] json = startJson(startAnswer(r, o), o);
            return json != null ? json : ProtoJson.print(startAnswer(r, o).addAllLocations(o.locations()));
        }, h -> StartWriteCacheResponse.newBuilder().setHeader(h).build());
        return out instanceof byte[] b ? b : ProtoJson.print((StartWriteCacheResponse) out);
    }

    /**
     * {@code answer} (no locations yet) printed, with {@code o}'s locations written after it from their words; null
     * when the printed answer does not end in the empty locations array this expects.
     */
    static byte[] startJson(StartWriteCacheResponse.Builder answer, WritePath.StartOutcome o) {
        // locations (field 4) print last, as an empty array here: keep what precedes it, then write the array
        // straight from the words
        byte[] before = ProtoJson.print(answer);
        int keep = before.length - NO_LOCATIONS.length;
        if (keep < 0 || !java.util.Arrays.equals(before, keep, before.length, NO_LOCATIONS, 0, NO_LOCATIONS.length)) {
            return null; // not the shape expected
        }
        byte[] head = java.util.Arrays.copyOf(before, keep + LOCATIONS_KEY.length);
        System.arraycopy(LOCATIONS_KEY, 0, head, keep, LOCATIONS_KEY.length);
        return o.render(new JsonLocations(null, o.count(), head)).finishObject();
    }

    private static final byte[] NO_LOCATIONS = ",\"locations\":[]}".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private WritePath.StartOutcome started(StartWriteCacheRequest r) {
        Instance inst = instance(r.getInstanceId());
        faultCheck("StartWriteCache", r.getTraceId());
        long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
        WritePath.StartOutcome o = write.start(inst, keys, r.getLocationSpecGroupNamesList(),
                r.getWriteTimeoutSeconds(), r.getMinReplicaCount());
        counted(inst, "write_started", o.count());
        CacheEvents ev = events.get();
        if (ev.enabled()) {
            ev.offer(new CacheEvent(CacheEvent.START_WRITE_CACHE, inst.id, CacheEvents.nowMicros(), null, keys,
                    null, null, o.count(), o.count() * inst.bytesPerKey, null, o.sessionId()));
        }
        return o;
    }

    /** The answer without its locations. */
    private static StartWriteCacheResponse.Builder startAnswer(StartWriteCacheRequest r, WritePath.StartOutcome o) {
        return StartWriteCacheResponse.newBuilder().setHeader(ok(r.getTraceId(), "Write cache session started successfully"))
                .setWriteSessionId(o.sessionId()).setBlockMask(KvcmMasks.proto(o.mask()));
    }

    public CommonResponse finishWriteCache(FinishWriteCacheRequest r) {
        return call("FinishWriteCache", r.getTraceId(), Gate.ALL, () -> {
            Instance inst = instance(r.getInstanceId());
            faultCheck("FinishWriteCache", r.getTraceId());
            if (r.getWriteSessionId().isEmpty()) {
                throw MetaException.invalid("write_session_id is required");
            }
            if (!r.hasSuccessBlocks()) {
                throw MetaException.invalid("success_blocks is required");
            }
            int served = write.finish(inst, r.getWriteSessionId(), KvcmMasks.of(r.getSuccessBlocks()), sessions);
            counted(inst, "write_served", served);
            stats.written(inst, served);
            CacheEvents ev = events.get();
            if (ev.enabled()) {
                ev.offer(new CacheEvent(CacheEvent.FINISH_WRITE_CACHE, inst.id, CacheEvents.nowMicros(), null, null,
                        maskOf(true, r.getSuccessBlocks()), null, served, served * inst.bytesPerKey, null,
                        r.getWriteSessionId()));
            }
            return CommonResponse.newBuilder().setHeader(ok(r.getTraceId(), "Write cache session finished successfully"))
                    .build();
        }, h -> CommonResponse.newBuilder().setHeader(h).build());
    }

    public CommonResponse removeCache(RemoveCacheRequest r) {
        return call("RemoveCache", r.getTraceId(), Gate.ALL, () -> {
            Instance inst = instance(r.getInstanceId());
            long[] keys = keys(inst, r.getBlockKeysList(), r.getTokenIdsList());
            deletions.remove(inst, keys, KvcmMasks.of(r.hasBlockMask() ? r.getBlockMask() : null));
            CacheEvents ev = events.get();
            if (ev.enabled()) {
                ev.offer(new CacheEvent(CacheEvent.REMOVE, inst.id, CacheEvents.nowMicros(), null, keys,
                        maskOf(r.hasBlockMask(), r.getBlockMask()), null, null, null, "remove_cache", null));
            }
            return CommonResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cache removed successfully")).build();
        }, h -> CommonResponse.newBuilder().setHeader(h).build());
    }

    public CommonResponse trimCache(TrimCacheRequest r) {
        return call("TrimCache", r.getTraceId(), Gate.ALL, () -> {
            Instance inst = instance(r.getInstanceId());
            if (r.getStrategy() == TrimStrategy.TS_UNSPECIFIED || r.getStrategy() == TrimStrategy.UNRECOGNIZED) {
                throw MetaException.invalid("strategy is required: TS_REMOVE_ALL_CACHE, TS_REMOVE_ALL_META or TS_TIMESTAMP");
            }
            deletions.trim(inst, trim(r.getStrategy()), r.getBeginTimestamp(), r.getEndTimestamp());
            return CommonResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cache trimmed successfully")).build();
        }, h -> CommonResponse.newBuilder().setHeader(h).build());
    }

    /**
     * GetClusterInfo while the plane starts: OK with no leader endpoint (§B.1: any node answers OK as soon as its
     * server is up; clients retry until an endpoint is known).
     */
    public static GetClusterInfoResponse clusterInfoWhileStarting(String nodeId, GetClusterInfoRequest r) {
        return GetClusterInfoResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cluster info retrieved (starting)"))
                .setSelfNodeId(nodeId == null ? "" : nodeId).build();
    }

    public GetClusterInfoResponse getClusterInfo(GetClusterInfoRequest r) {
        // any node answers, leader or not, with no instance pre-check (§B.1)
        return call("GetClusterInfo", r.getTraceId(), Gate.NONE, () -> {
            var b = GetClusterInfoResponse.newBuilder().setHeader(ok(r.getTraceId(), "Cluster info retrieved"))
                    .setSelfNodeId(node.nodeId());
            if (leader.getAsBoolean()) {
                b.setLeaderNodeId(node.nodeId()).setLeaderEndpoint(MetaNodeEndpoint.newBuilder()
                        .setNodeId(node.nodeId()).setHost(node.host()).setMetaRpcPort(node.rpcPort())
                        .setMetaHttpPort(node.httpPort()));
            }
            return b.build();
        }, h -> GetClusterInfoResponse.newBuilder().setHeader(h).build());
    }
}
