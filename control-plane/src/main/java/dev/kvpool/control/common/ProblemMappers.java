package dev.kvpool.control.common;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.kvpool.api.json.BodyErrors;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** Every REST error as RFC 9457 problem+json: {@code type, title, status, detail} and {@code field} when one is at fault. */
public class ProblemMappers {
    private static final Logger LOG = Logger.getLogger(ProblemMappers.class);
    public static final String PROBLEM = "application/problem+json";

    public static Response problem(int status, String title, String detail, String field) {
        return Response.status(status).type(PROBLEM).entity(document(status, title, detail, field)).build();
    }

    /** The same document as {@link #problem}, as text, for answers written outside JAX-RS (the HTTP guard). */
    public static String problemJson(int status, String detail, String field) {
        return Json.write(document(status, title(status), detail, field));
    }

    private static Map<String, Object> document(int status, String title, String detail, String field) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("type", "https://kvpool.dev/problems/" + title.toLowerCase().replace(' ', '-'));
        p.put("title", title);
        p.put("status", status);
        p.put("detail", detail);
        if (field != null) {
            p.put("field", field);
        }
        return p;
    }

    public static String title(int status) {
        return switch (status) {
            case 400 -> "Invalid request";
            case 401 -> "Unauthorized";
            case 403 -> "Forbidden";
            case 404 -> "Not found";
            case 408 -> "Request timeout";
            case 409 -> "Conflict";
            case 413 -> "Content too large";
            case 412 -> "Precondition failed";
            case 428 -> "Precondition required";
            case 503 -> "Service unavailable";
            default -> "Error";
        };
    }

    @ServerExceptionMapper
    public Response api(ApiException e) {
        return problem(e.status, title(e.status), e.getMessage(), e.field);
    }

    // Quarkus answers a body of the wrong shape with its own empty 400 (MismatchedInputException), a value no
    // creator takes with a 500 (InvalidDefinitionException) and wraps parse errors in a WebApplicationException:
    // these exact types take precedence over its mappers, and BodyErrors words what was wrong
    @ServerExceptionMapper({MismatchedInputException.class, InvalidDefinitionException.class,
            JsonProcessingException.class})
    public Response json(Exception e) {
        return body(e);
    }

    /** Anything else is a server fault: 500 problem+json naming it (and logged), not an empty body. */
    @ServerExceptionMapper
    public Response unexpected(RuntimeException e) {
        String db = databaseUnavailable(e);
        if (db != null) {
            // the database is down or restarting: the caller may retry, and the log needs no trace per request
            LOG.warnf("request failed, database unavailable: %s", db);
            return Response.fromResponse(problem(503, "Service unavailable", "database unavailable: " + db, null))
                    .header("Retry-After", "5").build();
        }
        LOG.error("request failed", e);
        return problem(500, "Error", "internal error: " + e.getClass().getSimpleName(), null);
    }

    /**
     * The driver's message (it names the host and port) when {@code e} comes from a lost or refused database
     * connection (SQLState class 08, whatever the database), else null.
     */
    public static String databaseUnavailable(Throwable e) {
        boolean connection = false;
        String driver = null, innermost = null;
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            if (t instanceof java.sql.SQLException sql && sql.getSQLState() != null && sql.getSQLState().startsWith("08")
                    || t instanceof org.hibernate.exception.JDBCConnectionException
                    || t instanceof java.sql.SQLTransientConnectionException) {
                connection = true;
            }
            if (t.getMessage() != null && !t.getMessage().isBlank()) {
                innermost = t.getMessage();
                if (driver == null && t instanceof java.sql.SQLException) {
                    driver = t.getMessage();
                }
            }
        }
        return connection ? (driver != null ? driver : innermost) : null;
    }

    private static Response body(Throwable e) {
        return BodyErrors.answer(e, f -> problem(400, "Invalid request", "request body: " + f.message(), f.field()),
                t -> {
                    LOG.error("failed to write a response", t);
                    return problem(500, "Error", "internal error: " + t.getClass().getSimpleName(), null);
                });
    }

    @ServerExceptionMapper
    public Response unauthorized(io.quarkus.security.UnauthorizedException e) {
        return problem(401, "Unauthorized", "send Authorization: Bearer <token> (POST /api/v1/tokens) or Basic "
                + "credentials", null);
    }

    @ServerExceptionMapper
    public Response forbidden(io.quarkus.security.ForbiddenException e) {
        return problem(403, "Forbidden", "this account's role may not use this operation", null);
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e) {
        if (BodyErrors.of(e) != null) {
            return body(e);
        }
        int s = e.getResponse().getStatus();
        return problem(s, title(s), e.getMessage(), null);
    }
}
