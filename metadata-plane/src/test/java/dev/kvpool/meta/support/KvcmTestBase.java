package dev.kvpool.meta.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.runtime.MetaRuntime;
import dev.kvpool.testing.Await;
import io.quarkus.grpc.GrpcClient;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Helpers of the KVCM API suite. Instances get unique ids (the index persists across the test classes of one
 * boot); tests on shared instances use random keys.
 */
public abstract class KvcmTestBase {
    private static final AtomicLong TRACE = new AtomicLong();

    @Inject
    protected MetaRuntime runtime;

    /** The KVCM semantics the transports call, for tests that call them without a transport. */
    @Inject
    protected dev.kvpool.meta.kvcm.KvcmService kvcm;

    @GrpcClient("meta")
    protected MetaService grpc;

    protected MetaApi api(Transport t) {
        return new MetaApi(t, grpc);
    }

    public static String uid(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    public static String trace() {
        return "t" + TRACE.incrementAndGet();
    }

    /** A random key, never 0, unlikely to collide with anything another test wrote. */
    public static long rndKey() {
        long k;
        do {
            k = ThreadLocalRandom.current().nextLong();
        } while (k == 0);
        return k;
    }

    public static long[] rndKeys(int n) {
        Set<Long> seen = new HashSet<>();
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            long k;
            do {
                k = rndKey();
            } while (!seen.add(k));
            out[i] = k;
        }
        return out;
    }

    public static List<Long> list(long... v) {
        return Arrays.stream(v).boxed().toList();
    }

    // ---- requests ------------------------------------------------------------------------------------------

    /** The "default instance" of §5: group default, block_size 128, spec tp0 of 1024 bytes, test_model/FP8. */
    public static RegisterInstanceRequest.Builder reg(String id) {
        return reg(id, 128, "tp0", 1024);
    }

