package dev.kvpool.meta.kvcm;

import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.runtime.MetaRuntime;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * KVCM meta HTTP routes: {@code POST /api/<lowerCamelRpc>} with proto3 JSON in and out (§1.3–1.5). Unparsable
 * bodies get 400 with {@code {}}; every logical outcome is a 200 with the status in the header. Reads run on the
 * event loop (in-memory, no I/O); calls that append to the index journal run on a worker. Over a remote store
 * getCacheLocation of a known instance stays on the event loop too (asynchronous index read); other calls move
 * to a worker.
 */
@ApplicationScoped
public class KvcmHttpRoutes {
    private static final Buffer EMPTY_JSON = Buffer.buffer("{}");

    record Rpc(Supplier<Message.Builder> request, BiFunction<KvcmMeta, Message, Message> call, boolean blocking) {
    }

    @SuppressWarnings("unchecked")
    private static <Q extends Message> Rpc rpc(Supplier<Message.Builder> b, BiFunction<KvcmMeta, Q, Message> f,
                                                boolean blocking) {
        return new Rpc(b, (m, q) -> f.apply(m, (Q) q), blocking);
    }

    static final Map<String, Rpc> RPCS = Map.ofEntries(
            Map.entry("registerInstance", rpc(RegisterInstanceRequest::newBuilder, KvcmMeta::registerInstance, true)),
            Map.entry("getInstanceInfo", rpc(GetInstanceInfoRequest::newBuilder, KvcmMeta::getInstanceInfo, false)),
            Map.entry("getCacheMeta", rpc(GetCacheMetaRequest::newBuilder, KvcmMeta::getCacheMeta, false)),
            Map.entry("getCacheLocation", rpc(GetCacheLocationRequest::newBuilder, KvcmMeta::getCacheLocation, false)),
            Map.entry("startWriteCache", rpc(StartWriteCacheRequest::newBuilder, KvcmMeta::startWriteCache, true)),
            Map.entry("finishWriteCache", rpc(FinishWriteCacheRequest::newBuilder, KvcmMeta::finishWriteCache, true)),
            Map.entry("removeCache", rpc(RemoveCacheRequest::newBuilder, KvcmMeta::removeCache, true)),
            Map.entry("trimCache", rpc(TrimCacheRequest::newBuilder, KvcmMeta::trimCache, true)),
            Map.entry("getClusterInfo", rpc(GetClusterInfoRequest::newBuilder, KvcmMeta::getClusterInfo, false)),
            Map.entry("getCacheLocationLen", rpc(GetCacheLocationLenRequest::newBuilder, KvcmMeta::getCacheLocationLen, false)),
            Map.entry("getCacheLocationsByBackend", rpc(GetCacheLocationsByBackendRequest::newBuilder,
                    KvcmMeta::getCacheLocationsByBackend, false)),
            // engine-event APIs: answered by EngineReports (see answer()); on a worker (a snapshot may wait)
            Map.entry("reportEvent", rpc(ReportEventRequest::newBuilder, (m, q) -> null, true)),
            Map.entry("getHostCacheState", rpc(GetHostCacheStateRequest::newBuilder, (m, q) -> null, true)));

    @Inject
    MetaRuntime runtime;

    @Inject
    KvcmService kvcm;

    @Inject
    dev.kvpool.meta.runtime.MetaSettings settings;

    @Inject
    KvcmReports reports;
    long maxBody;

    @jakarta.annotation.PostConstruct
    void limits() {
        maxBody = settings.maxBodyBytes();
    }

    void routes(@Observes Router router) {
        router.post("/api/:rpc").handler(this::receive);
    }

