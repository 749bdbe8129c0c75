package dev.kvpool.control.metaproxy;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ProblemMappers;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.logging.Logger;

/**
 * {@code /api/v1/meta/<path>} → {@code <metadata plane>/api/v1/<path>} for {@code whatif/**},
 * {@code instances/**} and {@code engine/**} (engine caches, prefix scores), so a browser only talks to the control plane. Method, {@code Content-Type},
 * {@code Authorization} and the body (bounded by kvpool.control.max-body-size, as every body here) go through; the
 * upstream status, body and {@code Content-Type} come back as they are (a {@code Location} under /api/v1/ is
 * rewritten to its /api/v1/meta/ path). The metadata plane checks the token itself (what-if: admin and operator; an
 * instance's summary and block keys: also a tenant on its own groups). Every path segment must be a valid
 * {@link Identifiers} name (so no {@code ..}, no encoded slash), and the upstream URL is built from those checked parts
 * and re-encoded query parameters. An unreachable plane answers 503, one that does not answer in
 * kvpool.control.metadata-plane.timeout 504, both problem+json naming the URL.
 *
 * <p>Vert.x's HTTP client (the one Quarkus runs on) rather than java.net.http: it shares Quarkus' event loops, and
 * the resource can answer asynchronously without holding a worker thread while the plane replays.
 */
@Path("/api/v1/meta")
@Tag(name = "metadata plane", description = "The metadata plane's what-if and instance routes, through the control plane")
public class MetaProxyResource {
    private static final Logger LOG = Logger.getLogger(MetaProxyResource.class);
    static final Set<String> PREFIXES = Set.of("whatif", "instances", "engine");
    static final int MAX_SEGMENTS = 6;

    @Inject
    Vertx vertx;
    @Inject
    MetaPlaneTarget target;
    @ConfigProperty(name = "kvpool.control.metadata-plane.timeout", defaultValue = "30s")
    Duration timeout;
    @ConfigProperty(name = "kvpool.control.metadata-plane.connect-timeout", defaultValue = "2s")
    Duration connectTimeout;

    private HttpClient client;

