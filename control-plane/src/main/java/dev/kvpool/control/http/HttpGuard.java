package dev.kvpool.control.http;

import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ProblemMappers;
import dev.kvpool.control.kvcm.KvcmAdmin;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.security.AuthenticationFailedException;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.net.impl.ConnectionBase;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.nio.charset.StandardCharsets;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * What every HTTP request meets before its route: refusals the framework would otherwise give without a word, or not
 * at all, answered as the route would answer (problem+json for REST and {@code /q}, KVCM's {@code {}} with the reason
 * in {@code X-KVPool-Error} for the KVCM admin routes).
 *
 * <ul>
 *   <li>A declared {@code Content-Length} above {@code kvpool.control.max-body-size}: 413 naming both numbers, before a
 *       byte of the body is read (nothing is allocated for it) and before credentials are checked.</li>
 *   <li>A chunked body that grows past the limit: 413 as soon as it does, and the connection is closed.</li>
 *   <li>A body that stops arriving for {@code kvpool.control.body-timeout}: 408 naming the setting, then the connection
 *       is closed.</li>
 *   <li>Bad chunked framing (a chunk size that is not hex, a missing CRLF): 400 naming the fault, then the connection
 *       is closed. Vert.x alone closes the connection without an answer and the request fails with an ERROR in the
 *       log.</li>
 *   <li>Wrong or malformed credentials: 401 with the same document (Quarkus alone answers an empty 401).</li>
 *   <li>A request whose client went away, or that this guard already answered: nothing more is written and nothing
 *       is logged above DEBUG.</li>
 * </ul>
 *
 * <p>Ambiguous framing headers (Content-Length beside chunked, another transfer coding) are refused before this by
 * {@code dev.kvpool.api.http.RequestFraming}, shared by the three services. Header-level faults (a Content-Length that
 * is not a number, an invalid header line) never reach a route: Vert.x answers them with an empty 400 and closes the
 * connection. This guard's own chunk-framing answer runs below Vert.x, so it comes first and in this service's problem
 * format.
 */
@ApplicationScoped
public class HttpGuard {
    private static final Logger LOG = Logger.getLogger(HttpGuard.class);
    /** The Netty handler's name in each connection's pipeline (installed once, before Vert.x's own handler). */
    static final String FRAMING = "kvpool-framing-guard";

    @ConfigProperty(name = "kvpool.control.max-body-size", defaultValue = "64M")
    MemorySize maxBodySize;
    /** How long a request body may pause before it is refused with 408 (a client that stalls holds a connection). */
    @ConfigProperty(name = "kvpool.control.body-timeout", defaultValue = "30s")
    java.time.Duration bodyTimeout;

    /** The largest request body accepted, in bytes (REST and the KVCM admin routes). */
    public long limit() {
        return maxBodySize.asLongValue();
    }

    // before Quarkus's authentication (order -150, which may finish on a worker thread: the guard must be in the
    // connection before the body is decoded) and its own body-size check (order -2)
    void routes(@Observes Router router) {
        router.route().order(-200).handler(this::admit).failureHandler(this::failed);
    }

    void admit(RoutingContext ctx) {
        install(ctx);
        String cl = ctx.request().getHeader(HttpHeaderNames.CONTENT_LENGTH);
        if (cl != null) {
            long n;
            try {
                n = Long.parseLong(cl.trim()); // Netty has refused anything but one non-negative decimal already
            } catch (NumberFormatException e) {
                n = -1;
            }
            if (n < 0) {
                answer(ctx, 400, "Content-Length must be a non-negative decimal number, got '" + Text.safe(cl) + "'");
                return;
            }
            if (n > limit()) {
                answer(ctx, 413, tooLarge(n));
                return;
            }
        }
        ctx.next();
    }

    private String tooLarge(long n) {
        return "request body of " + (n < 0 ? "more than " + limit() : n) + " bytes exceeds the limit of " + limit()
                + " bytes (kvpool.control.max-body-size)";
    }

    void failed(RoutingContext ctx) {
        Throwable f = ctx.failure();
        if (f instanceof AuthenticationFailedException) {
            ctx.response().putHeader(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"kvpool\"");
            answer(ctx, 401, "the credentials were refused: send Authorization: Bearer <token> from POST "
                    + "/api/v1/tokens, or Basic base64(user:password) with a valid account");
            return;
        }
        if (f instanceof HttpClosedException || ctx.response().closed() || ctx.response().ended()) {
            // the client went away, or the framing guard has answered and closed: nobody to tell
            LOG.debugf("request %s %s ended without an answer: %s", ctx.request().method(),
                    Text.safe(ctx.normalizedPath()), f);
            return;
        }
        if (ctx.statusCode() == 413) {
            answer(ctx, 413, tooLarge(-1));
            return;
        }
        ctx.next();
    }

    /** KVCM admin routes answer {@code {}} with the reason in a header; everything else a problem document. */
    static boolean kvcmRoute(String path) {
        return path != null && path.startsWith("/api/") && path.indexOf('/', 5) < 0
                && KvcmAdmin.RPCS.containsKey(path.substring(5));
    }

    static String body(boolean kvcm, int status, String message) {
        return kvcm ? "{}" : ProblemMappers.problemJson(status, message, null);
    }

