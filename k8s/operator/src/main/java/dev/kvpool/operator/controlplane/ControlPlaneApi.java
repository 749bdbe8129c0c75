package dev.kvpool.operator.controlplane;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * The control plane's REST API as the operator uses it: a bearer token from {@code POST /api/v1/tokens} (one PBKDF2
 * check per token instead of one per request, as HTTP Basic would cost), then JSON calls whose ETag and problem+json
 * detail the caller sees.
 *
 * <p>Plain JDK {@link HttpClient} rather than the Quarkus REST client: every pool has its own URL and credentials,
 * known only at run time, and the reconcilers need the raw status, the {@code ETag} header and the problem detail of
 * a 4xx as data, not as exceptions. {@code dev.kvpool.api.client.ControlPlaneClient} has the same shape but no PUT,
 * DELETE, If-Match or ETag, so this imitates it instead of widening a class the data path uses.
 */
public final class ControlPlaneApi {
    public static final ObjectMapper JSON = new ObjectMapper();
    /** Problem details longer than this are cut: they end up in status conditions and Events. */
    static final int MAX_DETAIL = 1024;

    /** An answer: HTTP status, the parsed body (missing when empty or not JSON) and the ETag without quotes. */
    public record Reply(int status, JsonNode body, String etag) {
        public boolean ok() {
            return status >= 200 && status < 300;
        }

        /** The control plane's version of the object: the ETag, else the body's {@code version}. */
        public Long version() {
            if (etag != null && etag.matches("\\d{1,18}")) {
                return Long.parseLong(etag);
            }
            return body.path("version").canConvertToLong() && body.has("version") ? body.get("version").asLong() : null;
        }

        /** problem+json {@code detail} (else {@code title}, else the body), bounded. */
        public String detail() {
            String d = body.path("detail").asText("");
            if (d.isEmpty()) {
                d = body.path("title").asText("");
            }
            if (d.isEmpty()) {
                d = body.isMissingNode() ? "" : body.toString();
            }
            return d.length() > MAX_DETAIL ? d.substring(0, MAX_DETAIL) + "…" : d;
        }
    }

    /** The control plane could not be reached, or answered 5xx: retried with backoff. */
    public static final class Unavailable extends IOException {
        public Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    public final String url;
    private final String user;
    private final String password;
    private final Duration timeout;
    private final HttpClient http;
    private String token;
    private Instant tokenRenewAt = Instant.EPOCH;

    public ControlPlaneApi(String url, String user, String password, Duration timeout) {
        this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        this.user = user;
        this.password = password;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    }

    /** A path segment: names are validated by the CRD, but an account may hold '@'. */
    public static String segment(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }

    public Reply get(String path) throws IOException {
        return authorized(() -> HttpRequest.newBuilder(uri(path)).GET());
    }

    public Reply post(String path, JsonNode body) throws IOException {
        return authorized(() -> json(path, body).POST(HttpRequest.BodyPublishers.ofString(body.toString())));
    }

    /** PUT with {@code If-Match}: a change made since {@code etag} was read gives 412, never a blind overwrite. */
    public Reply put(String path, String etag, JsonNode body) throws IOException {
        return authorized(() -> json(path, body).header("If-Match", "\"" + etag + "\"")
                .PUT(HttpRequest.BodyPublishers.ofString(body.toString())));
    }

    public Reply delete(String path) throws IOException {
        return authorized(() -> HttpRequest.newBuilder(uri(path)).DELETE());
    }

    private HttpRequest.Builder json(String path, JsonNode body) {
        return HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json");
    }

    private URI uri(String path) {
        return URI.create(url + path);
    }

    private interface RequestFactory {
        HttpRequest.Builder build();
    }

    /** Sends with the current token; a 401 (token expired, signing key rotated) gets one retry with a new token. */
    private Reply authorized(RequestFactory f) throws IOException {
        Reply r = send(f.build().header("Authorization", "Bearer " + token(false)));
        if (r.status() == 401) {
            r = send(f.build().header("Authorization", "Bearer " + token(true)));
        }
        return r;
    }

    private synchronized String token(boolean renew) throws IOException {
        Instant now = Instant.now();
        if (!renew && token != null && now.isBefore(tokenRenewAt)) {
            return token;
        }
        var body = JSON.createObjectNode().put("user", user).put("password", password);
        Reply r = send(HttpRequest.newBuilder(uri("/api/v1/tokens")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())));
        if (!r.ok() || !r.body().path("token").isTextual()) {
            throw new CredentialsRefused("the control plane at " + url + " refused the admin credentials of '" + user
                    + "': HTTP " + r.status() + " " + r.detail());
        }
        token = r.body().path("token").asText();
        Instant expires;
        try {
            JsonNode exp = r.body().path("expiresAt");
            expires = exp.isNumber() ? Instant.ofEpochSecond(exp.asLong()) : Instant.parse(exp.asText());
        } catch (RuntimeException e) {
            expires = now.plusSeconds(300);
        }
        // renew after 4/5 of the token's life
        tokenRenewAt = now.plus(Duration.between(now, expires).multipliedBy(4).dividedBy(5));
        return token;
    }

    /** The admin credentials were refused (401/403 on POST /api/v1/tokens): not retried quickly. */
    public static final class CredentialsRefused extends IOException {
        public CredentialsRefused(String message) {
            super(message);
        }
    }

    private Reply send(HttpRequest.Builder b) throws IOException {
        HttpResponse<String> res;
        try {
            res = http.send(b.timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new Unavailable("control plane " + url + " unreachable: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Unavailable("interrupted while calling " + url, e);
        }
        if (res.statusCode() >= 500) {
            throw new Unavailable("control plane " + url + " answered HTTP " + res.statusCode(), null);
        }
        JsonNode n;
        try {
            n = res.body() == null || res.body().isBlank() ? MissingNode.getInstance() : JSON.readTree(res.body());
        } catch (IOException e) {
            n = JSON.getNodeFactory().textNode(res.body());
        }
        String etag = res.headers().firstValue("ETag").map(e -> e.replace("W/", "").replace("\"", "").trim())
                .orElse(null);
        return new Reply(res.statusCode(), n, etag);
    }
}
