package dev.kvpool.meta.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.QuotaTestProfile;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Quota accounting under extreme declared sizes and counts (docs/security.md, "Limits"): a size or count beyond the
 * limits is refused at registration naming the field; at the limits, a write larger than the quota is refused and
 * nothing is counted; no usage ever goes negative or wraps.
 */
@QuarkusTest
@TestProfile(QuotaTestProfile.class)
class QuotaLimitsTest extends KvcmTestBase {

    private static Status register(MetaApi a, RegisterInstanceRequest r) {
        return a.register(r).getHeader().getStatus();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void sizesAndCountsBeyondTheLimitsAreRefusedNamingTheField(Transport t) {
        MetaApi a = api(t);
        for (long size : new long[] {Limits.MAX_SPEC_BYTES + 1, Long.MAX_VALUE, -1, Long.MIN_VALUE}) {
            Status s = register(a, reg(uid("big"), 16, "tp0", size).setInstanceGroup("exact").build());
            assertEquals(ErrorCode.INVALID_ARGUMENT, s.getCode(), size + ": " + s);
            assertTrue(s.getMessage().startsWith("location_spec_infos[0].size"), s.getMessage());
        }
        RegisterInstanceRequest.Builder many = reg(uid("many"), 16, "tp0", 64).setInstanceGroup("exact");
        for (int i = 1; i <= Limits.MAX_SPECS; i++) {
            many.addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp" + i).setSize(64));
        }
        Status s = register(a, many.build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, s.getCode(), s.toString());
        assertTrue(s.getMessage().contains("at most " + Limits.MAX_SPECS), s.getMessage());
        s = register(a, reg(uid("neg"), -16, "tp0", 64).setInstanceGroup("exact").build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, s.getCode(), s.toString());
        assertTrue(s.getMessage().startsWith("block_size"), s.getMessage());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void theLargestDeclaredSizesNeverOverflowTheQuota(Transport t) {
        MetaApi a = api(t);
        // 1,024 specs of 1 GiB: 2^40 bytes a block, the most a registration can declare
        String id = uid("huge");
        RegisterInstanceRequest.Builder r = reg(id, 16, "tp0", Limits.MAX_SPEC_BYTES).setInstanceGroup("exact");
        for (int i = 1; i < Limits.MAX_SPECS; i++) {
            r.addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp" + i).setSize(Limits.MAX_SPEC_BYTES));
        }
        assertEquals(ErrorCode.OK, register(a, r.build()).getCode());
        long before = runtime.ledger().usage("exact").total();
        long driftBefore = runtime.ledger().drift().events();
        // the most keys a call may carry: 2^20 × 2^40 = 2^60 bytes asked of an 8,000-byte quota
        List<Long> keys = new ArrayList<>();
        for (long k = 1; k <= Limits.MAX_KEYS_PER_CALL; k++) {
            keys.add(k * 7919);
        }
        StartWriteCacheResponse w = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addAllBlockKeys(keys).setWriteTimeoutSeconds(30).build());
        assertEquals(ErrorCode.REACH_MAX_ENTITY_CAPACITY, w.getHeader().getStatus().getCode(), w.getHeader().toString());
        assertEquals(before, runtime.ledger().usage("exact").total(), "nothing reserved, nothing wrapped");
        keys.add(1L);
        w = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id).addAllBlockKeys(keys)
                .setWriteTimeoutSeconds(30).build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, w.getHeader().getStatus().getCode(), "one key past the limit");
        assertTrue(w.getHeader().getStatus().getMessage().startsWith("block_keys"), w.getHeader().toString());
        assertEquals(before, runtime.ledger().usage("exact").total());
        assertTrue(runtime.ledger().usage("exact").total() >= 0);
        assertEquals(driftBefore, runtime.ledger().drift().events());
    }

    @org.junit.jupiter.api.Test
    void theUsageAuditFindsWhatTheLedgerHoldsThatNoBlockAccountsFor() {
        MetaApi a = api(Transport.GRPC);
        String id = registered(a, reg(uid("audit"), 16, "tp0", 100).setInstanceGroup("wide"));
        StartWriteCacheResponse w = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addBlockKeys(rndKey()).addBlockKeys(rndKey()).setWriteTimeoutSeconds(30).build());
        a.finish(FinishWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .setWriteSessionId(w.getWriteSessionId()).setSuccessBlocks(BlockMask.newBuilder().setOffset(2)).build());
        assertEquals(0L, runtime.recovery().auditUsage("wide").totalDifference(), "the books balance");
        runtime.ledger().add("wide", 1234, null, 0); // usage no block accounts for
        try {
            assertEquals(1234L, runtime.recovery().auditUsage("wide").totalDifference());
        } finally {
            runtime.ledger().add("wide", -1234, null, 0);
        }
        StartWriteCacheResponse open = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addBlockKeys(rndKey()).setWriteTimeoutSeconds(30).build());
        assertEquals(null, runtime.recovery().auditUsage("wide").totalDifference(),
                "a write in flight: nothing compared");
        a.finish(FinishWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .setWriteSessionId(open.getWriteSessionId()).setSuccessBlocks(BlockMask.newBuilder().setOffset(0)).build());
        // the group is shared with QuotaTest, which counts its usage from zero: leave none behind
        a.trim(TrimCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .setStrategy(TrimStrategy.TS_REMOVE_ALL_CACHE).build());
        runtime.deletions().drain();
        assertEquals(0L, runtime.recovery().auditUsage("wide").totalDifference());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void aHugeFinishOffsetIsRefusedWithoutAllocatingIt(Transport t) {
        MetaApi a = api(t);
        String id = registered(a, reg(uid("off"), 16, "tp0", 100).setInstanceGroup("wide"));
        StartWriteCacheResponse w = a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .addBlockKeys(rndKey()).addBlockKeys(rndKey()).setWriteTimeoutSeconds(30).build());
        assertEquals(ErrorCode.OK, w.getHeader().getStatus().getCode());
        long heap = dev.kvpool.testing.hostile.RawHttp.usedHeapAfterGc();
        CommonResponse f = a.finish(FinishWriteCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id)
                .setWriteSessionId(w.getWriteSessionId()).setSuccessBlocks(BlockMask.newBuilder()
                        .setOffset(Integer.MAX_VALUE)).build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, f.getHeader().getStatus().getCode(), f.toString());
        assertTrue(dev.kvpool.testing.hostile.RawHttp.usedHeapAfterGc() - heap < 256L << 20,
                "an offset of 2^31 - 1 must not become a 2 GB mask");
        assertTrue(runtime.ledger().usage("wide").total() >= 0);
    }
}
