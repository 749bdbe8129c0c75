package dev.kvpool.control.leader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Electors in one JVM over the real PostgreSQL (own database {@code kvpool_leader_test}, dropped afterwards), each
 * with a data source the test can cut (throws) or hang (blocks, like an exhausted pool or a black-holed connection):
 * one leader at a time, take-over after expiry, demote with a campaign delay, growing epochs, and self-fencing before
 * the lease could be taken over. Plus the same SQL on H2 (the control plane's default database).
 */
class LeaderElectionIT {
    private static final String DB = "kvpool_leader_test";
    private static final String ADMIN_URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
    private static final String URL = "jdbc:postgresql://127.0.0.1:5432/" + DB;
    private final List<LeaseElector> electors = new ArrayList<>();

    enum Mode { OK, FAIL, HANG }

    /** A data source that opens plain JDBC connections, or fails, or blocks until interrupted. */
    static class Switchable implements DataSource {
        final String url;
        volatile Mode mode = Mode.OK;

        Switchable(String url) {
            this.url = url;
        }

        @Override
        public Connection getConnection() throws SQLException {
            switch (mode) {
                case FAIL -> throw new SQLException("connection refused (test: database cut off)");
                case HANG -> {
                    try {
                        while (mode == Mode.HANG) {
                            Thread.sleep(10);
                        }
                    } catch (InterruptedException e) {
                        throw new SQLException("interrupted while waiting for a connection (test: hung)");
                    }
                }
                default -> {
                }
            }
            return DriverManager.getConnection(url, "postgres", "postgres");
        }

        @Override
        public Connection getConnection(String u, String p) throws SQLException {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }

    /** Gains and losses with their wall-clock times. */
    static final class Log implements LeaseElector.Listener {
        final List<long[]> gains = new CopyOnWriteArrayList<>(); // {epoch, time}
        final List<long[]> losses = new CopyOnWriteArrayList<>();

        @Override
        public void gained(long epoch) {
            gains.add(new long[] {epoch, System.currentTimeMillis()});
        }

        @Override
        public void lost(long epoch, String why) {
            losses.add(new long[] {epoch, System.currentTimeMillis()});
        }
    }

    @BeforeAll
    static void createDatabase() throws Exception {
        try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "postgres"); Statement s = c.createStatement()) {
            s.executeUpdate("drop database if exists " + DB + " with (force)");
            s.executeUpdate("create database " + DB);
        }
        try (Connection c = DriverManager.getConnection(URL, "postgres", "postgres"); Statement s = c.createStatement()) {
            s.execute(migration());
        }
    }

    @AfterAll
    static void dropDatabase() throws Exception {
        try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "postgres"); Statement s = c.createStatement()) {
            s.executeUpdate("drop database if exists " + DB + " with (force)");
        }
    }

    static String migration() throws Exception {
        try (InputStream in = LeaderElectionIT.class.getResourceAsStream("/db/migration/V4__leader_lease.sql")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @BeforeEach
    void freeLease() throws Exception {
        try (Connection c = DriverManager.getConnection(URL, "postgres", "postgres"); Statement s = c.createStatement()) {
            s.executeUpdate("update leader_lease set holder = null, expires_at_ms = 0");
        }
    }

    @AfterEach
    void closeAll() {
        electors.forEach(LeaseElector::close);
        electors.clear();
    }

    private LeaseElector elector(String id, DataSource ds, long leaseMs, long loopMs, Log log) {
        LeaseElector e = new LeaseElector(ds, LeaseElector.Settings.of(id, leaseMs, loopMs));
        if (log != null) {
            e.addListener(log);
        }
        electors.add(e);
        e.start();
        return e;
    }

    private static void await(String what, long ms, BooleanSupplier ok) throws InterruptedException {
        long end = System.currentTimeMillis() + ms;
        while (!ok.getAsBoolean()) {
            if (System.currentTimeMillis() > end) {
                fail("not within " + ms + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }

    private static LeaseElector leader(List<LeaseElector> es) {
        LeaseElector found = null;
        for (LeaseElector e : es) {
            if (e.isLeader()) {
                if (found != null) {
                    fail("two leaders: " + found.nodeId() + " and " + e.nodeId());
                }
                found = e;
            }
        }
        return found;
    }

    private static long dbExpiry() throws SQLException {
        try (Connection c = DriverManager.getConnection(URL, "postgres", "postgres"); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("select expires_at_ms from leader_lease")) {
            r.next();
            return r.getLong(1);
        }
    }

    @Test
    void threeElectorsOneLeaderAtATimeAndAllAgreeWhoLeads() throws Exception {
        List<LeaseElector> es = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            es.add(elector("node-" + i, new Switchable(URL), 1000, 100, null));
        }
        await("a leader", 3000, () -> es.stream().anyMatch(LeaseElector::isLeader));
        long end = System.currentTimeMillis() + 3000;
        int samples = 0;
        while (System.currentTimeMillis() < end) {
            leader(es); // fails on two
            samples++;
            Thread.sleep(2);
        }
        LeaseElector l = leader(es);
        assertTrue(l != null && samples > 100, "a leader throughout, sampled " + samples + " times");
        await("every elector reports " + l.nodeId() + " as leader", 2000,
                () -> es.stream().allMatch(e -> e.leaderNodeId().equals(l.nodeId())));
        assertTrue(l.leaseExpiresAtMs() > System.currentTimeMillis(), "the leader's lease is in the future");
    }

    @Test
    void cutOffLeaderFencesItselfBeforeExpiryAndAnotherTakesOverAfterIt() throws Exception {
        Switchable[] ds = {new Switchable(URL), new Switchable(URL)};
        Log[] logs = {new Log(), new Log()};
        LeaseElector a = elector("a", ds[0], 1000, 100, logs[0]);
        await("a leads", 3000, a::isLeader);
        LeaseElector b = elector("b", ds[1], 1000, 100, logs[1]);
        Thread.sleep(300);
        assertFalse(b.isLeader(), "b follows while a renews");
        assertEquals("a", b.leaderNodeId());
        long epochA = a.epoch();

        ds[0].mode = Mode.FAIL; // a's renewals now fail
        await("a steps down", 2000, () -> !a.isLeader());
        long aLost = System.currentTimeMillis();
        long expiry = dbExpiry(); // a's last renewal's expiry (database clock; same host)
        assertTrue(aLost < expiry, "a stepped down " + (expiry - aLost) + " ms before its lease expired");
        await("b takes over", 3000, () -> b.isLeader() && !logs[1].gains.isEmpty());
        long bGained = logs[1].gains.getFirst()[1];
        assertTrue(bGained >= expiry - 20, "b took over only after the expiry: " + (bGained - expiry) + " ms");
        assertTrue(bGained > aLost, "never two leaders");
        assertTrue(b.epoch() > epochA, "new term, higher epoch: " + epochA + " → " + b.epoch());

        ds[0].mode = Mode.OK; // a comes back: it stays a follower and reports b
        await("a sees b", 2000, () -> a.leaderNodeId().equals("b"));
        Thread.sleep(300);
        assertFalse(a.isLeader());
        assertTrue(b.isLeader());
    }

    @Test
    void hungRenewalFencesItselfBeforeTheLeaseExpires() throws Exception {
        Switchable[] ds = {new Switchable(URL), new Switchable(URL)};
        Log[] logs = {new Log(), new Log()};
        LeaseElector a = elector("a", ds[0], 1200, 100, logs[0]);
        await("a leads", 3000, a::isLeader);
        LeaseElector b = elector("b", ds[1], 1200, 100, logs[1]);
        Thread.sleep(300);
        ds[0].mode = Mode.HANG; // the renewal blocks (exhausted pool, black-holed connection)
        await("a steps down although its renewal is stuck", 2000, () -> !a.isLeader());
        long aLost = System.currentTimeMillis();
        long expiry = dbExpiry();
        assertTrue(aLost < expiry, "a stepped down " + (expiry - aLost) + " ms before its lease expired");
        await("b takes over", 3000, () -> b.isLeader() && !logs[1].gains.isEmpty());
        assertTrue(logs[1].gains.getFirst()[1] >= expiry - 20, "b only after the expiry");
        assertFalse(a.dbReachable(), "a knows its attempts do not reach the database");
        ds[0].mode = Mode.OK;
    }

    @Test
    void demoteReleasesAtOnceAndWaitsTheCampaignDelay() throws Exception {
        Log la = new Log(), lb = new Log();
        LeaseElector a = elector("a", new Switchable(URL), 5000, 100, la);
        await("a leads", 3000, a::isLeader);
        LeaseElector b = elector("b", new Switchable(URL), 5000, 100, lb);
        Thread.sleep(300);
        long epoch = a.epoch();
        long t0 = System.currentTimeMillis();
        assertTrue(a.demote(3000));
        assertFalse(a.isLeader(), "not leader as soon as demote returns");
        assertFalse(a.demote(0), "a second demote: not leader");
        // released at once: b does not wait for the 5 s lease
        await("b takes over", 2000, b::isLeader);
        assertTrue(System.currentTimeMillis() - t0 < 2000);
        assertTrue(b.epoch() > epoch);
        // b demotes with no delay; a is still in its campaign delay, so b takes it back
        assertTrue(b.demote(0));
        await("b again", 2000, () -> b.isLeader() && lb.gains.size() == 2);
        assertTrue(la.gains.size() == 1, "a did not campaign during its delay");
        // after a's delay a may campaign again: alone, it leads
        b.close();
        await("a leads after its delay and b's shutdown release", 4000, () -> a.isLeader() && la.gains.size() == 2);
        assertTrue(System.currentTimeMillis() - t0 >= 3000, "not before a's 3 s campaign delay");
        long[] epochs = {la.gains.get(0)[0], lb.gains.get(0)[0], lb.gains.get(1)[0], la.gains.get(1)[0]};
        for (int i = 1; i < epochs.length; i++) {
            assertTrue(epochs[i] > epochs[i - 1], "epochs grow with every term: " + java.util.Arrays.toString(epochs));
        }
    }

    @Test
    void aLoneElectorRenewsWithinOneTermOnH2Too() throws Exception {
        String h2 = "jdbc:h2:mem:leader_" + System.nanoTime() + ";DB_CLOSE_DELAY=-1";
        try (Connection c = DriverManager.getConnection(h2, "sa", ""); Statement s = c.createStatement()) {
            s.execute(migration());
            DataSource ds = new Switchable(h2) {
                @Override
                public Connection getConnection() throws SQLException {
                    return DriverManager.getConnection(h2, "sa", "");
                }
            };
            Log log = new Log();
            LeaseElector e = elector("solo", ds, 600, 50, log);
            await("leads on H2", 3000, e::isLeader);
            Thread.sleep(1500); // more than two leases: renewals keep the same term
            assertTrue(e.isLeader());
            assertEquals(1, log.gains.size());
            assertEquals(1, e.epoch());
            assertTrue(e.leaseExpiresAtMs() > System.currentTimeMillis() - 100);
        }
    }
}
