package dev.kvpool.api.client;

import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationLenRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationLenResponse;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.GetCacheLocationsByBackendRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationsByBackendResponse;
import dev.kvpool.api.proto.meta.GetCacheMetaRequest;
import dev.kvpool.api.proto.meta.GetCacheMetaResponse;
import dev.kvpool.api.proto.meta.GetClusterInfoRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoResponse;
import dev.kvpool.api.proto.meta.GetInstanceInfoRequest;
import dev.kvpool.api.proto.meta.GetHostCacheStateRequest;
import dev.kvpool.api.proto.meta.GetHostCacheStateResponse;
import dev.kvpool.api.proto.meta.GetInstanceInfoResponse;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.RemoveCacheRequest;
import dev.kvpool.api.proto.meta.ReportEventRequest;
import dev.kvpool.api.proto.meta.ReportEventResponse;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.proto.meta.TrimCacheRequest;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A small client for the KVCM meta HTTP routes ({@code POST /api/<lowerCamelRpc>}, proto3 JSON bodies), as the
 * Python and Java KVCM clients speak them. Thread-safe. Non-200 answers throw {@link KvcmHttpException}; transport
 * failures throw {@link UncheckedIOException}. Logical errors are in the response's {@code header.status}.
 */
public final class KvcmHttpClient {

    private final HttpClient http;
    private final URI baseUri;
    private final Duration timeout;

    /**
     * @param baseUri e.g. {@code http://127.0.0.1:6382}; routes resolve against it
     * @param timeout per-request timeout (the newer Python client uses 1 s)
     */
    public KvcmHttpClient(URI baseUri, Duration timeout) {
        this(HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1) // plain HTTP/1.1: no h2c upgrade round trip
                .connectTimeout(timeout)
                .build(), baseUri, timeout);
    }

    public KvcmHttpClient(HttpClient http, URI baseUri, Duration timeout) {
        this.http = http;
        this.baseUri = baseUri;
        this.timeout = timeout;
    }

    public URI baseUri() {
        return baseUri;
    }

    public RegisterInstanceResponse registerInstance(RegisterInstanceRequest request) {
        return call("RegisterInstance", request, RegisterInstanceResponse.getDefaultInstance());
    }

    public GetInstanceInfoResponse getInstanceInfo(GetInstanceInfoRequest request) {
        return call("GetInstanceInfo", request, GetInstanceInfoResponse.getDefaultInstance());
    }

    public GetCacheLocationResponse getCacheLocation(GetCacheLocationRequest request) {
        return call("GetCacheLocation", request, GetCacheLocationResponse.getDefaultInstance());
    }

    public GetCacheMetaResponse getCacheMeta(GetCacheMetaRequest request) {
        return call("GetCacheMeta", request, GetCacheMetaResponse.getDefaultInstance());
    }

    public StartWriteCacheResponse startWriteCache(StartWriteCacheRequest request) {
        return call("StartWriteCache", request, StartWriteCacheResponse.getDefaultInstance());
    }

    public CommonResponse finishWriteCache(FinishWriteCacheRequest request) {
        return call("FinishWriteCache", request, CommonResponse.getDefaultInstance());
    }

    public CommonResponse removeCache(RemoveCacheRequest request) {
        return call("RemoveCache", request, CommonResponse.getDefaultInstance());
    }

    public CommonResponse trimCache(TrimCacheRequest request) {
        return call("TrimCache", request, CommonResponse.getDefaultInstance());
    }

    public GetClusterInfoResponse getClusterInfo(GetClusterInfoRequest request) {
        return call("GetClusterInfo", request, GetClusterInfoResponse.getDefaultInstance());
    }

    public GetCacheLocationLenResponse getCacheLocationLen(GetCacheLocationLenRequest request) {
        return call("GetCacheLocationLen", request, GetCacheLocationLenResponse.getDefaultInstance());
    }

    public GetCacheLocationsByBackendResponse getCacheLocationsByBackend(GetCacheLocationsByBackendRequest request) {
        return call("GetCacheLocationsByBackend", request, GetCacheLocationsByBackendResponse.getDefaultInstance());
    }

    public ReportEventResponse reportEvent(ReportEventRequest request) {
        return call("ReportEvent", request, ReportEventResponse.getDefaultInstance());
    }

    public GetHostCacheStateResponse getHostCacheState(GetHostCacheStateRequest request) {
        return call("GetHostCacheState", request, GetHostCacheStateResponse.getDefaultInstance());
    }

    /**
     * Calls any route by its RPC name, e.g. an admin route against an admin base URI.
     *
     * @param rpc the RPC name as in the .proto, e.g. {@code GetCacheLocation}
     * @param responseType the response type's default instance
     */
    @SuppressWarnings("unchecked") // the builder comes from responseType, so build() returns an R
    public <R extends Message> R call(String rpc, Message request, R responseType) {
        String route = route(rpc);
        HttpResponse<byte[]> response = post(route, ProtoJson.print(request));
        if (response.statusCode() != 200) {
            throw new KvcmHttpException(route, response.statusCode(),
                    new String(response.body(), StandardCharsets.UTF_8));
        }
        return (R) ProtoJson.merge(response.body(), responseType.newBuilderForType()).build();
    }

    /** Posts a raw body to a route, whatever the answer: for tests of malformed bodies and unknown routes. */
    public HttpResponse<byte[]> post(String route, byte[] jsonBody) {
        HttpRequest request = HttpRequest.newBuilder(baseUri.resolve(route))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(jsonBody))
                .build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new InterruptedIOException("interrupted during POST " + route));
        } catch (IOException e) {
            throw new UncheckedIOException("POST " + baseUri.resolve(route) + " failed: " + describe(e), e);
        }
    }

    /**
     * An I/O failure in words: the JDK client's ConnectException and timeouts carry no message ("failed: null"
     * told an operator nothing), so their kind is named instead.
     */
    public static String describe(IOException e) {
        if (e instanceof java.net.ConnectException) {
            return "connection refused or unreachable" + (e.getMessage() == null ? "" : " (" + e.getMessage() + ")");
        }
        if (e instanceof java.net.http.HttpTimeoutException) {
            return "timed out" + (e.getMessage() == null ? "" : " (" + e.getMessage() + ")");
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** {@code GetCacheLocation} → {@code /api/getCacheLocation}. */
    static String route(String rpc) {
        return "/api/" + Character.toLowerCase(rpc.charAt(0)) + rpc.substring(1);
    }
}