    /**
     * Reads the raw body whatever its Content-Type: clients (and curl -d) often send JSON labelled as a form,
     * which a form-decoding body handler would reject.
     */
    void receive(RoutingContext ctx) {
        Rpc rpc = RPCS.get(ctx.pathParam("rpc"));
        if (rpc == null) {
            ctx.response().setStatusCode(404).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", "no KVCM meta RPC '" + Text.safe(ctx.pathParam("rpc")) + "'")
                    .end(EMPTY_JSON);
            return;
        }
        // api's HttpGuard has refused any Content-Length that is not one decimal number before this route
        String len = ctx.request().getHeader("Content-Length");
        long declared = len == null ? -1 : Long.parseLong(len.trim());
        if (declared > maxBody) {
            tooLarge(ctx);
            return;
        }
        // a declared length is a promise, not bytes: grow with what arrives (a few idle connections each
        // declaring 64 MiB must not reserve 64 MiB each)
        Buffer body = Buffer.buffer((int) Math.min(INITIAL_BUFFER, Math.max(256, declared)));
        ctx.request().handler(chunk -> {
            if (body.length() + chunk.length() > maxBody) {
                tooLarge(ctx);
            } else {
                body.appendBuffer(chunk);
            }
        });
        // a body that stops arriving is answered 408 by api's HttpGuard (kvpool.http.body-timeout)
        ctx.request().endHandler(v -> {
            if (!ctx.response().ended()) {
                handle(ctx, rpc, body);
            }
        });
        ctx.request().resume();
    }

    /** The first allocation for a body; it grows with the bytes that really arrive. */
    static final int INITIAL_BUFFER = 64 * 1024;

    private void tooLarge(RoutingContext ctx) {
        if (!ctx.response().ended()) {
            ctx.response().setStatusCode(413).putHeader("Content-Type", "application/json")
                    .putHeader("Connection", "close")
                    .putHeader("X-KVPool-Error", "request body exceeds " + maxBody + " bytes").end(EMPTY_JSON);
        }
    }

    void handle(RoutingContext ctx, Rpc rpc, Buffer body) {
        Message parsed;
        try {
            // parse the received bytes where they are (a 1,024-key request is ~30 KB)
            io.netty.buffer.ByteBuf bb = body.getByteBuf();
            parsed = (bb.hasArray()
                    ? ProtoJson.merge(bb.array(), bb.arrayOffset() + bb.readerIndex(), bb.readableBytes(), rpc.request().get())
                    : ProtoJson.merge(body.getBytes(), rpc.request().get())).build();
            if (parsed instanceof ReportEventRequest q && q.getStorageTypeValue() == 0 && q.getEventsCount() > 0) {
                parsed = ReportJson.legacyStorageType(body.getBytes(), q);
            }
        } catch (ProtoJsonException e) {
            ctx.response().setStatusCode(400).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", sanitize(e.getMessage())).end(EMPTY_JSON);
            return;
        }
        Message request = parsed;
        // nothing is built yet, or usage and slots are being rebuilt (lookups are answered from the loaded index)
        if (!runtime.ready() && !(runtime.lookupsOpen() && KvcmMeta.isLookup(request))) {
            if (request instanceof GetClusterInfoRequest q) {
                respond(ctx, ProtoJson.print(KvcmMeta.clusterInfoWhileStarting(runtime.nodeId(), q)));
            } else {
                refuse(ctx, request, dev.kvpool.meta.auth.MetaAuth.starting(runtime.phase().label));
            }
            return;
        }
        // a group or instance not known here: fresh configuration first (bounded), then the token check decides
        var fresh = FreshGate.check(runtime.fresh(), runtime.registry(), request);
        if (fresh != null) {
            io.vertx.core.Context here = ctx.vertx().getOrCreateContext();
            fresh.whenComplete((refusal, e) -> here.runOnContext(v -> {
                if (ctx.response().ended() || ctx.response().closed()) {
                    return;
                }
                if (e != null) {
                    ctx.fail(e);
                } else if (refusal != null) {
                    refuse(ctx, request, refusal);
                } else {
                    checked(ctx, rpc, request);
                }
            }));
            return;
        }
        checked(ctx, rpc, request);
    }

