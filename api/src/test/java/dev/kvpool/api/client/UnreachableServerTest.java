package dev.kvpool.api.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kvpool.api.agent.AgentClient;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A client that cannot reach its server says where and why (the JDK's ConnectException has no message). */
class UnreachableServerTest {
    @Test
    void theAddressAndTheKindOfFailureAreNamed() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        URI base = URI.create("http://127.0.0.1:" + port);
        KvcmHttpClient kvcm = new KvcmHttpClient(base, Duration.ofSeconds(5));
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> kvcm.post("/api/getCacheLocation", "{}".getBytes(StandardCharsets.UTF_8)));
        assertEquals("POST " + base + "/api/getCacheLocation failed: connection refused or unreachable", e.getMessage());
        // the agent client reads the agent's status when it opens
        e = assertThrows(UncheckedIOException.class, () -> new AgentClient(base, Duration.ofSeconds(5)));
        assertEquals(base + "/v1/status failed: connection refused or unreachable", e.getMessage());
    }
}
