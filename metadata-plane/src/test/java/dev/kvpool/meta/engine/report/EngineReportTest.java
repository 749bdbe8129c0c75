package dev.kvpool.meta.engine.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.engine.EngineCaches;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.runtime.MetaRuntime;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.testing.MutableClock;
import io.grpc.Metadata;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.grpc.GrpcClientUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * KVCM ReportEvent and GetHostCacheState over HTTP and gRPC: the conformance statements of
 * kvcm-engine-events.md §10 (methods c01..c14), request and item validation, bounds, JSON forms, the shared view
 * mirror, tenancy and leader gating. Time moves through an injected clock, never by sleeping.
 */
@QuarkusTest
@TestProfile(EngineReportProfile.class)
class EngineReportTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    static final Duration T = Duration.ofSeconds(60);
    static final String HEX32 = "[0-9a-f]{32}";

    enum Via { HTTP, GRPC }

    @Inject
    MetaRuntime runtime;
    @Inject
    EngineReports reports;
    @Inject
    EngineCaches caches;
    @GrpcClient("meta")
    MetaService grpc;

    /**
     * One clock for the class, only ever moved forward: the background liveness sweep runs too, and a clock that
     * jumped back between tests would make it judge one test's reporters by another test's time.
     */
    static final MutableClock CLOCK = new MutableClock(System.currentTimeMillis());
    MutableClock clock;

    @BeforeEach
    void setUp() {
        clock = CLOCK;
        reports.clock(clock);
        reports.leaderOverride(null);
        var reg = runtime.registry();
        reg.putEventReportStorage(new EventReportStorage("er_l1", false, 30_000, 300_000, 5_000, 30_000, 2_000));
        reg.putEventReportStorage(new EventReportStorage("er_l2", true, 30_000, 300_000, 5_000, 30_000, 2_000));
    }

    @AfterEach
    void tearDown() {
        reports.leaderOverride(null);
    }

    // ---- transport --------------------------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    <R extends Message> R call(Via via, String token, String rpc, Message req, Message.Builder answer) {
        if (via == Via.HTTP) {
            return (R) ProtoJson.merge(postJson(rpc, token, ProtoJson.printToString(req)), answer).build();
        }
        Metadata m = new Metadata();
        if (token != null) {
            m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
        }
        MetaService s = GrpcClientUtils.attachHeaders(grpc, m);
        return (R) switch (rpc) {
            case "reportEvent" -> s.reportEvent((ReportEventRequest) req).await().atMost(T);
            case "getHostCacheState" -> s.getHostCacheState((GetHostCacheStateRequest) req).await().atMost(T);
            case "registerInstance" -> s.registerInstance((RegisterInstanceRequest) req).await().atMost(T);
            default -> throw new IllegalArgumentException(rpc);
        };
    }

    static String postJson(String rpc, String token, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(MetaApi.base() + "/api/" + rpc)).timeout(T)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), () -> rpc + ": " + r.body());
            return r.body();
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(rpc + " failed: " + e, e);
        }
    }

    static JsonNode tree(String s) {
        try {
            return JSON.readTree(s);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + s, e);
        }
    }

    ReportEventResponse report(Via via, ReportEventRequest q) {
        return call(via, EngineReportProfile.ADMIN, "reportEvent", q, ReportEventResponse.newBuilder());
    }

    GetHostCacheStateResponse hosts(Via via, GetHostCacheStateRequest q) {
        return call(via, EngineReportProfile.ADMIN, "getHostCacheState", q, GetHostCacheStateResponse.newBuilder());
    }

    // ---- builders ---------------------------------------------------------------------------------------------

    String instance(String group) {
        return instance(group, QueryType.QT_UNSPECIFIED, false);
    }

    String instance(String group, QueryType defaultType, boolean eagle) {
        String id = "er-" + UUID.randomUUID().toString().substring(0, 8);
        RegisterInstanceRequest q = RegisterInstanceRequest.newBuilder().setTraceId("reg").setInstanceGroup(group)
                .setInstanceId(id).setBlockSize(64).setDefaultQueryType(defaultType)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("FP8").setTpSize(1)
                        .setDpSize(1).setPpSize(1).setUseEaglePop(eagle))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("s0").setSize(1024))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("s1").setSize(1024)).build();
        RegisterInstanceResponse r = call(Via.HTTP, EngineReportProfile.ADMIN, "registerInstance", q,
                RegisterInstanceResponse.newBuilder());
        assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r::toString);
        return id;
    }

    static EventItem add(String key, String medium, String... nameUri) {
        BlockAddEventParams.Builder b = BlockAddEventParams.newBuilder().setBlockKey(key).setMedium(medium);
        for (int i = 0; i < nameUri.length; i += 2) {
            b.addSpecs(LocationSpec.newBuilder().setName(nameUri[i]).setUri(nameUri[i + 1]));
        }
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_BLOCK_ADD).setBlockAdd(b).build();
    }

    static EventItem add(long key) {
        return add(Long.toString(key), "hbm", "s0", "event_report://h/hbm?size=1");
    }

    static EventItem del(String key, String medium, String... names) {
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_BLOCK_DELETE).setBlockDelete(
                BlockDeleteEventParams.newBuilder().setBlockKey(key).setMedium(medium).addAllSpecNames(List.of(names)))
                .build();
    }

    static EventItem register(String... media) {
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_NODE_REGISTER)
                .setNodeRegister(NodeRegisterEventParams.newBuilder().addAllMediums(List.of(media))).build();
    }

    static EventItem heartbeat() {
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_HEARTBEAT)
                .setHeartbeat(HeartbeatEventParams.newBuilder().putSystemStatus("engine", "test")).build();
    }

    static EventItem down() {
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_HOST_DOWN)
                .setHostDown(HostDownEventParams.getDefaultInstance()).build();
    }

    static BlockSnapshotItem item(long key) {
        return BlockSnapshotItem.newBuilder().setBlockKey(Long.toString(key)).setMedium("hbm")
                .addSpecs(LocationSpec.newBuilder().setName("s0").setUri("event_report://h/hbm?size=1")).build();
    }

    static EventItem snapshot(BlockSnapshotItem... items) {
        return EventItem.newBuilder().setEventType(ReportEventType.EVENT_BLOCK_SNAPSHOT)
                .setBlockSnapshot(BlockSnapshotEventParams.newBuilder().addAllBlocks(List.of(items))).build();
    }

    static ReportEventRequest req(String inst, String host, EventItem... events) {
        return req(inst, host, StorageType.ST_EVENT_REPORT_L1P5, events);
    }

    static ReportEventRequest req(String inst, String host, StorageType type, EventItem... events) {
        return ReportEventRequest.newBuilder().setTraceId("t").setInstanceId(inst).setHostIpPort(host)
                .setStorageType(type).addAllEvents(List.of(events)).build();
    }

    static GetHostCacheStateRequest query(String inst, long... keys) {
        GetHostCacheStateRequest.Builder b = GetHostCacheStateRequest.newBuilder().setTraceId("q").setInstanceId(inst)
                .setQueryType(QueryType.QT_PREFIX_MATCH);
        for (long k : keys) {
            b.addBlockCacheKeys(k);
        }
        return b.build();
    }

    /** host → local of a GetHostCacheState answer (must be OK). */
    Map<String, Long> local(Via via, GetHostCacheStateRequest q) {
        GetHostCacheStateResponse r = hosts(via, q);
        assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r::toString);
        Map<String, Long> out = new java.util.LinkedHashMap<>();
        r.getHostsList().forEach(h -> out.put(h.getHostIpPort(), h.getLocal()));
        return out;
    }

    static ReportEventResponse ok(ReportEventResponse r) {
        assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r::toString);
        assertEquals(0, r.getItemResultsCount(), r::toString);
        return r;
    }

    static void assertCode(ErrorCode c, ReportEventResponse r) {
        assertEquals(c, r.getHeader().getStatus().getCode(), r::toString);
    }

    static String host() {
        return "10.0." + (int) (Math.random() * 250) + "." + (int) (Math.random() * 250) + ":" + (8000 + (int) (Math.random() * 999));
    }

    // ---- conformance statements (§10) ---------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Via.class)
    void c01_emptyEventsIsANoOp(Via via) {
        String inst = instance("er-a");
        ReportEventResponse r = ok(report(via, req(inst, host())));
        assertEquals("", r.getCommittedSnapshotVersion());
        assertFalse(r.getSnapshotRequired());
        assertEquals(0, r.getRetryAfterMs());
        assertEquals(0, reports.reporters(inst), "an empty request creates no reporter");
        String json = postJson("reportEvent", EngineReportProfile.ADMIN, "{\"trace_id\":\"e\",\"instance_id\":\"" + inst
                + "\",\"host_ip_port\":\"h:1\",\"storage_type\":\"ST_EVENT_REPORT_L1P5\",\"events\":[]}");
        JsonNode n = tree(json);
        assertEquals("OK", n.path("header").path("status").path("code").asText());
        assertEquals("", n.path("committed_snapshot_version").asText());
        assertTrue(n.path("retry_after_ms").isTextual(), json);
        assertEquals("0", n.path("retry_after_ms").asText());
        assertFalse(n.path("snapshot_required").asBoolean(true));
        assertEquals(0, reports.reporters(inst));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c02_freshReporterGetsAGeneration(Via via) {
        String inst = instance("er-a"), h = host();
        ReportEventResponse r1 = ok(report(via, req(inst, h, add(1))));
        assertTrue(r1.getSnapshotRequired());
        assertTrue(r1.getCommittedSnapshotVersion().matches(HEX32), r1::toString);
        ReportEventResponse r2 = ok(report(via, req(inst, h, add(2))));
        assertFalse(r2.getSnapshotRequired());
        assertEquals(r1.getCommittedSnapshotVersion(), r2.getCommittedSnapshotVersion());
        assertEquals(Map.of(h, 2L), local(via, query(inst, 1, 2)));
        assertTrue(r1.getExtraInfo().contains("zone"), "extra_info is the group's");
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c03_inOrderLastWins(Via via) {
        String inst = instance("er-a"), h = host();
        ReportEventResponse r = ok(report(via, req(inst, h, add("7", "hbm", "s0", "rtp://a/uri1"),
                del("7", "hbm", "s0"), add("7", "hbm", "s0", "rtp://a/uri2"))));
        assertEquals(Map.of("s0", "rtp://a/uri2?s_version=" + r.getCommittedSnapshotVersion()),
                reports.storedSpecs(inst, false, h, 7, "hbm"));
        // merge by spec name: s1 added, s0 kept; DELETE of s0 then leaves s1
        ok(report(via, req(inst, h, add("7", "hbm", "s1", "rtp://a/b?x=1"))));
        assertEquals(List.of("s0", "s1"), List.copyOf(reports.storedSpecs(inst, false, h, 7, "hbm").keySet()));
        assertEquals("rtp://a/b?x=1&s_version=" + r.getCommittedSnapshotVersion(),
                reports.storedSpecs(inst, false, h, 7, "hbm").get("s1"));
        ok(report(via, req(inst, h, del("7", "hbm", "s0"), del("8", "hbm", "s0"))));
        assertEquals(List.of("s1"), List.copyOf(reports.storedSpecs(inst, false, h, 7, "hbm").keySet()));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c04_uriWithSVersionFailsOnlyItsItem(Via via) {
        String inst = instance("er-a"), h = host();
        ReportEventResponse r = report(via, req(inst, h, add(1),
                add("2", "hbm", "s0", "rtp://a/x?s_version=0123456789abcdef0123456789abcdef"), add(3)));
        assertCode(ErrorCode.INVALID_ARGUMENT, r);
        assertEquals(List.of(ErrorCode.OK, ErrorCode.INVALID_ARGUMENT, ErrorCode.OK), r.getItemResultsList());
        assertTrue(r.getHeader().getStatus().getMessage().contains("events[1]"), r::toString);
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1, 2, 3)));
        assertEquals(Map.of(h, 1L), local(via, query(inst, 3)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c05_forbiddenCombinationsChangeNothing(Via via) {
        String inst = instance("er-a"), h = host();
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, snapshot(item(1)), add(2))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, down(), heartbeat())));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, snapshot(item(1)), snapshot(item(2)))));
        assertEquals(0, reports.reporters(inst));
        assertEquals(Map.of(), local(via, query(inst, 1)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c06_blockKeyForms(Via via) {
        String inst = instance("er-a"), h = host();
        ok(report(via, req(inst, h, add("18446744073709551615", "hbm", "s0", "rtp://a/1"))));
        assertEquals(Map.of(h, 1L), local(via, query(inst, -1)));
        ok(report(via, req(inst, h, del("-1", "hbm", "s0"))));
        assertEquals(Map.of(), local(via, query(inst, -1)));
        ReportEventResponse r = report(via, req(inst, h, add("+1", "hbm", "s0", "rtp://a/1"),
                add(" 1", "hbm", "s0", "rtp://a/1"), add("18446744073709551616", "hbm", "s0", "rtp://a/1"),
                add("01", "hbm", "s0", "rtp://a/1")));
        assertEquals(List.of(ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT,
                ErrorCode.OK), r.getItemResultsList());
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c07_snapshotRateLimit(Via via) {
        String inst = instance("er-a"), h = host();
        ok(report(via, req(inst, h, register("hbm"))));
        ReportEventResponse s1 = ok(report(via, req(inst, h, snapshot(item(1)))));
        assertTrue(s1.getCommittedSnapshotVersion().matches(HEX32));
        assertFalse(s1.getSnapshotRequired());
        clock.advance(10_000);
        ReportEventResponse s2 = report(via, req(inst, h, snapshot(item(2))));
        assertCode(ErrorCode.SNAPSHOT_RATE_LIMITED, s2);
        assertEquals(List.of(ErrorCode.SNAPSHOT_RATE_LIMITED), s2.getItemResultsList());
        assertTrue(s2.getRetryAfterMs() > 0 && s2.getRetryAfterMs() <= 30_000, s2::toString);
        assertEquals(20_000, s2.getRetryAfterMs());
        assertEquals(s1.getCommittedSnapshotVersion(), s2.getCommittedSnapshotVersion(), "generation unchanged");
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1)), "the limited snapshot changed nothing");
        ok(report(via, req(inst, h, heartbeat())));
        clock.advance(s2.getRetryAfterMs());
        ok(report(via, req(inst, h, heartbeat())));
        ReportEventResponse s3 = ok(report(via, req(inst, h, snapshot(item(2)))));
        assertNotEquals(s1.getCommittedSnapshotVersion(), s3.getCommittedSnapshotVersion());
        assertEquals(0, s3.getRetryAfterMs());
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c08_snapshotHidesUnlistedBlocksAtOnce(Via via) {
        String inst = instance("er-a"), h = host();
        ok(report(via, req(inst, h, add(1), add(2), add(3))));
        assertEquals(Map.of(h, 3L), local(via, query(inst, 1, 2, 3)));
        ReportEventResponse s = ok(report(via, req(inst, h, snapshot(item(1), item(3)))));
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1, 2, 3)));
        assertEquals(Map.of(), local(via, query(inst, 2)));
        assertEquals(Map.of(h, 1L), local(via, query(inst, 3)));
        assertEquals("event_report://h/hbm?size=1&s_version=" + s.getCommittedSnapshotVersion(),
                reports.storedSpecs(inst, false, h, 3, "hbm").get("s0"));
        // the shared view follows: the snapshot replaced the pod's blocks
        assertTrue(caches.view().holds(inst, h, "hbm", 3));
        assertFalse(caches.view().holds(inst, h, "hbm", 2));
        // an empty snapshot: the reporter has nothing
        clock.advance(30_000);
        ok(report(via, req(inst, h, heartbeat())));
        ok(report(via, req(inst, h, snapshot())));
        assertEquals(Map.of(), local(via, query(inst, 1)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c09_hostDownAndRegisterAgain(Via via) {
        String inst = instance("er-a"), h = host(), other = host();
        ok(report(via, req(inst, h, register("hbm"), add(1))));
        ok(report(via, req(inst, other, add(1))));
        ok(report(via, req(inst, h, down())));
        assertEquals(Map.of(other, 1L), local(via, query(inst, 1)), "HOST_DOWN hides the host at once");
        assertFalse(caches.view().holds(inst, h, "hbm", 1));
        ReportEventResponse nr = report(via, req(inst, h, add(2), register("hbm")));
        assertCode(ErrorCode.NODE_NOT_REGISTERED, nr);
        assertEquals(List.of(ErrorCode.NODE_NOT_REGISTERED, ErrorCode.OK), nr.getItemResultsList());
        assertEquals("", nr.getCommittedSnapshotVersion(), "HOST_DOWN cleared the generation");
        assertCode(ErrorCode.OK, report(via, req(inst, h, down())));
        assertCode(ErrorCode.NODE_NOT_REGISTERED, report(via, req(inst, h, heartbeat())));
        assertCode(ErrorCode.NODE_NOT_REGISTERED, report(via, req(inst, h, snapshot(item(1)))));
        ok(report(via, req(inst, h, register("hbm"))));
        ReportEventResponse again = ok(report(via, req(inst, h, add(2))));
        assertTrue(again.getSnapshotRequired());
        assertTrue(local(via, query(inst, 2)).containsKey(h));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c10_heartbeatTimeoutHidesAndHeartbeatRestores(Via via) {
        String inst = instance("er-a"), h = host();
        ReportEventResponse first = ok(report(via, req(inst, h, register("hbm"), add(1))));
        clock.advance(30_001);
        assertEquals(Map.of(), local(via, query(inst, 1)), "silent past heartbeat_timeout_ms: hidden");
        reports.sweep(true);
        assertEquals(Map.of(), local(via, query(inst, 1)));
        ReportEventResponse hb = ok(report(via, req(inst, h, heartbeat())));
        assertEquals(first.getCommittedSnapshotVersion(), hb.getCommittedSnapshotVersion());
        assertFalse(hb.getSnapshotRequired());
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1)));
        // past the grace: tombstoned, metadata collected, mutations refused until REGISTER
        clock.advance(330_001);
        reports.sweep(true);
        assertCode(ErrorCode.NODE_NOT_REGISTERED, report(via, req(inst, h, add(2))));
        assertEquals(Map.of(), reports.storedSpecs(inst, false, h, 1, "hbm"), "GC removed the metadata");
        ok(report(via, req(inst, h, register("hbm"))));
        assertEquals(Map.of(), local(via, query(inst, 1)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c11_afterRestartHistoryIsVisibleSoftly(Via via) {
        String inst = instance("er-a"), h = host();
        ok(report(via, req(inst, h, register("hbm"))));
        ok(report(via, req(inst, h, snapshot(item(1), item(2)))));
        ok(report(via, req(inst, h, add(3))));
        reports.forgetReporters(); // what a restart loses; the records stay in the index store
        assertEquals(Map.of(), local(via, query(inst, 1, 2, 3)), "hidden until the reporter reports again");
        ReportEventResponse hb = ok(report(via, req(inst, h, heartbeat())));
        assertTrue(hb.getSnapshotRequired());
        assertEquals("", hb.getCommittedSnapshotVersion());
        assertEquals(Map.of(h, 3L), local(via, query(inst, 1, 2, 3)), "soft: every well-formed historical spec");
        assertTrue(caches.view().holds(inst, h, "hbm", 2), "persisted blocks rejoin the shared view");
        // a new snapshot makes it strict again with only what it lists
        ok(report(via, req(inst, h, snapshot(item(2)))));
        assertEquals(Map.of(), local(via, query(inst, 1)));
        assertEquals(Map.of(h, 1L), local(via, query(inst, 2, 3)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c12_contiguousPrefixFromTheFirstKey(Via via) {
        String inst = instance("er-a"), a = "10.0.0.2:1", b = "10.0.0.1:1", c = "10.0.0.3:1";
        ok(report(via, req(inst, a, add(11), add(12), add(14))));
        ok(report(via, req(inst, b, add(11))));
        ok(report(via, req(inst, c, add(12), add(13), add(14))));
        GetHostCacheStateResponse r = hosts(via, query(inst, 11, 12, 13, 14));
        assertEquals(List.of(b, a), r.getHostsList().stream().map(HostCacheMatch::getHostIpPort).toList(),
                "hosts holding the first key, in host order");
        assertEquals(List.of(1L, 2L), r.getHostsList().stream().map(HostCacheMatch::getLocal).toList());
        r.getHostsList().forEach(x -> assertEquals(0, x.getP2P1Fetch() + x.getP2P1TotalMatch()));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void c13_followerAnswersServerNotLeader(Via via) {
        String inst = instance("er-a"), h = host();
        ok(report(via, req(inst, h, add(1))));
        reports.leaderOverride(() -> false);
        assertCode(ErrorCode.SERVER_NOT_LEADER, report(via, req(inst, h, add(2))));
        assertCode(ErrorCode.SERVER_NOT_LEADER, report(via, req("no-such-instance", "", add(2))));
        assertEquals(ErrorCode.SERVER_NOT_LEADER, hosts(via, query(inst, 1)).getHeader().getStatus().getCode());
        reports.leaderOverride(null);
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1, 2)), "the refused ADD did nothing");
    }

    /** §7.1 replayed with a plain HTTP client, as RTP-LLM's KVCMPublisher sends it (JSON text, signed keys). */
    @Test
    void c14_rtpLlmPublisherSequence() {
        String inst = "rtp-" + UUID.randomUUID().toString().substring(0, 8), host = "10.1.2.3:26000";
        String tok = EngineReportProfile.ADMIN;
        JsonNode r = tree(postJson("registerInstance", tok, """
                {"trace_id":"rtp-kv-event-0-register-1","instance_group":"er-a","instance_id":"%s","block_size":64,
                 "model_deployment":{"model_name":"qwen","dtype":"bf16","use_mla":false,"tp_size":1,"dp_size":1,"pp_size":1},
                 "location_spec_infos":[{"name":"rtp_llm_hbm_64","size":2097152}],
                 "location_spec_groups":[{"name":"default","spec_names":["rtp_llm_hbm_64"]}]}""".formatted(inst)));
        assertEquals("OK", r.path("header").path("status").path("code").asText(), r::toString);
        String head = "{\"instance_id\":\"" + inst + "\",\"host_ip_port\":\"" + host
                + "\",\"storage_type\":\"ST_EVENT_REPORT_L1P5\",";
        JsonNode reg = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-register-2\","
                + "\"events\":[{\"event_type\":\"EVENT_NODE_REGISTER\",\"node_register\":{\"mediums\":[\"hbm\"]}}]}"));
        assertEquals("OK", reg.path("header").path("status").path("code").asText());
        assertTrue(reg.path("snapshot_required").asBoolean(), reg::toString);
        String uri = "event_report://" + host + "/hbm?size=2097152";
        JsonNode add = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-delta-3\",\"events\":["
                + "{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"-7046029254386353131\",\"medium\":\"hbm\","
                + "\"specs\":[{\"name\":\"rtp_llm_hbm_64\",\"uri\":\"" + uri + "\"}]}}]}"));
        assertEquals("OK", add.path("header").path("status").path("code").asText(), add::toString);
        JsonNode snap = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-snapshot-4\",\"events\":["
                + "{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"blocks\":["
                + "{\"block_key\":\"-7046029254386353131\",\"medium\":\"hbm\",\"specs\":[{\"name\":\"rtp_llm_hbm_64\",\"uri\":\"" + uri + "\"}]},"
                + "{\"block_key\":\"42\",\"medium\":\"hbm\",\"specs\":[{\"name\":\"rtp_llm_hbm_64\",\"uri\":\"" + uri + "\"}]}]}}]}"));
        assertEquals("OK", snap.path("header").path("status").path("code").asText(), snap::toString);
        assertTrue(snap.path("committed_snapshot_version").asText().matches(HEX32), snap::toString);
        assertFalse(snap.path("snapshot_required").asBoolean(true));
        JsonNode q = tree(postJson("getHostCacheState", tok, "{\"trace_id\":\"q\",\"instance_id\":\"" + inst
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_cache_keys\":[-7046029254386353131,\"42\"],\"medium\":[]}"));
        assertEquals(host, q.path("hosts").get(0).path("host_ip_port").asText(), q::toString);
        assertEquals("2", q.path("hosts").get(0).path("local").asText(), "local is an int64 string");
        JsonNode hb = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-heartbeat-5\",\"events\":["
                + "{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{\"system_status\":{\"engine\":\"rtp-llm\",\"dp_rank\":\"0\"}}}]}"));
        assertEquals("OK", hb.path("header").path("status").path("code").asText());
        JsonNode del = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-delta-6\",\"events\":["
                + "{\"event_type\":\"EVENT_BLOCK_DELETE\",\"block_delete\":{\"block_key\":\"42\",\"medium\":\"hbm\","
                + "\"spec_names\":[\"rtp_llm_hbm_64\"]}}]}"));
        assertEquals("OK", del.path("header").path("status").path("code").asText());
        q = tree(postJson("getHostCacheState", tok, "{\"trace_id\":\"q\",\"instance_id\":\"" + inst
                + "\",\"block_cache_keys\":[\"-7046029254386353131\",42]}"));
        assertEquals("1", q.path("hosts").get(0).path("local").asText(), "the delete dropped the count: " + q);
        JsonNode bye = tree(postJson("reportEvent", tok, head + "\"trace_id\":\"rtp-kv-event-0-down-7\",\"events\":["
                + "{\"event_type\":\"EVENT_HOST_DOWN\",\"host_down\":{}}]}"));
        assertEquals("OK", bye.path("header").path("status").path("code").asText());
        q = tree(postJson("getHostCacheState", tok, "{\"trace_id\":\"q\",\"instance_id\":\"" + inst
                + "\",\"block_cache_keys\":[\"-7046029254386353131\"]}"));
        assertEquals(0, q.path("hosts").size(), q::toString);
    }

    // ---- validation, JSON forms, bounds -------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(Via.class)
    void requestLevelValidation(Via via) {
        String inst = instance("er-a"), instB = instance("er-b"), h = host();
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req("", h, add(1))));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, report(via, req("er-missing-" + UUID.randomUUID(), h, add(1))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, "", add(1))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, "a#b:1", add(1))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, "x".repeat(256), add(1))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, StorageType.ST_NFS, add(1))));
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, StorageType.ST_UNSPECIFIED, add(1))));
        // er-b lists no L2 storage: INSTANCE_NOT_EXIST, as KVCM answers a missing backend
        ReportEventResponse noL2 = report(via, req(instB, h, StorageType.ST_EVENT_REPORT_L2, add(1)));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, noL2);
        assertTrue(noL2.getHeader().getStatus().getMessage().contains("ST_EVENT_REPORT_L2"), noL2::toString);
        assertEquals(0, reports.reporters(inst) + reports.reporters(instB), "nothing was created");
        // an empty request needs neither a valid storage type nor a storage
        ok(report(via, req(instB, h, StorageType.ST_UNSPECIFIED)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void itemLevelValidation(Via via) {
        String inst = instance("er-a"), h = host();
        EventItem mismatch = EventItem.newBuilder().setEventType(ReportEventType.EVENT_BLOCK_ADD)
                .setHeartbeat(HeartbeatEventParams.getDefaultInstance()).build();
        EventItem noMember = EventItem.newBuilder().setEventType(ReportEventType.EVENT_HEARTBEAT).build();
        EventItem unspecified = EventItem.newBuilder().setHeartbeat(HeartbeatEventParams.getDefaultInstance()).build();
        List<EventItem> bad = List.of(mismatch, noMember, unspecified,
                add("1", "hbm", "nope", "rtp://a/1"),                     // unregistered spec
                add("1", "hbm", "s0", "rtp://a/1", "s0", "rtp://a/2"),    // duplicated spec
                add("1", "", "s0", "rtp://a/1"),                          // empty medium
                add("1", "h#m", "s0", "rtp://a/1"),                       // '#' in medium
                add("1", "m".repeat(65), "s0", "rtp://a/1"),              // medium too long
                add("1", "hbm"),                                          // no specs
                add("1", "hbm", "s0", ""),                                // empty uri
                add("1", "hbm", "s0", "rtp://a/" + "x".repeat(4096)),     // uri > 4 KiB
                add("1", "hbm", "s0", "not a uri"),                       // malformed
                add("1", "hbm", "s0", "rtp://a/1", "s1", "rtp://a/1", "s2", "rtp://a/1"), // more specs than registered
                del("1", "hbm"),                                          // no spec names
                del("1", "hbm", "s0", "s0"),                              // duplicated name
                del("1", "hbm", ""),                                      // empty name
                del("x", "hbm", "s0"));                                   // bad key
        List<EventItem> events = new ArrayList<>(bad);
        events.add(add(5));
        ReportEventResponse r = report(via, req(inst, h, events.toArray(EventItem[]::new)));
        assertCode(ErrorCode.INVALID_ARGUMENT, r);
        assertEquals(events.size(), r.getItemResultsCount());
        for (int i = 0; i < bad.size(); i++) {
            assertEquals(ErrorCode.INVALID_ARGUMENT, r.getItemResults(i), "events[" + i + "]");
        }
        assertEquals(ErrorCode.OK, r.getItemResults(bad.size()));
        assertTrue(r.getHeader().getStatus().getMessage().startsWith("events[0]"), r::toString);
        assertEquals(Map.of(h, 1L), local(via, query(inst, 5)));
        // a snapshot with one bad item, or a (key, medium) twice ("1" and "01"), writes nothing at all
        ok(report(via, req(inst, h, register("hbm"))));
        ReportEventResponse s = report(via, req(inst, h, snapshot(item(1), BlockSnapshotItem.newBuilder()
                .setBlockKey("01").setMedium("hbm").addSpecs(LocationSpec.newBuilder().setName("s0").setUri("r://a")).build())));
        assertCode(ErrorCode.INVALID_ARGUMENT, s);
        assertTrue(s.getHeader().getStatus().getMessage().contains("listed twice"), s::toString);
        assertEquals(Map.of(h, 1L), local(via, query(inst, 5)), "the failed snapshot dropped nothing");
        assertCode(ErrorCode.INVALID_ARGUMENT, report(via, req(inst, h, snapshot(item(1), BlockSnapshotItem.newBuilder()
                .setBlockKey("2").setMedium("hbm").build()))));
        assertEquals(Map.of(h, 1L), local(via, query(inst, 5)));
    }

    @Test
    void jsonInputForms() {
        String inst = instance("er-a"), h = host(), tok = EngineReportProfile.ADMIN;
        // enums as integers, camelCase keys, int64 keys as strings or numbers
        JsonNode r = tree(postJson("reportEvent", tok, "{\"traceId\":\"j\",\"instanceId\":\"" + inst
                + "\",\"hostIpPort\":\"" + h + "\",\"storageType\":7,\"unknownKey\":{\"a\":[1]},\"events\":["
                + "{\"eventType\":2,\"blockAdd\":{\"blockKey\":\"5\",\"medium\":\"hbm\",\"specs\":[{\"name\":\"s0\",\"uri\":\"r://a/5\"}]}},"
                + "{\"eventType\":3,\"blockDelete\":{\"blockKey\":\"6\",\"medium\":\"hbm\",\"specNames\":[\"s0\"]}},"
                + "{\"eventType\":5,\"heartbeat\":{\"systemStatus\":{\"k\":\"v\"}}}]}"));
        assertEquals("OK", r.path("header").path("status").path("code").asText(), r::toString);
        // the older publisher's storage type name, and its legacy single-medium snapshot
        JsonNode legacy = tree(postJson("reportEvent", tok, "{\"trace_id\":\"j\",\"instance_id\":\"" + inst
                + "\",\"host_ip_port\":\"" + h + "\",\"storage_type\":\"ST_EVENT_REPORT\",\"events\":["
                + "{\"event_type\":\"EVENT_BLOCK_SNAPSHOT\",\"block_snapshot\":{\"medium\":\"hbm\",\"blocks\":["
                + "{\"block_key\":\"8\",\"specs\":[{\"name\":\"s0\",\"uri\":\"rtp-llm://" + h + "/hbm\"}]}]}}]}"));
        assertEquals("OK", legacy.path("header").path("status").path("code").asText(), legacy::toString);
        assertEquals(1, reports.reporters(inst), "ST_EVENT_REPORT is the L1P5 reporter");
        assertTrue(reports.storedSpecs(inst, false, h, 8, "hbm").containsKey("s0"));
        // output: item_results as names, retry_after_ms as a string
        JsonNode partial = tree(postJson("reportEvent", tok, "{\"trace_id\":\"j\",\"instance_id\":\"" + inst
                + "\",\"host_ip_port\":\"" + h + "\",\"storage_type\":\"ST_EVENT_REPORT_L1P5\",\"events\":["
                + "{\"event_type\":\"EVENT_HEARTBEAT\",\"heartbeat\":{}},{\"event_type\":\"EVENT_BLOCK_ADD\"}]}"));
        assertEquals("INVALID_ARGUMENT", partial.path("header").path("status").path("code").asText());
        assertEquals("[\"OK\",\"INVALID_ARGUMENT\"]", partial.path("item_results").toString());
        assertEquals("0", partial.path("retry_after_ms").asText());
        assertTrue(partial.path("retry_after_ms").isTextual());
        assertTrue(partial.path("committed_snapshot_version").asText().matches(HEX32));
        // GetHostCacheState accepts the H4/H5 request names and ignores them; "global" stays off by default
        JsonNode q = tree(postJson("getHostCacheState", tok, "{\"trace_id\":\"q\",\"instance_id\":\"" + inst
                + "\",\"query_type\":2,\"block_cache_keys\":[\"8\"],\"global_kvs_host_count\":3,\"enable_p2p\":true,"
                + "\"top_k_host_count\":3,\"backend_types\":[\"ST_EVENT_REPORT_L2\",\"ST_TAIRMEMPOOL\"],\"p2p_host_count\":0}"));
        assertEquals("OK", q.path("header").path("status").path("code").asText(), q::toString);
        assertEquals("1", q.path("hosts").get(0).path("local").asText());
        assertTrue(q.path("hosts").get(0).path("global").isMissingNode(), q::toString);
        assertEquals("0", q.path("hosts").get(0).path("p2p_1_fetch").asText());
        // an unparsable body is 400 {} as for every meta route
        HttpResponse<String> bad;
        try {
            bad = HTTP.send(HttpRequest.newBuilder(URI.create(MetaApi.base() + "/api/reportEvent")).timeout(T)
                    .header("Authorization", "Bearer " + tok)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"events\":[{\"block_add\":{\"block_key\":5}}]}")).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
        assertEquals(400, bad.statusCode(), bad::body);
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void hostCacheStateQueryRules(Via via) {
        String inst = instance("er-a"), h = "10.9.9.9:1";
        ok(report(via, req(inst, h, add("1", "gpu", "s0", "r://a"), add("2", "disk", "s0", "r://a"),
                add("3", "gpu", "s0", "r://a"))));
        assertEquals(Map.of(h, 3L), local(via, query(inst, 1, 2, 3)), "empty medium = all media");
        GetHostCacheStateRequest gpu = query(inst, 1, 2, 3).toBuilder().addMedium("gpu").build();
        assertEquals(Map.of(h, 1L), local(via, gpu));
        GetHostCacheStateRequest both = gpu.toBuilder().addMedium("disk").build();
        assertEquals(Map.of(h, 3L), local(via, both));
        for (QueryType t : List.of(QueryType.QT_BATCH_GET, QueryType.QT_REVERSE_ROLL_SW_MATCH)) {
            assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, query(inst, 1).toBuilder().setQueryType(t).build())
                    .getHeader().getStatus().getCode(), t::name);
        }
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1).toBuilder()
                .setQueryType(QueryType.QT_PREFIX_MATCH_WITH_MAMBA).build()));
        assertEquals(Map.of(h, 3L), local(via, query(inst, 1, 2, 3).toBuilder()
                .setQueryType(QueryType.QT_UNSPECIFIED).build()), "unspecified: the instance default (prefix)");
        // an instance whose default is BATCH_GET: unspecified resolves to it, which is refused
        String batch = instance("er-a", QueryType.QT_BATCH_GET, false);
        assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, query(batch, 1).toBuilder()
                .setQueryType(QueryType.QT_UNSPECIFIED).build()).getHeader().getStatus().getCode());
        // eagle-pop: one block less, and a host left with 0 is omitted
        String eagle = instance("er-a", QueryType.QT_PREFIX_MATCH, true);
        ok(report(via, req(eagle, h, add(1), add(2))));
        ok(report(via, req(eagle, "10.9.9.8:1", add(1))));
        assertEquals(Map.of(h, 1L), local(via, query(eagle, 1, 2)));
        assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, query(inst)).getHeader().getStatus().getCode(), "no keys");
        assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, query("", 1)).getHeader().getStatus().getCode());
        assertEquals(ErrorCode.INSTANCE_NOT_EXIST, hosts(via, query("er-none-" + UUID.randomUUID(), 1))
                .getHeader().getStatus().getCode());
        assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, gpu.toBuilder().addMedium("a#b").build())
                .getHeader().getStatus().getCode());
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void l1p5AndL2AreIndependentReporters(Via via) {
        String inst = instance("er-a"), h = host();
        ReportEventResponse l1 = ok(report(via, req(inst, h, add(1), add(2))));
        ReportEventResponse l2 = ok(report(via, req(inst, h, StorageType.ST_EVENT_REPORT_L2, add(2), add(3))));
        assertTrue(l2.getSnapshotRequired(), "L2 has its own generation");
        assertNotEquals(l1.getCommittedSnapshotVersion(), l2.getCommittedSnapshotVersion());
        assertEquals(2, reports.reporters(inst));
        assertEquals(Map.of(h, 3L), local(via, query(inst, 1, 2, 3)), "one host: its L1P5 and L2 reports together");
        assertTrue(caches.view().holds(inst, h, "hbm", 1));
        assertTrue(caches.view().holds(inst, h + "#l2", "hbm", 3));
        assertFalse(caches.view().holds(inst, h, "hbm", 3));
        ok(report(via, req(inst, h, StorageType.ST_EVENT_REPORT_L2, down())));
        assertEquals(Map.of(h, 2L), local(via, query(inst, 1, 2, 3)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void p2pEvaluatesOneRemoteL2Peer(Via via) {
        String inst = instance("er-a"), a = "10.7.0.1:1", b = "10.7.0.2:1", c = "10.7.0.3:1";
        ok(report(via, req(inst, a, add(1), add(2))));
        ok(report(via, req(inst, b, StorageType.ST_EVENT_REPORT_L2, add(1), add(2), add(3), add(4))));
        ok(report(via, req(inst, c, StorageType.ST_EVENT_REPORT_L2, add(3))));
        GetHostCacheStateRequest q = query(inst, 1, 2, 3, 4, 5);
        GetHostCacheStateResponse none = hosts(via, q);
        assertEquals(List.of(0L, 0L), none.getHostsList().stream().map(HostCacheMatch::getP2P1TotalMatch).toList());
        // one host: the longest local match (b, 4) gets a peer; c adds nothing to it
        GetHostCacheStateResponse one = hosts(via, q.toBuilder().setP2PHostCount(1).build());
        assertEquals(List.of(a, b), one.getHostsList().stream().map(HostCacheMatch::getHostIpPort).toList());
        assertEquals(List.of(2L, 4L), one.getHostsList().stream().map(HostCacheMatch::getLocal).toList());
        assertEquals(0, one.getHosts(0).getP2P1TotalMatch(), "a is not among the top 1");
        assertEquals(4, one.getHosts(1).getP2P1TotalMatch());
        assertEquals(0, one.getHosts(1).getP2P1Fetch());
        // two hosts: a pulls 3 and 4 from b (b beats c, which would give only 3)
        GetHostCacheStateResponse two = hosts(via, q.toBuilder().setP2PHostCount(2).build());
        assertEquals(2, two.getHosts(0).getP2P1Fetch());
        assertEquals(4, two.getHosts(0).getP2P1TotalMatch());
    }

    /** §4.6 through the transport: the test holds the reporter's gate as a concurrent snapshot or delta would. */
    @Test
    void writeGateRefusesOrBoundsTheWait() throws Exception {
        String inst = instance("er-a"), h = host();
        Via via = Via.HTTP;
        ReportEventResponse first = ok(report(via, req(inst, h, register("hbm"), add(1))));
        ReporterGate gate = reports.gate(inst, false, h);
        // a snapshot is running: a second one is refused at once, a delta waits out the drain bound (2 s here)
        assertEquals(ReporterGate.SnapshotEntry.ADMITTED, gate.beginSnapshot(0));
        try {
            assertCode(ErrorCode.SNAPSHOT_IN_PROGRESS, report(via, req(inst, h, snapshot(item(2)))));
            long t0 = System.nanoTime();
            ReportEventResponse waited = report(via, req(inst, h, heartbeat(), add(3), add(4)));
            assertTrue(System.nanoTime() - t0 >= 1_900_000_000L, "the delta waited for the snapshot");
            assertEquals(List.of(ErrorCode.OK, ErrorCode.SNAPSHOT_IN_PROGRESS, ErrorCode.SNAPSHOT_IN_PROGRESS),
                    waited.getItemResultsList());
        } finally {
            gate.endSnapshot();
        }
        assertEquals(Map.of(h, 1L), local(via, query(inst, 1, 3)), "the refused deltas wrote nothing");
        // a delta is admitted and does not drain: the snapshot gives up, the generation stays
        assertTrue(gate.beginDelta(0));
        try {
            ReportEventResponse s = report(via, req(inst, h, snapshot(item(2))));
            assertCode(ErrorCode.SNAPSHOT_IN_PROGRESS, s);
            assertEquals(first.getCommittedSnapshotVersion(), s.getCommittedSnapshotVersion());
        } finally {
            gate.endDelta();
        }
        assertFalse(gate.snapshotRunning(), "the gate reopened");
        ReportEventResponse s = ok(report(via, req(inst, h, snapshot(item(2)))));
        assertNotEquals(first.getCommittedSnapshotVersion(), s.getCommittedSnapshotVersion());
        assertEquals(Map.of(h, 1L), local(via, query(inst, 2, 1)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void bounds(Via via) {
        String inst = instance("er-small"), h = host();
        EventItem[] many = new EventItem[EngineReports.MAX_EVENTS + 1];
        java.util.Arrays.fill(many, heartbeat());
        ReportEventResponse tooMany = report(via, req(inst, h, many));
        assertCode(ErrorCode.INVALID_ARGUMENT, tooMany);
        assertTrue(tooMany.getHeader().getStatus().getMessage().contains("events"), tooMany::toString);
        assertEquals(0, reports.reporters(inst));
        // er-small's max_key_count (5) bounds the instance's reported locations
        ReportEventResponse r = report(via, req(inst, h, add(1), add(2), add(3), add(4), add(5), add(6), add(1)));
        assertCode(ErrorCode.REACH_MAX_ENTITY_CAPACITY, r);
        assertEquals(ErrorCode.REACH_MAX_ENTITY_CAPACITY, r.getItemResults(5));
        assertEquals(ErrorCode.OK, r.getItemResults(6), "an existing location may still change");
        ok(report(via, req(inst, h, register("hbm"))));
        assertCode(ErrorCode.REACH_MAX_ENTITY_CAPACITY, report(via, req(inst, h,
                snapshot(item(1), item(2), item(3), item(4), item(5), item(6)))));
        ok(report(via, req(inst, h, snapshot(item(6), item(7)))));
        assertEquals(Map.of(h, 2L), local(via, query(inst, 6, 7)));
        long[] keys = new long[EngineReports.MAX_QUERY_KEYS + 1];
        assertEquals(ErrorCode.INVALID_ARGUMENT, hosts(via, query(inst, keys)).getHeader().getStatus().getCode());
    }

    @Test
    void largeBatchesAsKvcmTestsThem() {
        String inst = instance("er-a"), h = host();
        EventItem[] adds = new EventItem[20_000];
        long[] keys = new long[20_000];
        for (int i = 0; i < adds.length; i++) {
            keys[i] = 1_000_000L + i;
            adds[i] = add(keys[i]);
        }
        for (Via via : Via.values()) {
            long t0 = System.nanoTime();
            ok(report(via, req(inst, h, adds)));
            System.out.printf("[EngineReportTest] 20000 ADDs over %s: %d ms%n", via, (System.nanoTime() - t0) / 1_000_000);
            t0 = System.nanoTime();
            assertEquals(Map.of(h, 20_000L), local(via, query(inst, keys)));
            System.out.printf("[EngineReportTest] GetHostCacheState of 20000 keys over %s: %d ms%n", via,
                    (System.nanoTime() - t0) / 1_000_000);
        }
        // a 100,000-block snapshot replaces them (each location persisted, the 20,000 old ones removed)
        BlockSnapshotItem[] items = new BlockSnapshotItem[100_000];
        for (int i = 0; i < items.length; i++) {
            items[i] = item(5_000_000L + i);
        }
        ok(report(Via.GRPC, req(inst, h, register("hbm"))));
        long t0 = System.nanoTime();
        ReportEventResponse s = ok(report(Via.GRPC, req(inst, h, snapshot(items))));
        System.out.printf("[EngineReportTest] snapshot of 100000 blocks over GRPC: %d ms%n", (System.nanoTime() - t0) / 1_000_000);
        assertTrue(s.getCommittedSnapshotVersion().matches(HEX32));
        assertEquals(Map.of(), local(Via.GRPC, query(inst, keys[0])));
        assertEquals(Map.of(h, 3L), local(Via.GRPC, query(inst, 5_000_000L, 5_000_001L, 5_099_999L)));
    }

    @ParameterizedTest
    @EnumSource(Via.class)
    void tenantsReachOnlyTheirOwnGroup(Via via) {
        String a = instance("er-a"), b = instance("er-b"), h = host();
        ReportEventResponse own = call(via, EngineReportProfile.TENANT_A, "reportEvent", req(a, h, add(1)),
                ReportEventResponse.newBuilder());
        ok(own);
        ReportEventResponse cross = call(via, EngineReportProfile.TENANT_A, "reportEvent", req(b, h, add(1)),
                ReportEventResponse.newBuilder());
        assertNotEquals(ErrorCode.OK, cross.getHeader().getStatus().getCode(), cross::toString);
        assertTrue(cross.getHeader().getStatus().getMessage().contains("permission denied"), cross::toString);
        assertEquals(0, reports.reporters(b), "nothing reached group er-b's instance");
        GetHostCacheStateResponse peek = call(via, EngineReportProfile.TENANT_B, "getHostCacheState", query(a, 1),
                GetHostCacheStateResponse.newBuilder());
        assertNotEquals(ErrorCode.OK, peek.getHeader().getStatus().getCode());
        assertEquals(0, peek.getHostsCount());
        ReportEventResponse anon = call(via, null, "reportEvent", req(a, h, add(2)), ReportEventResponse.newBuilder());
        assertNotEquals(ErrorCode.OK, anon.getHeader().getStatus().getCode());
        assertEquals(Map.of(h, 1L), local(via, query(a, 1, 2)));
    }
}
