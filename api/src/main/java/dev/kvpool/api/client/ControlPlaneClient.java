package dev.kvpool.api.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import org.jboss.logging.Logger;

/**
 * The control plane's REST API as the metadata plane and the data agent use it: a bearer token obtained with operator
 * credentials ({@code POST /api/v1/tokens}) and renewed before it expires, then JSON calls.
 *
 * <p>On java.net.http rather than the Quarkus REST client (issue 35 asked for it where a library does the job): the
 * Maven mirror here serves quarkus-rest-client only from 3.33.2, not for the 3.30.6 this build is pinned to
 * (env/packages/maven-partial.tsv, checked 2026-11-28); and the callers build this client from settings at start-up,
 * outside CDI. Revisit with the next Quarkus upgrade.
 */
public final class ControlPlaneClient {
    private static final Logger LOG = Logger.getLogger(ControlPlaneClient.class);
    public static final ObjectMapper JSON = new ObjectMapper();

    /** An answer: HTTP status and the parsed body (missing when empty or not JSON). */
    public record Reply(int status, JsonNode body) {
        public boolean ok() {
            return status >= 200 && status < 300;
        }

        /** problem+json detail, else the body as text. */
        public String detail() {
            String d = body.path("detail").asText("");
            return d.isEmpty() ? body.toString() : d;
        }
    }

    public final String url;
    private final String user, password, fixedToken;
    private final Duration timeout;
    private final HttpClient http;
    private volatile String token;
    private volatile Instant tokenExpires = Instant.EPOCH;

    public ControlPlaneClient(String url, String user, String password, String fixedToken, Duration timeout) {
        this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        this.user = user;
        this.password = password;
        this.fixedToken = fixedToken;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    }

    /** The current bearer token, renewed when less than a fifth of its life (at least 60 s) is left. */
    public synchronized String token() throws IOException {
        if (fixedToken != null && !fixedToken.isBlank()) {
            return fixedToken;
        }
        if (user == null || user.isBlank() || password == null) {
            return null;
        }
        Instant now = Instant.now();
        if (token != null && now.plusSeconds(60).isBefore(tokenExpires)) {
            return token;
        }
        var body = JSON.createObjectNode().put("user", user).put("password", password);
        Reply r = send(HttpRequest.newBuilder(URI.create(url + "/api/v1/tokens"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())), null);
        if (!r.ok()) {
            throw new IOException("control plane " + url + " refused credentials of '" + user + "': HTTP "
                    + r.status() + " " + r.detail());
        }
        token = r.body().path("token").asText();
        JsonNode exp = r.body().path("expiresAt");
        Instant expires;
        try {
            expires = exp.isNumber() ? Instant.ofEpochSecond(exp.asLong()) : Instant.parse(exp.asText());
        } catch (RuntimeException e) {
            expires = now.plusSeconds(600);
        }
        // renew after 4/5 of the lifetime
        long life = Math.max(0, expires.getEpochSecond() - now.getEpochSecond());
        tokenExpires = now.plusSeconds(Math.max(61, life - life / 5 + 60));
        if (tokenExpires.isAfter(expires)) {
            tokenExpires = expires;
        }
        LOG.debugf("obtained a control-plane token for '%s' (expires %s)", user, expires);
        return token;
    }

    public Reply get(String path) throws IOException {
        return send(HttpRequest.newBuilder(URI.create(url + path)).GET(), token());
    }

    public Reply post(String path, JsonNode body) throws IOException {
        return send(HttpRequest.newBuilder(URI.create(url + path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())), token());
    }

    private Reply send(HttpRequest.Builder b, String bearer) throws IOException {
        if (bearer != null) {
            b.header("Authorization", "Bearer " + bearer);
        }
        try {
            HttpResponse<String> res = http.send(b.timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
            JsonNode n;
            try {
                n = res.body() == null || res.body().isBlank() ? MissingNode.getInstance() : JSON.readTree(res.body());
            } catch (IOException e) {
                n = JSON.getNodeFactory().textNode(res.body());
            }
            if (res.statusCode() == 401 && bearer != null && fixedToken == null) {
                synchronized (this) {
                    token = null; // expired or the signing key changed: a new one next time
                }
            }
            return new Reply(res.statusCode(), n);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
