package dev.kvpool.control.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.ws.rs.core.Response;
import java.net.ServerSocket;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A database that cannot be reached is a 503 the caller may retry, not a 500 blamed on nothing in particular. */
class ProblemMappersTest {

    @Test
    void aRefusedDatabaseConnectionIs503WithRetryAfter() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/kvpool";
        SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url, "u", "p"),
                "the real PostgreSQL driver refused");
        var e = new org.hibernate.exception.JDBCConnectionException("Unable to acquire JDBC Connection", refused);

        Response r = new ProblemMappers().unexpected(e);
        assertEquals(503, r.getStatus());
        assertEquals("5", r.getHeaderString("Retry-After"));
        @SuppressWarnings("unchecked")
        String detail = (String) ((Map<String, Object>) r.getEntity()).get("detail");
        assertTrue(detail.startsWith("database unavailable: ") && detail.contains(Integer.toString(port)), detail);
    }

    @Test
    void otherFailuresStay500() {
        assertNull(ProblemMappers.databaseUnavailable(new RuntimeException(new SQLException("syntax error", "42601"))));
        assertEquals(500, new ProblemMappers().unexpected(new IllegalStateException("bug")).getStatus());
    }
}
