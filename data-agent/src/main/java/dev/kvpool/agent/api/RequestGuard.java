package dev.kvpool.agent.api;

import dev.kvpool.api.naming.Text;
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
import org.jboss.logging.Logger;

/**
 * The engine API's first look at every request, before any byte of its body is read:
 * <ul>
 * <li>a declared {@code Content-Length} beyond {@code quarkus.http.limits.max-body-size} is answered 413 at once,
 * with the agent's error body (Quarkus' own check, right behind this one, answers an empty 413); a chunked body that
 * grows past it is cut off by Quarkus as it arrives. A Content-Length that is not a number, negative or beyond a
 * long never gets here: Netty's decoder refuses the request head with an empty 400 and closes.</li>
 * <li>a body whose framing breaks after the head (a chunk size that is not hex, say) fails the connection in Vert.x,
 * which then closes it without an answer; the handler installed here answers 400 first, naming what broke.</li>
 * <li>a body that stops short of its Content-Length is closed after {@code quarkus.http.idle-timeout} (60 s) without
 * traffic, with nothing logged: no one is left to answer.</li>
 * </ul>
 * Neither is logged above DEBUG: it is the client's fault, and a client could fill the log with it.
 */
@ApplicationScoped
public class RequestGuard {
    private static final Logger LOG = Logger.getLogger(RequestGuard.class);

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
        // Vert.x reports a body's framing error to the connection (not to the request) and then closes it
        rc.request().connection().exceptionHandler(e -> {
            LOG.debugf("request body of %s %s broke off: %s", rc.request().method(), Text.safe(rc.request().path()),
                    e.toString());
            HttpServerResponse r = rc.response();
            // a connection that closed or timed out (a body shorter than its Content-Length) has no one to answer;
            // RESTEasy finishes that request itself
            boolean framing = !(e instanceof io.vertx.core.http.HttpClosedException) && !(e instanceof java.io.IOException)
                    && !(e instanceof io.netty.handler.timeout.TimeoutException);
            if (framing && !r.headWritten() && !r.ended() && !r.closed()) {
                r.putHeader(HttpHeaders.CONNECTION, "close");
                answer(r, 400, "request body: malformed HTTP framing: " + Text.safe(String.valueOf(e.getMessage())));
                // writes made while Vert.x reads are flushed when the read completes, and the connection is closed
                // before that: without this the answer would go with it
                if (rc.request().connection() instanceof io.vertx.core.net.impl.ConnectionBase c) {
                    c.flush();
                }
            }
        });
        rc.next();
    }

    private static void answer(HttpServerResponse r, int status, String message) {
        r.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                .end(new JsonObject().put("error", message).encode());
    }
}
