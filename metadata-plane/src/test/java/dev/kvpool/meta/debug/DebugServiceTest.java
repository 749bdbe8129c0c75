package dev.kvpool.meta.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.DebugService;
import dev.kvpool.api.proto.debug.FaultTriggerStrategy;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.api.proto.debug.RemoveFaultRequest;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * KVCM's DebugService enabled (kvcm-compat §3.16, §5.9 items 116–118): its HTTP listener on the meta HTTP port + 3000
 * and its gRPC service on the meta gRPC port, and injected faults really failing meta calls over both transports
 * without doing their work.
 */
@QuarkusTest
@TestProfile(DebugProfile.class)
class DebugServiceTest extends KvcmTestBase {
    @GrpcClient("debug")
    DebugService debug;

    @Inject
    MeterRegistry meters;

    @AfterEach
    void clear() throws Exception {
        assertEquals("OK", code(DebugHttp.post("clearFaults", "{}")));
    }

    private static JsonNode json(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r::body);
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
        return MetaApi.tree(r.body());
    }

    private static String code(HttpResponse<String> r) {
        JsonNode n = json(r);
        assertEquals("", n.path("header").path("request_id").asText("x"), "debug RPCs leave request_id empty");
        return n.path("header").path("status").path("code").asText();
    }

    private dev.kvpool.api.proto.debug.ErrorCode grpc(dev.kvpool.api.proto.debug.CommonResponse r) {
        assertEquals("", r.getHeader().getRequestId());
        return r.getHeader().getStatus().getCode();
    }

    private dev.kvpool.api.proto.debug.CommonResponse inject(InjectFaultRequest r) {
        return debug.injectFault(r).await().atMost(Duration.ofSeconds(30));
    }

    private double counter(String name, String tag, String value) {
        Counter c = meters.find(name).tag(tag, value).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void httpSequence() throws Exception {
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("injectFault", "{}")), "empty api_name");
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("injectFault",
                "{\"api_name\":\"StartWriteCache\",\"fault_trigger_strategy\":7}")), "not a FaultTriggerStrategy");
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("injectFault",
                "{\"api_name\":\"StartWriteCache\",\"fault_type\":2}")), "not a FaultType");
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("injectFault",
                "{\"api_name\":\"" + "S".repeat(FaultTable.MAX_API_NAME + 1) + "\"}")), "api_name too long");
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("removeFault", "{\"api_name\":\"StartWriteCache\"}")),
                "removing a fault that is not there (§5.9 item 118)");
        assertEquals("INVALID_ARGUMENT", code(DebugHttp.post("removeFault", "{}")), "empty api_name");
        JsonNode ok = json(DebugHttp.post("injectFault",
                "{\"api_name\":\"StartWriteCache\",\"fault_type\":\"FT_INTERNAL_ERROR\",\"fault_trigger_strategy\":\"ALWAYS\"}"));
        assertEquals("OK", ok.path("header").path("status").path("code").asText());
        assertEquals("OK", code(DebugHttp.post("injectFault",
                "{\"apiName\":\"GetCacheLocation\",\"fault_trigger_strategy\":1,\"trigger_at_call\":2}")));
        assertEquals(2, FaultTable.PROCESS.snapshot().size());
        assertEquals("OK", code(DebugHttp.post("removeFault", "{\"api_name\":\"GetCacheLocation\"}")));
        assertEquals(java.util.Set.of("StartWriteCache"), FaultTable.PROCESS.snapshot().keySet());
        assertEquals("OK", code(DebugHttp.post("clearFaults", "{}")));
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty());
        assertEquals(400, DebugHttp.post("clearFaults", "").statusCode(), "no body is not JSON, as on the meta port");

        // transport rules of §1.3/§1.5 on this listener too
        HttpResponse<String> bad = DebugHttp.post("injectFault", "{\"api_name\":");
        assertEquals(400, bad.statusCode());
        assertEquals("{}", bad.body());
        assertEquals(400, DebugHttp.post("injectFault", "[1]").statusCode());
        assertEquals(404, DebugHttp.post("getCacheLocation", "{}").statusCode(), "meta routes are not served here");
        assertEquals(404, DebugHttp.post("nothing", "{}").statusCode());
        int get = DebugHttp.send("GET", "clearFaults", null, null).statusCode();
        assertTrue(get == 404 || get == 405, "GET answered " + get);
        assertEquals(413, DebugHttp.post("injectFault", "{\"api_name\":\"" + "x".repeat(100_000) + "\"}").statusCode());
    }

    @Test
    void grpcSequence() {
        var bad = dev.kvpool.api.proto.debug.ErrorCode.INVALID_ARGUMENT;
        var ok = dev.kvpool.api.proto.debug.ErrorCode.OK;
        assertEquals(bad, grpc(inject(InjectFaultRequest.getDefaultInstance())));
        assertEquals(bad, grpc(inject(InjectFaultRequest.newBuilder().setApiName("FinishWriteCache")
                .setFaultTriggerStrategyValue(9).build())));
        assertEquals(bad, grpc(inject(InjectFaultRequest.newBuilder().setApiName("FinishWriteCache")
                .setFaultTypeValue(1).build())));
        assertEquals(bad, grpc(debug.removeFault(RemoveFaultRequest.newBuilder().setApiName("FinishWriteCache").build())
                .await().atMost(Duration.ofSeconds(30))));
        assertEquals(ok, grpc(inject(InjectFaultRequest.newBuilder().setApiName("FinishWriteCache").build())));
        // the HTTP and gRPC services share one process-global table
        assertEquals(java.util.Set.of("FinishWriteCache"), FaultTable.PROCESS.snapshot().keySet());
        assertEquals(ok, grpc(debug.removeFault(RemoveFaultRequest.newBuilder().setApiName("FinishWriteCache").build())
                .await().atMost(Duration.ofSeconds(30))));
        assertEquals(ok, grpc(inject(InjectFaultRequest.newBuilder().setApiName("StartWriteCache").build())));
        assertEquals(ok, grpc(debug.clearFaults(ClearFaultsRequest.getDefaultInstance()).await()
                .atMost(Duration.ofSeconds(30))));
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty());
    }

    /** §5.9 item 116, with the work checked: no session opened, no block written, counted as fired. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void startWriteAlwaysFailsAndDoesNoWork(Transport t) throws Exception {
        MetaApi a = api(t);
        String id = newInstance(a, "fault-start");
        long[] k = rndKeys(3);
        double fired = counter("kvpool.meta.debug.faults.fired", "api", "StartWriteCache");
        assertEquals("OK", code(DebugHttp.post("injectFault",
                "{\"api_name\":\"StartWriteCache\",\"fault_trigger_strategy\":\"ALWAYS\"}")));
        for (int i = 0; i < 3; i++) {
            StartWriteCacheResponse r = a.start(startReq(id, k).build());
            assertCode(ErrorCode.INTERNAL_ERROR, r);
            assertEquals("StartWriteCache fail due to fault injection", r.getHeader().getStatus().getMessage());
            assertEquals("", r.getWriteSessionId());
            assertEquals(0, r.getLocationsCount());
        }
        // after the instance pre-check (unknown instance: 8), before field validation (no keys: 3, not 5)
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.start(startReq("no-such-instance", k).build()));
        assertCode(ErrorCode.INTERNAL_ERROR, a.start(StartWriteCacheRequest.newBuilder().setTraceId(trace())
                .setInstanceId(id).build()));
        // other RPCs are untouched
        assertOk(a.location(locReq(id, QueryType.QT_BATCH_GET, k).build()));
        assertEquals(0, counter("kvpool.meta.blocks.write_started", "instance", id), "no write session was opened");
        assertEquals(fired + 4, counter("kvpool.meta.debug.faults.fired", "api", "StartWriteCache"));

        assertEquals("OK", code(DebugHttp.post("clearFaults", "{}")));
        // nothing of the failed calls exists: the keys are all new, and write normally now
        StartWriteCacheResponse s = start(a, id, k);
        assertEquals(offset(0), s.getBlockMask());
        assertEquals(3, s.getLocationsCount());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true, true)));
        assertEquals(3, prefix(a, id, k).size());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void finishWriteFailsAndLeavesTheSessionOpen(Transport t) throws Exception {
        MetaApi a = api(t);
        String id = newInstance(a, "fault-finish");
        long[] k = rndKeys(2);
        StartWriteCacheResponse s = start(a, id, k);
        assertEquals("OK", code(DebugHttp.post("injectFault", "{\"api_name\":\"FinishWriteCache\"}")));
        CommonResponse f = finish(a, id, s.getWriteSessionId(), bools(true, true));
        assertCode(ErrorCode.INTERNAL_ERROR, f);
        assertEquals("FinishWriteCache fail due to fault injection", f.getHeader().getStatus().getMessage());
        // before field validation: a request missing success_blocks fails by the fault too
        assertCode(ErrorCode.INTERNAL_ERROR, a.finish(FinishWriteCacheRequest.newBuilder().setTraceId(trace())
                .setInstanceId(id).build()));
        assertEquals(0, counter("kvpool.meta.blocks.write_served", "instance", id));
        assertEquals(java.util.List.of("CLS_WRITING", "CLS_WRITING"), statuses(a, id, k),
                "the blocks are still being written: the failed finish served nothing");

        assertEquals("OK", code(DebugHttp.post("removeFault", "{\"api_name\":\"FinishWriteCache\"}")));
        // the session the failed call named is still open: finishing it now serves its blocks
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true)));
        assertEquals(2, prefix(a, id, k).size());
    }

    /** §5.9 item 117 for GetCacheLocation: ONCE at call 3 fails only trace ids ending in _3. */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void onceFailsOnlyTheMatchingCall(Transport t) throws Exception {
        MetaApi a = api(t);
        String id = newInstance(a, "fault-once");
        long[] k = rndKeys(2);
        write(a, id, k);
        assertEquals("OK", code(DebugHttp.post("injectFault",
                "{\"api_name\":\"GetCacheLocation\",\"fault_trigger_strategy\":\"ONCE\",\"trigger_at_call\":3}")));
        double queried = counter("kvpool.meta.blocks.queried", "instance", id);
        for (String trace : new String[]{"req_1", "req_2", "req3", "req_3_x", "req_30"}) {
            GetCacheLocationResponse r = a.location(locReq(id, QueryType.QT_PREFIX_MATCH, k).setTraceId(trace)
                    .setBlockMask(offset(0)).build());
            assertOk(r);
            assertEquals(2, r.getLocationsCount());
        }
        for (String trace : new String[]{"req_3", "vllm_x_3"}) {
            GetCacheLocationResponse r = a.location(locReq(id, QueryType.QT_PREFIX_MATCH, k).setTraceId(trace)
                    .setBlockMask(offset(0)).build());
            assertCode(ErrorCode.INTERNAL_ERROR, r);
            assertEquals("GetCacheLocation fail due to fault injection", r.getHeader().getStatus().getMessage());
            assertEquals(0, r.getLocationsCount());
        }
        assertEquals(queried + 5 * 2, counter("kvpool.meta.blocks.queried", "instance", id),
                "the failed lookups read nothing");
        // StartWriteCache is not faulted by a GetCacheLocation fault
        StartWriteCacheResponse s = a.start(startReq(id, rndKeys(1)).setTraceId("w_3").build());
        assertOk(s);
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true)));
    }

    @Test
    void metaRoutesStillAnswerAndTheJsonOfAFailureIsComplete() throws Exception {
        MetaApi a = api(Transport.HTTP);
        String id = newInstance(a, "fault-json");
        assertEquals("OK", code(DebugHttp.post("injectFault", "{\"api_name\":\"GetCacheLocation\"}")));
        String body = MetaApi.post("getCacheLocation", ProtoJson.printToString(locReq(id, QueryType.QT_BATCH_GET,
                rndKeys(1)).build()));
        JsonNode n = MetaApi.tree(body);
        assertEquals("INTERNAL_ERROR", n.path("header").path("status").path("code").asText());
        assertTrue(n.path("locations").isArray(), "§5.1 item 12: the error response still prints locations");
        assertTrue(meters.find("kvpool.meta.debug.faults.injected").counter().count() >= 1);
    }
}
