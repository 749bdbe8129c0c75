package dev.kvpool.control.http;

import dev.kvpool.api.http.HttpGuard;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ProblemMappers;
import dev.kvpool.control.kvcm.KvcmAdmin;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.quarkus.security.AuthenticationFailedException;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.jboss.logging.Logger;

/**
 * The control plane's words for what api's {@link HttpGuard} refuses before a route (problem+json for REST and
 * {@code /q}, KVCM's {@code {}} with the reason in {@code X-KVPool-Error} for the KVCM admin routes), and the
 * refusals only this service has: wrong or malformed credentials get a 401 with the same document (Quarkus alone
 * answers an empty 401); a request whose client went away is logged at DEBUG, not as a failure.
 */
@ApplicationScoped
public class RefusalWording implements HttpGuard.Answers {
    private static final Logger LOG = Logger.getLogger(RefusalWording.class);

    @Override
    public HttpGuard.Answer answer(String path, int status, String message) {
        return kvcmRoute(path) ? new HttpGuard.Answer("application/json", "{}")
                : new HttpGuard.Answer(ProblemMappers.PROBLEM, ProblemMappers.problemJson(status, message, null));
    }

    /** KVCM admin routes answer {@code {}} with the reason in a header; everything else a problem document. */
    static boolean kvcmRoute(String path) {
        return HttpGuard.kvcmRoute(path) && KvcmAdmin.RPCS.containsKey(path.substring(5));
    }

    void routes(@Observes Router router) {
        router.route().order(HttpGuard.ORDER).failureHandler(this::failed);
    }

    void failed(RoutingContext ctx) {
        Throwable f = ctx.failure();
        if (f instanceof AuthenticationFailedException) {
            ctx.response().putHeader(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"kvpool\"");
            // the provider's reason (expired, unknown key, unmapped OIDC role...) tells the caller what to fix
            String why = f.getMessage() == null || f.getMessage().isBlank() ? "" : " (" + f.getMessage() + ")";
            answer(ctx, 401, "the credentials were refused" + why + ": send Authorization: Bearer <token> from POST "
                    + "/api/v1/tokens (or from the configured OIDC issuer), or Basic base64(user:password) with a "
                    + "valid account");
            return;
        }
        if (f instanceof HttpClosedException || ctx.response().closed() || ctx.response().ended()) {
            // the client went away, or the guard has answered and closed: nobody to tell
            LOG.debugf("request %s %s ended without an answer: %s", ctx.request().method(),
                    Text.safe(ctx.normalizedPath()), f);
            return;
        }
        ctx.next();
    }

    private void answer(RoutingContext ctx, int status, String message) {
        HttpServerResponse r = ctx.response();
        if (r.headWritten()) {
            ctx.request().connection().close();
            return;
        }
        HttpGuard.Answer a = answer(ctx.normalizedPath(), status, message);
        r.setStatusCode(status).putHeader("X-KVPool-Error", Text.safe(message))
                .putHeader(HttpHeaderNames.CONTENT_TYPE, a.contentType()).end(a.body());
    }
}
