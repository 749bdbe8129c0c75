package dev.kvpool.meta.rest;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.kvpool.api.json.BodyErrors;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * A REST body that is not what the resource takes answers 400 problem+json saying which field and why (Quarkus
 * alone answers an empty 400, or a 500 for a value no creator takes). Bodies are read strictly
 * (BodyErrors.strict): unknown fields, 1.5 for an integer and trailing garbage are refused.
 */
public class BodyProblems {
    private static final Logger LOG = Logger.getLogger(BodyProblems.class);

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
            return BlockKeysResource.problem(400, "request body: " + f.message()).getResponse();
        }
        if (otherwise != null) {
            return otherwise;
        }
        LOG.error("failed to write a response", e);
        return BlockKeysResource.problem(500, "internal error: " + e.getClass().getSimpleName()).getResponse();
    }
}
