package dev.kvpool.agent.api;

import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The engine API's first look at a request's size, before any byte of its body is read: a declared
 * {@code Content-Length} beyond {@code quarkus.http.limits.max-body-size} is answered 413 at once, with the agent's
 * error body, and the connection closed (Quarkus' own check, right behind this one, answers an empty 413). A chunked
 * body that grows past the bound is cut off by Quarkus as it arrives (an empty 413).
 *
 * <p>The rest of the framing is answered before this runs: a Content-Length that is not a number, negative or
 * beyond a long, or a broken header line, by Netty's decoder (an empty 400, connection closed); an ambiguous length
 * or transfer coding, and a chunked body whose framing breaks, by api's {@code RequestFraming} (400 with a problem
 * body); a body that stops short of its Content-Length is closed after {@code quarkus.http.idle-timeout} without
 * traffic, with nothing logged: no one is left to answer.
 */
@ApplicationScoped
public class RequestGuard {
    @ConfigProperty(name = "quarkus.http.limits.max-body-size", defaultValue = "10240K")
    MemorySize maxBodySize;

    void install(@Observes Router router) {
        long limit = maxBodySize.asLongValue();
        router.route().order(RouteConstants.ROUTE_ORDER_UPLOAD_LIMIT - 1).handler(rc -> check(rc, limit));
    }

    private static void check(RoutingContext rc, long limit) {
        String declared = rc.request().getHeader(HttpHeaders.CONTENT_LENGTH);
        if (declared != null) {
            long n;
            try {
                n = Long.parseLong(declared.trim());
            } catch (NumberFormatException e) {
                n = -1; // Netty refused such a head already; leave it to the next handler
            }
            if (n > limit) {
                // the body is not read: the connection goes once the answer is out (as Quarkus' own check does)
                rc.response().putHeader(HttpHeaders.CONNECTION, "close")
                        .endHandler(v -> rc.request().connection().close());
                answer(rc.response(), 413, "request body: " + n + " bytes declared, at most " + limit
                        + " taken (quarkus.http.limits.max-body-size)");
                return;
            }
        }
        rc.next();
    }

    private static void answer(HttpServerResponse r, int status, String message) {
        r.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                .end(new JsonObject().put("error", message).encode());
    }
}
