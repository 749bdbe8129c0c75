package dev.kvpool.api.http;

import dev.kvpool.api.naming.Text;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.vertx.core.net.impl.ConnectionBase;
import java.nio.charset.StandardCharsets;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.util.List;
import java.util.Locale;

/**
 * Framing every service answers before any route runs (a bean here, found through this module's index, so the
 * three services share it). Two things Vert.x alone does not do:
 *
 * <ul>
 *   <li>A transfer coding other than a lone {@code chunked}, or a Content-Length given twice or not a number, is
 *   refused with 400: two parties that read such a message differently is how requests are smuggled past a proxy
 *   (RFC 9112 §6.1). (Netty itself drops a Content-Length sent beside {@code chunked}, as RFC 9112 §6.3 allows,
 *   so such a request is read as chunked.)</li>
 *   <li>A body whose chunked framing breaks (a size that is not hex, one that overflows, bytes past a chunk) is
 *   answered 400 before the connection closes. Netty reports it as an exception on the connection, and Vert.x
 *   closes it at once; the route that would answer has usually not run yet (authentication is asynchronous), so
 *   without a handler registered here the client got a closed connection and no reason.</li>
 * </ul>
 */
@Singleton
public class RequestFraming {
    /** Before authentication, CORS and every route. */
    static final int ORDER = Integer.MIN_VALUE + 10;

    void install(@Observes Router router) {
        router.route().order(ORDER).handler(RequestFraming::check);
    }

    static void check(RoutingContext ctx) {
        HttpServerRequest req = ctx.request();
        String refusal = refusal(req.headers().getAll("Transfer-Encoding"), req.headers().getAll("Content-Length"));
        if (refusal != null) {
            badRequest(ctx, refusal);
            return;
        }
        // a framing error reaches the connection, not the request, and Vert.x closes the channel right after its
        // handler returns: a response through the request's API would be dropped, so the 400 goes to the channel
        req.connection().exceptionHandler(e -> {
            if (!ctx.response().headWritten() && req.connection() instanceof ConnectionBase cb) {
                writeRaw(cb, ctx.request().path(), "malformed request: " + e.getMessage());
            }
        });
        ctx.next();
    }

    /** A complete 400 written below Vert.x (measured: the response API's bytes never left before the close). */
    private static void writeRaw(ConnectionBase connection, String path, String why) {
        byte[] body = body(path, why).getBytes(StandardCharsets.UTF_8);
        DefaultFullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_REQUEST,
                Unpooled.wrappedBuffer(body));
        r.headers().set("Content-Type", "application/json").set("Content-Length", body.length)
                .set("Connection", "close").set("X-KVPool-Error", Text.safe(why));
        connection.channelHandlerContext().writeAndFlush(r);
    }

    /** Null when the framing headers are unambiguous, else why not. */
    static String refusal(List<String> transferEncoding, List<String> contentLength) {
        if (!transferEncoding.isEmpty()) {
            if (!contentLength.isEmpty()) {
                return "Content-Length and Transfer-Encoding must not both be sent";
            }
            if (transferEncoding.size() > 1
                    || !transferEncoding.get(0).trim().toLowerCase(Locale.ROOT).equals("chunked")) {
                return "the only transfer coding taken is chunked, got '" + String.join(", ", transferEncoding) + "'";
            }
        }
        if (contentLength.size() > 1) {
            return "Content-Length given " + contentLength.size() + " times";
        }
        if (contentLength.size() == 1) {
            String v = contentLength.get(0).trim();
            if (v.isEmpty() || v.length() > 18 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return "Content-Length must be a non-negative decimal number, got '" + v + "'";
            }
        }
        return null;
    }

    private static void badRequest(RoutingContext ctx, String why) {
        if (!ctx.response().headWritten() && !ctx.response().closed()) {
            ctx.response().setStatusCode(400).putHeader("Content-Type", "application/json")
                    .putHeader("Connection", "close").putHeader("X-KVPool-Error", Text.safe(why))
                    .end(body(ctx.request().path(), why));
        }
    }

    /** KVCM's routes answer an unreadable request 400 with exactly {} (its clients parse that); REST a problem. */
    private static String body(String path, String why) {
        boolean kvcm = path != null && path.startsWith("/api/") && !path.startsWith("/api/v1/");
        return kvcm ? "{}" : "{\"status\":400,\"title\":\"Bad Request\",\"detail\":" + quoted(Text.safe(why)) + "}";
    }

    private static String quoted(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