    private static void answer(RoutingContext ctx, int status, String message) {
        HttpServerResponse r = ctx.response();
        if (r.headWritten()) {
            ctx.request().connection().close();
            return;
        }
        boolean kvcm = kvcmRoute(ctx.normalizedPath());
        boolean close = status == 413 || status == 400; // the rest of the body is not read
        r.setStatusCode(status).putHeader("X-KVPool-Error", Text.safe(message))
                .putHeader(HttpHeaderNames.CONTENT_TYPE, kvcm ? "application/json" : ProblemMappers.PROBLEM);
        if (close) {
            r.putHeader(HttpHeaderNames.CONNECTION, "close");
            r.endHandler(v -> ctx.request().connection().close());
        }
        r.end(body(kvcm, status, message));
    }

    /** Puts the framing guard into this request's connection, once per connection. */
    private void install(RoutingContext ctx) {
        if (!(ctx.request().connection() instanceof ConnectionBase c)) {
            return; // HTTP/2 or a test double: Vert.x frames those itself
        }
        ChannelPipeline p = c.channel().pipeline();
        FramingGuard g = (FramingGuard) p.get(FRAMING);
        if (g == null && p.get("handler") != null) {
            g = new FramingGuard(limit(), bodyTimeout.toNanos());
            // this request's head has passed already: whether its body is still to come is the request's to say
            g.inBody = !ctx.request().isEnded();
            p.addBefore("handler", FRAMING, g);
        }
        if (g != null) {
            g.kvcm = kvcmRoute(ctx.normalizedPath());
        }
    }

    /**
     * Sees each decoded request part before Vert.x does. Netty marks a part it could not decode (bad chunk framing)
     * and Vert.x then closes the connection without an answer; this answers 400 first. It also counts a body's bytes,
     * so a chunked body is refused (413) as soon as it passes the limit. Outbound, it notes whether a response has
     * begun: then nothing more can be written, and the connection is only closed.
     */
    static final class FramingGuard extends ChannelDuplexHandler {
        private final long limit;
        private final long bodyTimeoutNanos;
        private long bodyBytes;
        private boolean responseBegun;
        private boolean refused;
        /** A request's body has begun and not ended (the event loop's state: read and written there only). */
        boolean inBody;
        private long lastRead = System.nanoTime();
        private io.netty.util.concurrent.ScheduledFuture<?> watch;
        /** Whether the request being read is a KVCM admin route (set by {@link #install} at each request). */
        volatile boolean kvcm;

        FramingGuard(long limit, long bodyTimeoutNanos) {
            this.limit = limit;
            this.bodyTimeoutNanos = bodyTimeoutNanos;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            long period = Math.max(100_000_000L, bodyTimeoutNanos / 4);
            watch = ctx.executor().scheduleAtFixedRate(() -> {
                if (inBody && !refused && System.nanoTime() - lastRead > bodyTimeoutNanos) {
                    refuse(ctx, 408, "the request body stopped arriving: nothing for "
                            + bodyTimeoutNanos / 1_000_000_000 + " s (kvpool.control.body-timeout)");
                }
            }, period, period, java.util.concurrent.TimeUnit.NANOSECONDS);
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            if (watch != null) {
                watch.cancel(false);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            handlerRemoved(ctx);
            super.channelInactive(ctx);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            lastRead = System.nanoTime();
            if (refused) {
                ReferenceCountUtil.release(msg); // answered and closing: the rest is discarded
                return;
            }
            if (msg instanceof HttpRequest) {
                bodyBytes = 0;
                inBody = true;
            }
            if (msg instanceof HttpContent c) {
                if (c.decoderResult().isFailure()) {
                    ReferenceCountUtil.release(msg);
                    Throwable cause = c.decoderResult().cause();
                    refuse(ctx, 400, "malformed request body framing: "
                            + (cause == null ? "undecodable" : cause.getClass().getSimpleName() + ": " + cause.getMessage()));
                    return;
                }
                bodyBytes += c.content().readableBytes();
                if (bodyBytes > limit) {
                    ReferenceCountUtil.release(msg);
                    refuse(ctx, 413, "request body exceeds the limit of " + limit
                            + " bytes (kvpool.control.max-body-size)");
                    return;
                }
                if (c instanceof LastHttpContent) {
                    bodyBytes = 0;
                    inBody = false;
                }
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof HttpResponse) {
                responseBegun = true;
            }
            if (msg instanceof LastHttpContent) {
                responseBegun = false;
            }
            ctx.write(msg, promise);
        }

        private void refuse(ChannelHandlerContext ctx, int status, String message) {
            refused = true;
            inBody = false;
            LOG.debugf("refused a request from %s: %s", ctx.channel().remoteAddress(), message);
            if (responseBegun) {
                ctx.close();
                return;
            }
            String safe = Text.safe(message);
            byte[] body = HttpGuard.body(kvcm, status, message).getBytes(StandardCharsets.UTF_8);
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                    Unpooled.wrappedBuffer(body));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, kvcm ? "application/json" : ProblemMappers.PROBLEM)
                    .set(HttpHeaderNames.CONTENT_LENGTH, body.length).set(HttpHeaderNames.CONNECTION, "close")
                    .set("X-KVPool-Error", safe);
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
