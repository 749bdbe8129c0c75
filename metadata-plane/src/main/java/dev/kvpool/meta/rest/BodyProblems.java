package dev.kvpool.meta.rest;

import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.kvpool.api.json.BodyErrors;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * A REST body that is not what the resource takes answers 400 problem+json saying which field and why (Quarkus
 * alone answers an empty 400, or a 500 for a value no creator takes). Bodies are read strictly
 * (api's StrictJson): unknown fields, 1.5 for an integer and trailing garbage are refused.
 */
public class BodyProblems {
    private static final Logger LOG = Logger.getLogger(BodyProblems.class);

    /**
     * Parse errors arrive wrapped in a WebApplicationException, or bare where a resource takes a JsonNode (nesting
     * past the limit, a duplicate key); any other WebApplicationException keeps its own response.
     */
    @ServerExceptionMapper({MismatchedInputException.class, InvalidDefinitionException.class,
            WebApplicationException.class, com.fasterxml.jackson.core.JsonProcessingException.class})
    public Response body(Exception e) {
        return BodyErrors.answer(e, f -> BlockKeysResource.problem(400, "request body: " + f.message()).getResponse(),
                t -> t instanceof WebApplicationException w ? w.getResponse() : internal(t));
    }

    /** Anything else is a server fault: 500 problem+json naming it (and logged), not an empty body. */
    @ServerExceptionMapper
    public Response unexpected(RuntimeException e) {
        return internal(e);
    }

    private static Response internal(Throwable t) {
        LOG.error("failed to write a response", t);
        return BlockKeysResource.problem(500, "internal error: " + t.getClass().getSimpleName()
                + (t.getMessage() == null ? "" : ": " + t.getMessage())).getResponse();
    }
}
