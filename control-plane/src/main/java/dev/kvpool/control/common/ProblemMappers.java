package dev.kvpool.control.common;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** Every REST error as RFC 9457 problem+json: {@code type, title, status, detail} and {@code field} when one is at fault. */
public class ProblemMappers {
    public static final String PROBLEM = "application/problem+json";

    public static Response problem(int status, String title, String detail, String field) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("type", "https://kvpool.dev/problems/" + title.toLowerCase().replace(' ', '-'));
        p.put("title", title);
        p.put("status", status);
        p.put("detail", detail);
        if (field != null) {
            p.put("field", field);
        }
        return Response.status(status).type(PROBLEM).entity(p).build();
    }

    static String title(int status) {
        return switch (status) {
            case 400 -> "Invalid request";
            case 401 -> "Unauthorized";
            case 403 -> "Forbidden";
            case 404 -> "Not found";
            case 409 -> "Conflict";
            case 412 -> "Precondition failed";
            case 428 -> "Precondition required";
            default -> "Error";
        };
    }

    @ServerExceptionMapper
    public Response api(ApiException e) {
        return problem(e.status, title(e.status), e.getMessage(), e.field);
    }

    @ServerExceptionMapper
    public Response json(JsonMappingException e) {
        String field = e.getPath().stream()
                .map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining(".")).replace(".[", "[");
        return problem(400, "Invalid request", "body does not fit the resource: " + e.getOriginalMessage(),
                field.isEmpty() ? null : field);
    }

    @ServerExceptionMapper
    public Response jsonParse(JsonProcessingException e) {
        return problem(400, "Invalid request", "malformed JSON: " + e.getOriginalMessage(), null);
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
        int s = e.getResponse().getStatus();
        return problem(s, title(s), e.getMessage(), null);
    }
}
