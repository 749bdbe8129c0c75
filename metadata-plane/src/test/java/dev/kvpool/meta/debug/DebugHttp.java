package dev.kvpool.meta.debug;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A client of the debug HTTP listener (the meta HTTP test port + 3000). */
final class DebugHttp {
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    static int port() {
        return org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.http.test-port", Integer.class).orElse(16382) + 3000;
    }

    static HttpResponse<String> send(String method, String rpc, String body, String token) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port() + "/api/" + rpc))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    static HttpResponse<String> post(String rpc, String body) throws IOException {
        return send("POST", rpc, body, null);
    }

    private DebugHttp() {
    }
}
