package dev.kvpool.control.testing;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;

/**
 * The real PostgreSQL on 127.0.0.1:5432, user {@code postgres} with password {@code postgres} (ignored where the server
 * trusts local TCP; {@code .ci/run} sets it on a fresh install): creates database {@code kvpool_cp_test} when it is
 * missing, so a fresh CI machine with only the server works. Flyway cleans and migrates it at boot.
 * {@code KVPOOL_TEST_PG_PASSWORD} overrides the password; {@code KVPOOL_TEST_PG_DB} (or {@code -Dkvpool.test.pg.db})
 * the database name, so two checkouts can run this suite at once on one server without wiping each other's tables
 * (Flyway cleans the database at boot).
 */
public class PostgresResource implements QuarkusTestResourceLifecycleManager {
    public static final String DB = database();

    private static String database() {
        String db = System.getProperty("kvpool.test.pg.db", System.getenv().getOrDefault("KVPOOL_TEST_PG_DB",
                "kvpool_cp_test"));
        if (!db.matches("[a-z][a-z0-9_]{0,62}")) { // it goes into a CREATE DATABASE statement
            throw new IllegalArgumentException("KVPOOL_TEST_PG_DB must be a lower-case SQL identifier, got " + db);
        }
        return db;
    }

    @Override
    public Map<String, String> start() {
        String host = System.getProperty("kvpool.test.pg.host", "127.0.0.1");
        String password = System.getenv().getOrDefault("KVPOOL_TEST_PG_PASSWORD", "postgres");
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + host + ":5432/postgres", "postgres",
                password);
             Statement s = c.createStatement()) {
            try (ResultSet r = s.executeQuery("select 1 from pg_database where datname = '" + DB + "'")) {
                if (!r.next()) {
                    s.executeUpdate("create database " + DB);
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("PostgreSQL at " + host + ":5432 is needed for the control-plane tests "
                    + "(user postgres, password postgres or trust auth): " + e.getMessage(), e);
        }
        return Map.of("quarkus.datasource.jdbc.url", "jdbc:postgresql://" + host + ":5432/" + DB,
                "quarkus.datasource.password", password);
    }

    @Override
    public void stop() {
    }
}
