package dev.kvpool.api.client;

/**
 * A KVCM HTTP route answered with a status other than 200. Logical errors travel inside a 200 response
 * ({@code header.status.code}), so this means a transport-level problem: 400 for a body the server could not
 * decode, 404 for an unknown route, 5xx.
 */
public final class KvcmHttpException extends RuntimeException {

    private final int statusCode;
    private final String body;

    public KvcmHttpException(String route, int statusCode, String body) {
        super("POST " + route + " answered HTTP " + statusCode + ": " + abbreviate(body));
        this.statusCode = statusCode;
        this.body = body;
    }

    public int statusCode() {
        return statusCode;
    }

    public String body() {
        return body;
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "…" : s;
    }
}
