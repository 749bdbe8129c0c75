package dev.kvpool.agent.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.kvpool.api.json.BodyErrors;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Map;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * A request body that is not what the engine API takes answers 400 {@code {"error": "keys[1]: expected an integer,
 * got 1.5"}} (Quarkus alone answers an empty 400, or a 500 for a string where an array belongs). Bodies are read
 * strictly (BodyErrors.strict): a key of 1.5 is not block 1, and a misspelt field is refused, not ignored.
 */
public class BodyErrorMappers {
    private static final Logger LOG = Logger.getLogger(BodyErrorMappers.class);

    @Singleton
    public static class StrictJson implements ObjectMapperCustomizer {
        @Override
        public void customize(ObjectMapper mapper) {
            BodyErrors.strict(mapper, true);
        }
    }

    @ServerExceptionMapper
    public Response mismatch(MismatchedInputException e) {
        return body(e, null);
    }

    @ServerExceptionMapper
    public Response definition(InvalidDefinitionException e) {
        return body(e, null);
    }

    /** Parse errors arrive wrapped; any other WebApplicationException keeps its own response. */
    @ServerExceptionMapper
    public Response web(WebApplicationException e) {
        return body(e, e.getResponse());
    }

    private static Response body(Throwable e, Response otherwise) {
        BodyErrors.Fault f = BodyErrors.of(e);
        if (f != null) {
            return error(400, f.message());
        }
        if (otherwise != null) {
            return otherwise;
        }
        LOG.error("failed to write a response", e);
        return error(500, "internal error: " + e.getClass().getSimpleName());
    }

    static Response error(int status, String message) {
        return Response.status(status).type(MediaType.APPLICATION_JSON).entity(Map.of("error", message)).build();
    }
}