    /** specs as name, size, name, size, ... */
    public static RegisterInstanceRequest.Builder reg(String id, int blockSize, Object... specs) {
        RegisterInstanceRequest.Builder b = RegisterInstanceRequest.newBuilder().setTraceId(trace())
                .setInstanceGroup("default").setInstanceId(id).setBlockSize(blockSize)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("test_model").setDtype("FP8")
                        .setTpSize(1).setDpSize(1).setPpSize(1));
        for (int i = 0; i < specs.length; i += 2) {
            b.addLocationSpecInfos(LocationSpecInfo.newBuilder().setName((String) specs[i])
                    .setSize(((Number) specs[i + 1]).longValue()));
        }
        return b;
    }

    public static String registered(MetaApi a, RegisterInstanceRequest.Builder b) {
        RegisterInstanceResponse r = a.register(b.build());
        assertOk(r);
        return b.getInstanceId();
    }

    /** Registers a fresh default instance. */
    public static String newInstance(MetaApi a, String prefix) {
        return registered(a, reg(uid(prefix + "-" + a.transport.name().toLowerCase())));
    }

    public static StartWriteCacheRequest.Builder startReq(String inst, long... keys) {
        return StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(inst)
                .addAllBlockKeys(list(keys)).setWriteTimeoutSeconds(30);
    }

    public static StartWriteCacheResponse start(MetaApi a, String inst, long... keys) {
        StartWriteCacheResponse r = a.start(startReq(inst, keys).build());
        assertOk(r);
        assertFalse(r.getWriteSessionId().isEmpty(), "write_session_id");
        return r;
    }

    public static BlockMask bools(boolean... v) {
        BoolMasksType.Builder b = BoolMasksType.newBuilder();
        for (boolean x : v) {
            b.addValues(x);
        }
        return BlockMask.newBuilder().setBoolMasks(b).build();
    }

    public static BlockMask offset(int k) {
        return BlockMask.newBuilder().setOffset(k).build();
    }

    public static boolean[] filled(int n, boolean v) {
        boolean[] b = new boolean[n];
        Arrays.fill(b, v);
        return b;
    }

    public static FinishWriteCacheRequest finishReq(String inst, String session, BlockMask mask) {
        return FinishWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(inst)
                .setWriteSessionId(session).setSuccessBlocks(mask).build();
    }

    public static CommonResponse finish(MetaApi a, String inst, String session, BlockMask mask) {
        return a.finish(finishReq(inst, session, mask));
    }

    /** Start + finish with every returned location successful; returns the start response. */
    public static StartWriteCacheResponse write(MetaApi a, String inst, long... keys) {
        StartWriteCacheResponse s = start(a, inst, keys);
        assertOk(finish(a, inst, s.getWriteSessionId(), bools(filled(s.getLocationsCount(), true))));
        return s;
    }

    public static GetCacheLocationRequest.Builder locReq(String inst, QueryType t, long... keys) {
        return GetCacheLocationRequest.newBuilder().setTraceId(trace()).setInstanceId(inst).setQueryType(t)
                .addAllBlockKeys(list(keys));
    }

    public static List<CacheLocation> prefix(MetaApi a, String inst, long... keys) {
        GetCacheLocationResponse r = a.location(locReq(inst, QueryType.QT_PREFIX_MATCH, keys)
                .setBlockMask(offset(0)).build());
        assertOk(r);
        return r.getLocationsList();
    }

    public static List<CacheLocation> batch(MetaApi a, String inst, long... keys) {
        GetCacheLocationResponse r = a.location(locReq(inst, QueryType.QT_BATCH_GET, keys).build());
        assertOk(r);
        return r.getLocationsList();
    }

    public static GetCacheMetaResponse metaOf(MetaApi a, String inst, long... keys) {
        GetCacheMetaResponse r = a.meta(GetCacheMetaRequest.newBuilder().setTraceId(trace()).setInstanceId(inst)
                .addAllBlockKeys(list(keys)).build());
        assertOk(r);
        return r;
    }

    /** The CLS_* status name of each key, as GetCacheMeta reports it. */
    public static List<String> statuses(MetaApi a, String inst, long... keys) {
        List<String> out = new ArrayList<>();
        for (String m : metaOf(a, inst, keys).getMetasList()) {
            out.add(MetaApi.tree(m).path("status").asText());
        }
        return out;
    }

    /**
     * Decodes a StartWriteCache response mask into "exists" flags (§3.3): offset k = the first k exist, bools =
     * as given (missing entries false).
     */
    public static boolean[] existing(BlockMask m, int n) {
        boolean[] e = new boolean[n];
        switch (m.getInfoCase()) {
            case OFFSET -> Arrays.fill(e, 0, Math.min(n, m.getOffset()), true);
            case BOOL_MASKS -> {
                for (int i = 0; i < Math.min(n, m.getBoolMasks().getValuesCount()); i++) {
                    e[i] = m.getBoolMasks().getValues(i);
                }
            }
            default -> fail("StartWriteCache returned a block_mask with no member: " + m);
        }
        return e;
    }

    // ---- assertions ----------------------------------------------------------------------------------------

    public static CommonResponseHeader header(MessageOrBuilder m) {
        Descriptors.FieldDescriptor f = m.getDescriptorForType().findFieldByName("header");
        return (CommonResponseHeader) m.getField(f);
    }

    public static ErrorCode code(MessageOrBuilder m) {
        return header(m).getStatus().getCode();
    }

    public static void assertOk(MessageOrBuilder m) {
        assertCode(ErrorCode.OK, m);
    }

    public static void assertCode(ErrorCode expected, MessageOrBuilder m) {
        assertEquals(expected, code(m), () -> "unexpected status in " + ProtoJson.printToString(m));
    }

    public static void assertNotOk(MessageOrBuilder m) {
        assertFalse(code(m) == ErrorCode.OK, () -> "expected an error, got " + ProtoJson.printToString(m));
    }

    /** Polls until the condition holds; fails after the bound. */
    public static void await(String what, Duration bound, BooleanSupplier cond) {
        Await.until(what, bound, cond::getAsBoolean);
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
