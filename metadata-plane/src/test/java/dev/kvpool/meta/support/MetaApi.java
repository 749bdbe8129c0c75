package dev.kvpool.meta.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.*;
import io.smallrye.mutiny.Uni;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.Function;

/**
 * One meta RPC, the same over both transports: HTTP posts the request as proto3 JSON (as the Java client prints
 * it: snake_case, defaults, int64 as strings) to {@code /api/<rpc>} and parses the answer; gRPC calls the
 * generated Mutiny client. Every HTTP answer is checked the way the Python client checks it: status 200,
 * application/json, a JSON object with a header whose status.code is a string (§1.5, §4.1, §5.1 item 15). A gRPC
 * call that ends in a non-OK gRPC status throws, which fails the test (§1.2).
 */
public final class MetaApi {
    public static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    public final Transport transport;
    private final MetaService grpc;

    public MetaApi(Transport transport, MetaService grpc) {
        this.transport = transport;
        this.grpc = grpc;
    }

    @Override
    public String toString() {
        return transport.toString();
    }

    public static String base() {
        int port = org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.http.test-port", Integer.class).orElse(16382);
        return "http://localhost:" + port;
    }

    /** POST /api/{rpc} with a raw body; returns the response (no checks). */
    public static HttpResponse<String> postRaw(String rpc, String body) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base() + "/api/" + rpc)).timeout(TIMEOUT)
                .header("Content-Type", "application/json").header("Accept", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            return HTTP.send(req, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** POST /api/{rpc}; asserts what every KVCM client relies on and returns the body text. */
    public static String post(String rpc, String body) {
        HttpResponse<String> res = postRaw(rpc, body);
        assertEquals(200, res.statusCode(), () -> rpc + " answered HTTP " + res.statusCode() + ": " + res.body());
        String ct = res.headers().firstValue("Content-Type").orElse("");
        assertTrue(ct.startsWith("application/json"), () -> rpc + ": Content-Type " + ct);
        JsonNode n = tree(res.body());
        assertTrue(n.isObject() && n.path("header").path("status").path("code").isTextual(),
                () -> rpc + ": no header.status.code string in " + res.body());
        return res.body();
    }

    public static JsonNode tree(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            return fail("not JSON: " + json, e);
        }
    }

    @SuppressWarnings("unchecked")
    private <Q extends Message, R extends Message> R call(String rpc, Q q, Message.Builder out,
                                                          Function<Q, Uni<R>> g) {
        if (transport == Transport.GRPC) {
            R r = g.apply(q).await().atMost(TIMEOUT);
            assertNotNull(r);
            return r;
        }
        String text = post(rpc, ProtoJson.printToString(q));
        return (R) ProtoJson.merge(text, out).build();
    }

    public RegisterInstanceResponse register(RegisterInstanceRequest q) {
        return call("registerInstance", q, RegisterInstanceResponse.newBuilder(), grpc::registerInstance);
    }

    public GetInstanceInfoResponse info(GetInstanceInfoRequest q) {
        return call("getInstanceInfo", q, GetInstanceInfoResponse.newBuilder(), grpc::getInstanceInfo);
    }

    public GetCacheMetaResponse meta(GetCacheMetaRequest q) {
        return call("getCacheMeta", q, GetCacheMetaResponse.newBuilder(), grpc::getCacheMeta);
    }

    public GetCacheLocationResponse location(GetCacheLocationRequest q) {
        return call("getCacheLocation", q, GetCacheLocationResponse.newBuilder(), grpc::getCacheLocation);
    }

    public StartWriteCacheResponse start(StartWriteCacheRequest q) {
        return call("startWriteCache", q, StartWriteCacheResponse.newBuilder(), grpc::startWriteCache);
    }

    public CommonResponse finish(FinishWriteCacheRequest q) {
        return call("finishWriteCache", q, CommonResponse.newBuilder(), grpc::finishWriteCache);
    }

    public CommonResponse remove(RemoveCacheRequest q) {
        return call("removeCache", q, CommonResponse.newBuilder(), grpc::removeCache);
    }

    public CommonResponse trim(TrimCacheRequest q) {
        return call("trimCache", q, CommonResponse.newBuilder(), grpc::trimCache);
    }

    public GetClusterInfoResponse clusterInfo(GetClusterInfoRequest q) {
        return call("getClusterInfo", q, GetClusterInfoResponse.newBuilder(), grpc::getClusterInfo);
    }

    public GetCacheLocationLenResponse locationLen(GetCacheLocationLenRequest q) {
        return call("getCacheLocationLen", q, GetCacheLocationLenResponse.newBuilder(), grpc::getCacheLocationLen);
    }

    public GetCacheLocationsByBackendResponse byBackend(GetCacheLocationsByBackendRequest q) {
        return call("getCacheLocationsByBackend", q, GetCacheLocationsByBackendResponse.newBuilder(),
                grpc::getCacheLocationsByBackend);
    }
}