    @PostConstruct
    void init() {
        client = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout((int) connectTimeout.toMillis())
                .setMaxPoolSize(16));
    }

    @PreDestroy
    void close() {
        if (client != null) {
            client.close();
        }
    }

    @GET
    @Path("{path: .+}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "GET on the metadata plane (whatif/**, instances/**)")
    public CompletionStage<Response> get(@Context UriInfo uri, @Context HttpHeaders h, @Context io.vertx.core.http.HttpServerRequest raw) {
        return forward(HttpMethod.GET, raw.path(), uri, h, null);
    }

    @POST
    @Path("{path: .+}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "POST on the metadata plane (whatif/**, instances/**)")
    public CompletionStage<Response> post(@Context UriInfo uri, @Context HttpHeaders h, @Context io.vertx.core.http.HttpServerRequest raw, byte[] body) {
        return forward(HttpMethod.POST, raw.path(), uri, h, body);
    }

    @PUT
    @Path("{path: .+}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "PUT on the metadata plane (whatif/**, instances/**)")
    public CompletionStage<Response> put(@Context UriInfo uri, @Context HttpHeaders h, @Context io.vertx.core.http.HttpServerRequest raw, byte[] body) {
        return forward(HttpMethod.PUT, raw.path(), uri, h, body);
    }

    @DELETE
    @Path("{path: .+}")
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "DELETE on the metadata plane (whatif/**, instances/**)")
    public CompletionStage<Response> delete(@Context UriInfo uri, @Context HttpHeaders h, @Context io.vertx.core.http.HttpServerRequest raw) {
        return forward(HttpMethod.DELETE, raw.path(), uri, h, null);
    }

    /**
     * The checked segments after /api/v1/meta of the request's raw (undecoded) path, or a refusal. RESTEasy Reactive
     * only hands out decoded segments, in which an encoded slash can no longer be told from a real one.
     */
    static List<String> segments(String rawPath) {
        String prefix = "/api/v1/meta/";
        if (rawPath == null || !rawPath.startsWith(prefix)) {
            throw refusal(400, "not a /api/v1/meta/ path");
        }
        String[] raw = rawPath.substring(prefix.length()).split("/", -1);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < raw.length; i++) {
            String enc = raw[i];
            if (enc.isEmpty() && i == raw.length - 1 && i > 0) {
                continue; // a trailing slash
            }
            // an encoded character of any kind (%2F, %2E, %00 ...) is refused: names never need one
            String p = enc.indexOf('%') >= 0 ? "must not hold an encoded character" : Identifiers.problem(
                    Identifiers.Kind.INSTANCE, enc);
            if (p != null) {
                throw refusal(400, "path segment " + (i + 1) + " ('" + Text.safe(enc) + "') " + p);
            }
            out.add(enc);
        }
        if (out.isEmpty() || !PREFIXES.contains(out.getFirst())) {
            throw refusal(404, "only /api/v1/meta/whatif/**, /api/v1/meta/instances/** and /api/v1/meta/engine/** are "
                    + "forwarded to the metadata plane");
        }
        if (out.size() > MAX_SEGMENTS) {
            throw refusal(400, "at most " + MAX_SEGMENTS + " path segments after /api/v1/meta");
        }
        return out;
    }

    private static jakarta.ws.rs.WebApplicationException refusal(int status, String detail) {
        return new jakarta.ws.rs.WebApplicationException(detail, problem(status, detail));
    }

    static Response problem(int status, String detail) {
        return ProblemMappers.problem(status, Response.Status.fromStatusCode(status).getReasonPhrase(), detail, null);
    }

    /** The base URL checked: http or https, a host, no user info, query or fragment; the trailing slash dropped. */
    static URI base(String url) {
        URI u;
        try {
            u = URI.create(url.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("kvpool.control.metadata-plane.url is not a URL: " + url);
        }
        if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))
                || u.getHost() == null || u.getRawUserInfo() != null || u.getRawQuery() != null
                || u.getRawFragment() != null || (u.getRawPath() != null && !u.getRawPath().isEmpty()
                && !u.getRawPath().equals("/"))) {
            throw new IllegalStateException("kvpool.control.metadata-plane.url must be http(s)://host[:port], got "
                    + url);
        }
        return u;
    }

    private CompletionStage<Response> forward(HttpMethod method, String rawPath, UriInfo uri, HttpHeaders h,
                                              byte[] body) {
        List<String> segs = segments(rawPath);
        URI b = base(target.url());
        StringBuilder path = new StringBuilder("/api/v1");
        for (String s : segs) {
            path.append('/').append(s);
        }
        String query = query(uri);
        if (!query.isEmpty()) {
            path.append('?').append(query);
        }
        boolean tls = b.getScheme().equals("https");
        int port = b.getPort() > 0 ? b.getPort() : tls ? 443 : 80;
        String shown = b.getScheme() + "://" + b.getHost() + ":" + port + path;
        RequestOptions o = new RequestOptions().setMethod(method).setHost(b.getHost()).setPort(port).setSsl(tls)
                .setURI(path.toString()).setTimeout(timeout.toMillis()).setFollowRedirects(false);
        String ct = h.getHeaderString(HttpHeaders.CONTENT_TYPE);
        if (ct != null) {
            o.putHeader(HttpHeaders.CONTENT_TYPE, ct);
        }
        String auth = h.getHeaderString(HttpHeaders.AUTHORIZATION);
        if (auth != null) {
            o.putHeader(HttpHeaders.AUTHORIZATION, auth);
        }
        String accept = h.getHeaderString(HttpHeaders.ACCEPT);
        if (accept != null) {
            o.putHeader(HttpHeaders.ACCEPT, accept);
        }
        CompletableFuture<Response> out = new CompletableFuture<>();
        client.request(o).compose(req -> body == null ? req.send() : req.send(Buffer.buffer(body)))
                .compose(resp -> resp.body().map(buf -> {
                    Response.ResponseBuilder r = Response.status(resp.statusCode()).entity(buf.getBytes());
                    String rct = resp.getHeader("Content-Type");
                    if (rct != null) {
                        r.header("Content-Type", rct);
                    }
                    for (String name : List.of("Retry-After", "WWW-Authenticate", "ETag")) {
                        String v = resp.getHeader(name);
                        if (v != null) {
                            r.header(name, v);
                        }
                    }
                    String loc = resp.getHeader("Location");
                    if (loc != null && loc.startsWith("/api/v1/")) {
                        r.header("Location", "/api/v1/meta/" + loc.substring("/api/v1/".length()));
                    }
                    return r.build();
                }))
                .onSuccess(out::complete)
                .onFailure(e -> out.complete(failure(e, shown)));
        return out;
    }

    private Response failure(Throwable e, String url) {
        if (e instanceof java.util.concurrent.TimeoutException || e instanceof io.netty.handler.timeout.TimeoutException
                || e.getClass().getSimpleName().contains("Timeout") && !(e instanceof ConnectException)
                && !String.valueOf(e.getMessage()).contains("connect")) {
            return problem(504, "the metadata plane at " + url + " did not answer within " + timeout.toSeconds()
                    + " s (kvpool.control.metadata-plane.timeout)");
        }
        LOG.debugf("metadata plane unreachable at %s: %s", url, e);
        return Response.fromResponse(problem(503, "no metadata plane reachable at " + url + " ("
                + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")"))
                .header("Retry-After", "5").build();
    }

    /** The query parameters decoded by JAX-RS, re-encoded: nothing of the raw query reaches the upstream URL. */
    static String query(UriInfo uri) {
        StringBuilder q = new StringBuilder();
        for (Map.Entry<String, List<String>> e : uri.getQueryParameters(true).entrySet()) {
            for (String v : e.getValue()) {
                if (!q.isEmpty()) {
                    q.append('&');
                }
                q.append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(v, StandardCharsets.UTF_8));
            }
        }
        return q.toString();
    }
}
