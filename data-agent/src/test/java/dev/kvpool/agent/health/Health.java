package dev.kvpool.agent.health;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.testing.Await;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.Predicate;

/** GETs of the agent's /q/health routes on the management interface (%test port 16389). */
final class Health {
    record Answer(int status, JsonNode body) {
        /** The one check's data (each route has one check of the agent's). */
        JsonNode data() {
            return body.path("checks").path(0).path("data");
        }

        @Override
        public String toString() {
            return status + " " + body;
        }
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper M = new ObjectMapper();

    private Health() {
    }

    static Answer get(String route) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:16389/q/health" + route))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), M.readTree(r.body()));
    }

    /** Polls {@code route} until {@code until} holds; the last answer in the failure message otherwise. */
    static Answer await(String route, long ms, Predicate<Answer> until) {
        Answer[] a = new Answer[1];
        if (!Await.within(Duration.ofMillis(ms), () -> until.test(a[0] = get(route)))) {
            throw new AssertionError("timed out after " + ms + " ms waiting on /q/health" + route + ": " + a[0]);
        }
        return a[0];
    }
}
