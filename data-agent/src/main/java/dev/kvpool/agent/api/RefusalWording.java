package dev.kvpool.agent.api;

import dev.kvpool.api.http.HttpGuard;
import io.vertx.core.json.JsonObject;
import jakarta.enterprise.context.ApplicationScoped;

/** The engine API's error body, {@code {"error": ...}}, for what api's {@link HttpGuard} refuses before a route. */
@ApplicationScoped
public class RefusalWording implements HttpGuard.Answers {
    @Override
    public HttpGuard.Answer answer(String path, int status, String message) {
        return new HttpGuard.Answer("application/json", new JsonObject().put("error", message).encode());
    }
}
