package dev.kvpool.api.http;

import dev.kvpool.api.naming.Text;
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
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.net.impl.ConnectionBase;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * What every HTTP request of every service meets before authentication and its route (a bean here, found through
 * this module's index, so the three services share it). It answers, in the service's own words ({@link Answers}),
 * what the framework would otherwise refuse without a word or not at all, and closes the connection after each:
 *
 * <ul>
 *   <li>a transfer coding other than a lone {@code chunked}, a Content-Length given twice or not a decimal number:
 *   400 (two parties that read such a message differently is how requests are smuggled, RFC 9112 §6.1; Netty itself
 *   drops a Content-Length sent beside {@code chunked}, as §6.3 allows, and reads chunks);</li>
 *   <li>a declared Content-Length above {@code quarkus.http.limits.max-body-size}: 413 naming both numbers, before a
 *   byte of the body is read, so nothing is allocated for a length that is only declared;</li>
 *   <li>a chunked body that grows past the limit: 413 as soon as it does;</li>
 *   <li>bad chunked framing (a size that is not hex or overflows, data past a chunk): 400 naming the fault. Vert.x
 *   reports it on the connection and closes it at once, before the route has run (authentication is asynchronous),
 *   so an answer through the request's API never leaves: this one is written to the channel;</li>
 *   <li>a body that stops arriving for {@code kvpool.http.body-timeout}: 408, so a client that stalls mid-body holds
 *   no connection for long.</li>
 * </ul>
 */
@Singleton
public class HttpGuard {
    private static final Logger LOG = Logger.getLogger(HttpGuard.class);
    /** The Netty handler's name in each connection's pipeline (installed once, before Vert.x's own handler). */
    static final String FRAMING = "kvpool-framing-guard";
    /**
     * Before Quarkus' authentication (order -150, which may finish on a worker thread: the framing handler must be
     * in the connection before the body is decoded) and its own body-size check (order -2).
     */
    public static final int ORDER = -200;

    /** How a service words a refusal: the content type and body of an answer to a request for {@code path}. */
    public interface Answers {
        Answer answer(String path, int status, String message);
    }

    public record Answer(String contentType, String body) {
    }

    @ConfigProperty(name = "quarkus.http.limits.max-body-size", defaultValue = "10240K")
    MemorySize maxBodySize;
    @ConfigProperty(name = "kvpool.http.body-timeout", defaultValue = "30s")
    Duration bodyTimeout;
    @Inject
    Instance<Answers> serviceAnswers;
    private Answers answers;

    /** The largest request body accepted, in bytes. */
    public long limit() {
        return maxBodySize.asLongValue();
    }

    void routes(@Observes Router router) {
        answers = serviceAnswers.isResolvable() ? serviceAnswers.get() : HttpGuard::defaultAnswer;
        router.route().order(ORDER).handler(this::admit);
    }

    /**
     * KVCM's routes ({@code /api/<rpc>}) answer an unreadable request with exactly {@code {}} and the reason in
     * {@code X-KVPool-Error} (its clients parse that); everything else a problem document.
     */
    public static Answer defaultAnswer(String path, int status, String message) {
        if (kvcmRoute(path)) {
            return new Answer("application/json", "{}");
        }
        return new Answer("application/problem+json", "{\"type\":\"about:blank\",\"title\":\""
                + HttpResponseStatus.valueOf(status).reasonPhrase() + "\",\"status\":" + status + ",\"detail\":"
                + quoted(Text.safe(message)) + "}");
    }

    /** {@code /api/<name>}: a KVCM route (KVPool's own REST lives under {@code /api/v1/}). */
    public static boolean kvcmRoute(String path) {
        return path != null && path.startsWith("/api/") && path.length() > 5 && path.indexOf('/', 5) < 0
                && !path.equals("/api/v1");
    }

    void admit(RoutingContext ctx) {
        HttpServerRequest req = ctx.request();
        String refusal = refusal(req.headers().getAll("Transfer-Encoding"), req.headers().getAll("Content-Length"));
        if (refusal != null) {
            answer(ctx, 400, refusal);
            return;
        }
        String cl = req.getHeader(HttpHeaderNames.CONTENT_LENGTH);
        if (cl != null && Long.parseLong(cl.trim()) > limit()) { // a decimal of at most 18 digits: checked above
            answer(ctx, 413, "request body of " + cl.trim() + " bytes exceeds the limit of " + limit()
                    + " bytes (quarkus.http.limits.max-body-size)");
            return;
        }
        install(ctx);
        ctx.next();
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

    private void answer(RoutingContext ctx, int status, String message) {
        HttpServerResponse r = ctx.response();
        if (r.headWritten()) {
            ctx.request().connection().close();
            return;
        }
        Answer a = answers.answer(ctx.request().path(), status, message);
        // the rest of the body is not read: the connection goes once the answer is out
        r.setStatusCode(status).putHeader("X-KVPool-Error", Text.safe(message))
                .putHeader(HttpHeaderNames.CONTENT_TYPE, a.contentType()).putHeader(HttpHeaderNames.CONNECTION, "close");
        r.endHandler(v -> ctx.request().connection().close());
        r.end(a.body());
    }

    /** Puts the framing handler into this request's connection, once per connection. */
    private void install(RoutingContext ctx) {
        if (!(ctx.request().connection() instanceof ConnectionBase c)) {
            return; // HTTP/2 or a test double: Vert.x frames those itself
        }
        ChannelPipeline p = c.channel().pipeline();
        FramingGuard g = (FramingGuard) p.get(FRAMING);
        if (g == null && p.get("handler") != null) {
            g = new FramingGuard(limit(), bodyTimeout.toNanos(), answers);
            // this request's head has passed already: whether its body is still to come is the request's to say
            g.inBody = !ctx.request().isEnded();
            p.addBefore("handler", FRAMING, g);
        }
        if (g != null) {
            g.path = ctx.request().path();
        }
    }

    private static String quoted(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /**
     * Sees each decoded request part before Vert.x does. Netty marks a part it could not decode (bad chunk framing)
     * and Vert.x then closes the connection without an answer; this answers 400 first. It also counts a body's
     * bytes, so a chunked body is refused (413) as soon as it passes the limit, and watches for a body that stops
     * arriving (408). Outbound, it notes whether a response has begun: then nothing more can be written, and the
     * connection is only closed.
     */
    static final class FramingGuard extends ChannelDuplexHandler {
        private final long limit;
        private final long bodyTimeoutNanos;
        private final Answers answers;
        private long bodyBytes;
        private boolean responseBegun;
        private boolean refused;
        /** A request's body has begun and not ended (the event loop's state: read and written there only). */
        boolean inBody;
        private long lastRead = System.nanoTime();
        private io.netty.util.concurrent.ScheduledFuture<?> watch;
        /** The path of the request being read, for the wording of an answer (set at each request). */
        volatile String path;

        FramingGuard(long limit, long bodyTimeoutNanos, Answers answers) {
            this.limit = limit;
            this.bodyTimeoutNanos = bodyTimeoutNanos;
            this.answers = answers;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            long period = Math.max(100_000_000L, bodyTimeoutNanos / 4);
            watch = ctx.executor().scheduleAtFixedRate(() -> {
                if (inBody && !refused && System.nanoTime() - lastRead > bodyTimeoutNanos) {
                    refuse(ctx, 408, "the request body stopped arriving: nothing for "
                            + bodyTimeoutNanos / 1_000_000 + " ms (kvpool.http.body-timeout)");
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
                            + " bytes (quarkus.http.limits.max-body-size)");
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
            Answer a = answers.answer(path, status, message);
            byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                    Unpooled.wrappedBuffer(body));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, a.contentType())
                    .set(HttpHeaderNames.CONTENT_LENGTH, body.length).set(HttpHeaderNames.CONNECTION, "close")
                    .set("X-KVPool-Error", Text.safe(message));
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
