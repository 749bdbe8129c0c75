package dev.kvpool.agent.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.kvpool.api.json.BodyErrors;
import dev.kvpool.api.naming.Text;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Map;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * A request body that is not what the engine API takes answers 400 {@code {"error": "keys[1]: expected an integer,
 * got 1.5"}} (Quarkus alone answers an empty 400, or a 500 for a string where an array belongs). Bodies are read
 * strictly (api's StrictJson): a key of 1.5 is not block 1, and a misspelt field is refused, not ignored.
 */
public class BodyErrorMappers {
    private static final Logger LOG = Logger.getLogger(BodyErrorMappers.class);

    /**
     * Parse errors arrive wrapped in a WebApplicationException, or bare where Jackson's stream constraints refuse a
     * body (nesting past 64: a checked exception no RuntimeException mapper sees, which Quarkus answered 500 with its
     * stack trace); any other WebApplicationException keeps its status, with the agent's error body where RESTEasy
     * leaves it empty (an unknown route, a wrong method or Content-Type).
     */
    @ServerExceptionMapper({MismatchedInputException.class, InvalidDefinitionException.class,
            WebApplicationException.class, JsonProcessingException.class})
    public Response body(Exception e) {
        return BodyErrors.answer(e, f -> error(400, f.message()), t -> t instanceof WebApplicationException w
                ? described(w) : internal(t));
    }

    private static Response described(WebApplicationException w) {
        Response r = w.getResponse();
        if (r.hasEntity() || r.getStatus() >= 500) {
            return r;
        }
        String routes = "the engine API takes POST /v1/save, /v1/load, /v1/query, /v1/remove and GET /v1/status";
        String message = switch (r.getStatus()) {
            case 404 -> "no such route: " + routes;
            case 405 -> "method not allowed on this route: " + routes;
            case 415 -> "request body: Content-Type must be application/json";
            case 406 -> "the engine API answers application/json only";
            default -> Text.safe(w.getMessage());
        };
        Response.ResponseBuilder b = Response.status(r.getStatus()).type(MediaType.APPLICATION_JSON)
                .entity(Map.of("error", message));
        r.getHeaders().forEach((k, vs) -> {
            if (!k.equalsIgnoreCase("Content-Type") && !k.equalsIgnoreCase("Content-Length")) {
                vs.forEach(v -> b.header(k, v)); // Allow, for a 405
            }
        });
        return b.build();
    }

    /**
     * Anything else is the agent's fault, not the request's: 500 with what went wrong (client faults are
     * BadRequestExceptions, thrown where the request is checked, so an internal IllegalArgumentException is not
     * passed off as the caller's mistake).
     */
    @ServerExceptionMapper
    public Response unexpected(RuntimeException e) {
        return internal(e);
    }

    private static Response internal(Throwable t) {
        LOG.error("failed to write a response", t);
        return error(500, "internal error: " + t.getClass().getSimpleName()
                + (t.getMessage() == null ? "" : ": " + t.getMessage()));
    }

    /** The agent's error body; the message echoes client text, so control characters go out escaped ({@link Text#safe}). */
    static Response error(int status, String message) {
        return Response.status(status).type(MediaType.APPLICATION_JSON).entity(Map.of("error", Text.safe(message)))
                .build();
    }
}
