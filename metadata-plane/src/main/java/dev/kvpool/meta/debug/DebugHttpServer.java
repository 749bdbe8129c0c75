package dev.kvpool.meta.debug;

import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.ErrorCode;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.api.proto.debug.RemoveFaultRequest;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.runtime.MetaRuntime;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.LaunchMode;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

/**
 * KVCM's debug HTTP listener (kvcm-compat §1.1, §1.3): its own port, meta HTTP + 3000 unless set, opened only when
 * the debug service is enabled. A listener of its own rather than routes on the meta port, because KVCM clients and
 * test harnesses address it by that port, and with it off nothing listens there at all.
 */
@ApplicationScoped
public class DebugHttpServer {
    private static final Logger LOG = Logger.getLogger(DebugHttpServer.class);
    private static final Buffer EMPTY_JSON = Buffer.buffer("{}");
    /** The debug requests are a few fields: a larger body is refused (413) before it is buffered. */
    static final long MAX_BODY = 64 * 1024;

    private record Rpc(Supplier<Message.Builder> request, Function<Message, Message> call) {
    }

    @Inject
    Vertx vertx;
    @Inject
    DebugSettings settings;
    @Inject
    MetaRuntime runtime;
    @Inject
    MeterRegistry meters;

    private final DebugCalls calls = new DebugCalls(FaultTable.PROCESS);
    private Map<String, Rpc> rpcs;
    private volatile HttpServer server;

    void start(@Observes StartupEvent ev) throws Exception {
        FaultTable.PROCESS.meters(meters);
        if (!settings.enabled()) {
            return;
        }
        rpcs = Map.of(
                "injectFault", new Rpc(InjectFaultRequest::newBuilder, m -> calls.injectFault((InjectFaultRequest) m)),
                "removeFault", new Rpc(RemoveFaultRequest::newBuilder, m -> calls.removeFault((RemoveFaultRequest) m)),
                "clearFaults", new Rpc(ClearFaultsRequest::newBuilder, m -> calls.clearFaults((ClearFaultsRequest) m)));
        Router router = Router.router(vertx);
        router.post("/api/:rpc").handler(BodyHandler.create(false).setBodyLimit(MAX_BODY)).handler(this::handle);
        int port = port();
        // a client that opens a connection and stops sending is dropped rather than held
        HttpServerOptions o = new HttpServerOptions().setHost(settings.host()).setPort(port)
                .setIdleTimeout(30).setIdleTimeoutUnit(TimeUnit.SECONDS);
        server = vertx.createHttpServer(o).requestHandler(router).listen().toCompletionStage().toCompletableFuture()
                .get(30, TimeUnit.SECONDS);
        LOG.warnf("KVCM debug service ON (kvcm.service.enable_debug_service): fault injection over HTTP on %s:%d and "
                + "gRPC on the meta gRPC port; never enable it in production", settings.host(), server.actualPort());
    }

    void stop(@Observes ShutdownEvent ev) throws Exception {
        HttpServer s = server;
        if (s != null) {
            server = null;
            s.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    /** The port the listener bound (0 when it is off). */
    public int boundPort() {
        HttpServer s = server;
        return s == null ? 0 : s.actualPort();
    }

    /** kvpool.meta.debug.http-port, else the meta HTTP port Quarkus binds + 3000 (KVCM's rule). */
    int port() {
        if (settings.httpPort().isPresent()) {
            return settings.httpPort().get();
        }
        var c = ConfigProvider.getConfig();
        String key = LaunchMode.current() == LaunchMode.TEST ? "quarkus.http.test-port" : "quarkus.http.port";
        int meta = c.getOptionalValue(key, Integer.class)
                .orElseGet(() -> c.getOptionalValue("kvpool.meta.http-port", Integer.class).orElse(6382));
        return meta + 3000;
    }

    void handle(RoutingContext ctx) {
        Rpc rpc = rpcs.get(ctx.pathParam("rpc"));
        if (rpc == null) {
            ctx.response().setStatusCode(404).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", "no KVCM debug RPC '" + Text.safe(ctx.pathParam("rpc")) + "'")
                    .end(EMPTY_JSON);
            return;
        }
        Message request;
        try {
            request = ProtoJson.merge(ctx.body().buffer() == null ? new byte[0] : ctx.body().buffer().getBytes(),
                    rpc.request().get()).build();
        } catch (ProtoJsonException e) {
            // §1.5: an unparsable body is 400 with exactly {}; the reason goes in a header
            ctx.response().setStatusCode(400).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", Text.safe(e.getMessage())).end(EMPTY_JSON);
            return;
        }
        String authorization = ctx.request().getHeader("Authorization");
        // the token check may fetch the signing key from the control plane: off the event loop
        ctx.vertx().<Object>executeBlocking(() -> {
            if (!runtime.ready()) {
                // until the plane has started it cannot tell whether tokens are enforced: nothing is let through
                return DebugCalls.response(ErrorCode.SERVICE_NOT_READY,
                        "the metadata plane is starting (" + runtime.phase().label + ")");
            }
            MetaAuth auth = runtime.auth();
            if (auth != null) {
                MetaAuth.Refusal r = auth.checkAdmin(authorization);
                if (r != null) {
                    return r;
                }
            }
            return rpc.call().apply(request);
        }, false).onSuccess(out -> {
            if (out instanceof MetaAuth.Refusal r) {
                // KVCM's later upstream answers its debug HTTP without a valid bearer token with 401 (§B.11)
                int status = r.unauthenticated() ? 401 : 403;
                if (r.unauthenticated()) {
                    ctx.response().putHeader("WWW-Authenticate", "Bearer realm=\"kvpool\"");
                }
                ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json")
                        .putHeader("X-KVPool-Error", Text.safe(r.unauthenticated() ? r.message()
                                : "permission denied: the debug service needs an admin or operator token"))
                        .end(EMPTY_JSON);
            } else {
                ctx.response().setStatusCode(200).putHeader("Content-Type", "application/json")
                        .end(Buffer.buffer(ProtoJson.print((Message) out)));
            }
        }).onFailure(ctx::fail);
    }
}
