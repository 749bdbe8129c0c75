package dev.kvpool.api.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Message;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationLenRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationLenResponse;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.GetCacheLocationsByBackendRequest;
import dev.kvpool.api.proto.meta.GetCacheMetaRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoResponse;
import dev.kvpool.api.proto.meta.GetInstanceInfoRequest;
import dev.kvpool.api.proto.meta.GetInstanceInfoResponse;
import dev.kvpool.api.proto.meta.MetaNodeEndpoint;
import dev.kvpool.api.proto.meta.MetaServiceGrpc;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.RemoveCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.api.proto.meta.TrimCacheRequest;
import dev.kvpool.api.proto.meta.TrimStrategy;
import io.grpc.MethodDescriptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Request encoding of the meta HTTP client, against a tiny in-process HTTP server. */
class KvcmHttpClientTest {

    record Captured(String method, String path, String contentType, String body) {
    }

    private HttpServer server;
    private KvcmHttpClient client;
    private final BlockingQueue<Captured> requests = new LinkedBlockingQueue<>();
    /** What the server answers: status and body for a path. */
    private volatile Function<String, Object[]> answer = path -> new Object[] {200, "{}"};

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::handle);
        server.start();
        client = new KvcmHttpClient(URI.create("http://127.0.0.1:" + server.getAddress().getPort()),
                Duration.ofSeconds(5));
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        requests.add(new Captured(ex.getRequestMethod(), path, ex.getRequestHeaders().getFirst("Content-Type"),
                new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)));
        Object[] a = answer.apply(path);
        byte[] body = ((String) a[1]).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders((Integer) a[0], body.length);
        ex.getResponseBody().write(body);
        ex.close();
    }

    private Captured next() throws InterruptedException {
        return requests.take();
    }

    static CommonResponseHeader ok() {
        return CommonResponseHeader.newBuilder().setStatus(Status.newBuilder().setCode(ErrorCode.OK))
                .setRequestId("t_1").build();
    }

    @Test
    void getCacheLocationPostsProtoJsonToItsRoute() throws Exception {
        GetCacheLocationResponse canned = GetCacheLocationResponse.newBuilder().setHeader(ok()).build();
        answer = path -> new Object[] {200, ProtoJson.printToString(canned)};
        GetCacheLocationRequest req = GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId("instance1")
                .setQueryType(QueryType.QT_PREFIX_MATCH).addBlockKeys(-8366447770138823354L)
                .setBlockMask(BlockMask.newBuilder().setOffset(0)).build();

        assertEquals(canned, client.getCacheLocation(req));
        Captured c = next();
        assertEquals("POST", c.method());
        assertEquals("/api/getCacheLocation", c.path());
        assertEquals("application/json", c.contentType());
        assertEquals("{\"trace_id\":\"t\",\"instance_id\":\"instance1\",\"query_type\":\"QT_PREFIX_MATCH\","
                + "\"block_keys\":[\"-8366447770138823354\"],\"token_ids\":[],\"block_mask\":{\"offset\":0},"
                + "\"sw_size\":0,\"location_spec_names\":[]}", c.body());
    }

    @Test
    void everyMetaRpcHasAMethodOnItsRoute() throws Exception {
        List<Runnable> calls = List.of(
                () -> client.registerInstance(RegisterInstanceRequest.newBuilder().setInstanceId("i").build()),
                () -> client.getInstanceInfo(GetInstanceInfoRequest.newBuilder().setInstanceId("i").build()),
                () -> client.getCacheLocation(GetCacheLocationRequest.getDefaultInstance()),
                () -> client.getCacheMeta(GetCacheMetaRequest.getDefaultInstance()),
                () -> client.startWriteCache(StartWriteCacheRequest.getDefaultInstance()),
                () -> client.finishWriteCache(FinishWriteCacheRequest.getDefaultInstance()),
                () -> client.removeCache(RemoveCacheRequest.getDefaultInstance()),
                () -> client.trimCache(TrimCacheRequest.newBuilder().setStrategy(TrimStrategy.TS_TIMESTAMP).build()),
                () -> client.getClusterInfo(GetClusterInfoRequest.getDefaultInstance()),
                () -> client.getCacheLocationLen(GetCacheLocationLenRequest.getDefaultInstance()),
                () -> client.getCacheLocationsByBackend(GetCacheLocationsByBackendRequest.getDefaultInstance()),
                () -> client.reportEvent(dev.kvpool.api.proto.meta.ReportEventRequest.getDefaultInstance()),
                () -> client.getHostCacheState(dev.kvpool.api.proto.meta.GetHostCacheStateRequest.getDefaultInstance()));
        Set<String> paths = new TreeSet<>();
        for (Runnable call : calls) {
            call.run();
            paths.add(next().path());
        }
        // one route per MetaService RPC in meta_service.proto, named /api/<lowerCamelRpc>
        Set<String> expected = new TreeSet<>();
        for (var m : MetaServiceGrpc.getServiceDescriptor().getMethods()) {
            String rpc = ((MethodDescriptor<?, ?>) m).getBareMethodName();
            expected.add("/api/" + Character.toLowerCase(rpc.charAt(0)) + rpc.substring(1));
        }
        assertEquals(expected, paths);
    }

    @Test
    void responsesAreDecodedIntoTheirTypes() {
        RegisterInstanceResponse reg = RegisterInstanceResponse.newBuilder().setHeader(ok())
                .setStorageConfigs("[{\"type\":\"file\"}]").build();
        StartWriteCacheResponse start = StartWriteCacheResponse.newBuilder().setHeader(ok()).setWriteSessionId("w")
                .setBlockMask(BlockMask.newBuilder().setOffset(0)).build();
        GetClusterInfoResponse cluster = GetClusterInfoResponse.newBuilder().setHeader(ok()).setLeaderNodeId("n1")
                .setLeaderEndpoint(MetaNodeEndpoint.newBuilder().setHost("10.0.0.1").setMetaRpcPort(6381)
                        .setMetaHttpPort(6382)).build();
        GetCacheLocationLenResponse len = GetCacheLocationLenResponse.newBuilder().setHeader(ok())
                .setCacheLocationLen(3).build();
        answer = path -> new Object[] {200, ProtoJson.printToString(switch (path) {
            case "/api/registerInstance" -> reg;
            case "/api/startWriteCache" -> start;
            case "/api/getClusterInfo" -> cluster;
            case "/api/getCacheLocationLen" -> len;
            default -> CommonResponse.getDefaultInstance();
        })};
        assertEquals(reg, client.registerInstance(RegisterInstanceRequest.getDefaultInstance()));
        StartWriteCacheResponse s = client.startWriteCache(StartWriteCacheRequest.getDefaultInstance());
        assertEquals(start, s);
        assertTrue(s.getBlockMask().hasOffset());
        assertEquals(cluster, client.getClusterInfo(GetClusterInfoRequest.getDefaultInstance()));
        assertEquals(3, client.getCacheLocationLen(GetCacheLocationLenRequest.getDefaultInstance())
                .getCacheLocationLen());
    }

    @Test
    void unknownResponseFieldsAreIgnored() {
        answer = path -> new Object[] {200, "{\"header\":{\"status\":{\"code\":\"OK\",\"future\":1},\"x\":[]},"
                + "\"instance_group\":\"default\",\"newer_field\":{\"a\":1}}"};
        GetInstanceInfoResponse r = client.getInstanceInfo(GetInstanceInfoRequest.getDefaultInstance());
        assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode());
        assertEquals("default", r.getInstanceGroup());
    }

    @Test
    void non200CarriesStatusAndBody() {
        answer = path -> new Object[] {400, "{}"};
        KvcmHttpException e = assertThrows(KvcmHttpException.class,
                () -> client.getCacheMeta(GetCacheMetaRequest.getDefaultInstance()));
        assertEquals(400, e.statusCode());
        assertEquals("{}", e.body());
        assertTrue(e.getMessage().contains("/api/getCacheMeta"), e.getMessage());

        answer = path -> new Object[] {503, "leader election in progress"};
        e = assertThrows(KvcmHttpException.class, () -> client.trimCache(TrimCacheRequest.getDefaultInstance()));
        assertEquals(503, e.statusCode());
        assertEquals("leader election in progress", e.body());
    }

    @Test
    void genericCallAndRawPost() throws Exception {
        CommonResponse canned = CommonResponse.newBuilder().setHeader(ok()).build();
        answer = path -> new Object[] {200, ProtoJson.printToString(canned)};
        Message r = client.call("RemoveCache", RemoveCacheRequest.newBuilder().addBlockKeys(1).build(),
                CommonResponse.getDefaultInstance());
        assertEquals(canned, r);
        assertEquals("/api/removeCache", next().path());

        answer = path -> new Object[] {404, "not found"};
        var raw = client.post("/api/noSuchApi", "{\"x\":".getBytes(StandardCharsets.UTF_8));
        assertEquals(404, raw.statusCode());
        Captured c = next();
        assertEquals("/api/noSuchApi", c.path());
        assertEquals("{\"x\":", c.body());
    }

    @Test
    void transportFailureIsUnchecked() {
        server.stop(0);
        assertThrows(UncheckedIOException.class,
                () -> client.getClusterInfo(GetClusterInfoRequest.getDefaultInstance()));
    }

    @Test
    void routeNames() {
        assertEquals("/api/getCacheLocationsByBackend", KvcmHttpClient.route("GetCacheLocationsByBackend"));
        assertEquals("/api/listInstanceGroup", KvcmHttpClient.route("ListInstanceGroup"));
    }
}
