package dev.kvpool.control.kvcm;

import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.json.ProtoJsonException;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.http.HttpGuard;
import dev.kvpool.control.security.Caller;
import io.quarkus.vertx.http.runtime.security.QuarkusHttpUser;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * KVCM admin HTTP routes: {@code POST /api/<lowerCamelRpc>}, proto3 JSON in and out (§1.3-1.5). Unparsable bodies get
 * 400 {@code {}}; logical outcomes are 200 with the code in the header. KVPool addition: the caller must present
 * {@code Authorization: Bearer <token>} or {@code Basic}; missing or bad credentials answer 401 {@code {}}, a role
 * that may not call the RPC 403 {@code {}} (reason in {@code X-KVPool-Error}).
 */
@ApplicationScoped
public class KvcmAdminRoutes {
    private static final Buffer EMPTY_JSON = Buffer.buffer("{}");

    @Inject
    KvcmAdmin admin;
    @Inject
    HttpGuard guard;
    @ConfigProperty(name = "kvpool.control.kvcm-admin.auth-required", defaultValue = "true")
    boolean authRequired;

    void routes(@Observes Router router) {
        // the body is collected as it arrives, up to kvpool.control.max-body-size (api's HTTP guard answers 413 past it)
        router.post("/api/:rpc").handler(BodyHandler.create().setBodyLimit(guard.limit())).handler(this::handle);
    }

    void handle(RoutingContext ctx) {
        KvcmAdmin.Rpc rpc = KvcmAdmin.RPCS.get(ctx.pathParam("rpc"));
        if (rpc == null) {
            ctx.next(); // not a KVCM route (e.g. a REST path); let the rest of the router answer
            return;
        }
        Caller caller = ctx.user() instanceof QuarkusHttpUser u ? Caller.of(u.getSecurityIdentity()) : null;
        if (caller == null && !authRequired) {
            caller = Caller.SYSTEM;
        }
        Integer denied = KvcmAdmin.denied(rpc, caller);
        if (denied != null) {
            // every header value goes through Text.safe: Netty refuses a control character, and the response is then
            // never sent
            ctx.response().setStatusCode(denied).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", Text.safe(denied == 401
                            ? "send Authorization: Bearer <token> (POST /api/v1/tokens) or Basic credentials"
                            : "account '" + caller.name() + "' (" + caller.role() + ") may not call " + rpc.name()))
                    .end(EMPTY_JSON);
            return;
        }
        Message request;
        try {
            Buffer body = ctx.body().buffer();
            request = ProtoJson.merge(body == null ? new byte[] {'{', '}'} : body.getBytes(), rpc.request().get()).build();
        } catch (ProtoJsonException e) {
            // the parser's words may quote the client's bytes (control characters, non-ASCII): escaped, or the
            // response would never be sent
            ctx.response().setStatusCode(400).putHeader("Content-Type", "application/json")
                    .putHeader("X-KVPool-Error", Text.safe(e.getMessage() == null ? "unparsable JSON" : e.getMessage()))
                    .end(EMPTY_JSON);
            return;
        }
        final Caller who = caller == null ? new Caller("anonymous", "tenant", java.util.Set.of()) : caller;
        ctx.vertx().executeBlocking(() -> ProtoJson.print(admin.call(rpc, request, who)), false)
                .onSuccess(bytes -> ctx.response().setStatusCode(200).putHeader("Content-Type", "application/json")
                        .end(Buffer.buffer(bytes)))
                .onFailure(ctx::fail);
    }
}