    /** After the freshness step: the token check, then the call. */
    private void checked(RoutingContext ctx, Rpc rpc, Message request) {
        dev.kvpool.meta.auth.MetaAuth auth = runtime.auth();
        String authorization = ctx.request().getHeader("Authorization");
        if (runtime.remoteStore()) {
            if (request instanceof GetCacheLocationRequest q && runtime.locatesAsync(q.getInstanceId())) {
                // a known instance: the check is in memory and the index read is asynchronous, so no worker hop
                var refusal = auth == null ? null : auth.checkMeta(authorization, request);
                if (refusal != null) {
                    refuse(ctx, request, refusal);
                    return;
                }
                kvcm.meta().getCacheLocationJsonAsync(q).whenComplete((json, e) -> {
                    if (e != null) {
                        ctx.fail(e);
                    } else {
                        respond(ctx, json);
                    }
                });
                return;
            }
            // the check may read the shared store and the call does: one hop off the event loop for both
            ctx.vertx().executeBlocking(() -> {
                var refusal = auth == null ? null : auth.checkMeta(authorization, request);
                return refusal != null ? refusal : answer(rpc, request);
            }, false).onSuccess(out -> {
                if (out instanceof dev.kvpool.meta.auth.MetaAuth.Refusal r) {
                    refuse(ctx, request, r);
                } else {
                    respond(ctx, (byte[]) out);
                }
            }).onFailure(ctx::fail);
            return;
        }
        if (auth != null) {
            var refusal = auth.checkMeta(authorization, request);
            if (refusal != null) {
                refuse(ctx, request, refusal);
                return;
            }
        }
        call(ctx, rpc, request);
    }

    private byte[] answer(Rpc rpc, Message request) {
        return switch (request) {
            case GetCacheLocationRequest q -> kvcm.meta().getCacheLocationJson(q);
            case StartWriteCacheRequest q -> kvcm.meta().startWriteCacheJson(q);
            case ReportEventRequest q -> ProtoJson.print(reports.reportEvent(q));
            case GetHostCacheStateRequest q -> reports.getHostCacheStateJson(q);
            default -> ProtoJson.print(rpc.call().apply(kvcm.meta(), request));
        };
    }

    /**
     * A refused call keeps KVCM's envelope (§1.5: HTTP 200, the outcome in header.status); the headers say why
     * for people and tools that look.
     */
    private static void refuse(RoutingContext ctx, Message request, dev.kvpool.meta.auth.MetaAuth.Refusal r) {
        var trace = request.getDescriptorForType().findFieldByName("trace_id");
        var header = dev.kvpool.meta.auth.MetaAuth.header(trace == null ? "" : String.valueOf(request.getField(trace)), r);
        byte[] h = ProtoJson.print(header);
        Buffer out = Buffer.buffer(h.length + 16).appendString("{\"header\":").appendBytes(h).appendString("}");
        if (r.unauthenticated()) {
            ctx.response().putHeader("WWW-Authenticate", "Bearer realm=\"kvpool\"");
        }
        ctx.response().setStatusCode(200).putHeader("Content-Type", "application/json")
                .putHeader("X-KVPool-Error", sanitize(r.message())).end(out);
    }

    /** The embedded store: in-process reads answer on the event loop; writes move to a worker. */
    private void call(RoutingContext ctx, Rpc rpc, Message request) {
        if (request instanceof GetCacheLocationRequest q) {
            respond(ctx, kvcm.meta().getCacheLocationJson(q)); // the hot path skips building messages
        } else if (rpc.blocking()) {
            ctx.vertx().executeBlocking(() -> answer(rpc, request), false)
                    .onSuccess(bytes -> respond(ctx, bytes))
                    .onFailure(ctx::fail);
        } else {
            respond(ctx, ProtoJson.print(rpc.call().apply(kvcm.meta(), request)));
        }
    }

    /** The bytes are wrapped, not copied: a large answer (~170 KB for 1,024 blocks) is not duplicated again. */
    private static void respond(RoutingContext ctx, byte[] json) {
        ctx.response().setStatusCode(200).putHeader("Content-Type", "application/json")
                .end(Buffer.buffer(io.netty.buffer.Unpooled.wrappedBuffer(json)));
    }

    /**
     * The 400 body must stay exactly {} (clients parse it); the reason travels in a header instead, escaped: a
     * control character in a header value makes Netty refuse the whole response, and the client would wait forever.
     */
    private static String sanitize(String s) {
        return s == null ? "unparsable JSON" : Text.safe(s);
    }
}
