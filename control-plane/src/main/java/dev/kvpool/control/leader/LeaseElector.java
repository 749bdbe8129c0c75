package dev.kvpool.control.leader;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jboss.logging.Logger;

/**
 * Leader election through one lease row in the control plane's own database (table {@code leader_lease}, Flyway
 * {@code V4}), with self-fencing. Plain Java (a {@link DataSource} in, no CDI) so tests can run several electors in
 * one JVM; {@link Leadership} is the bean the application uses.
 *
 * <p><b>Why a lease row and not {@code pg_advisory_lock}.</b> An advisory lock belongs to a database session: it
 * needs one connection held for the whole term, outside the pool (a pooled connection goes back to the pool with the
 * lock still on it, or the pool validates/recycles it and the lock silently vanishes). When the leader's network to
 * PostgreSQL dies half-open, the server keeps the session, and so the lock, until TCP keepalive notices (minutes by
 * default), so nobody can take over; and the holder cannot tell when it lost the lock, because losing it is just the
 * server closing a session the holder cannot reach. A lease row is an ordinary autocommit {@code UPDATE} through the
 * pool: its expiry is computed from the database's clock ({@code now}), so no replica's clock decides; it carries a
 * monotonically increasing {@code epoch} (a fencing token: every new term, on a new holder or after an expiry, gets
 * a higher one); and the holder knows its own deadline: it counts itself leader only until the local monotonic time
 * at which its last successful renewal <em>started</em> plus the lease minus a safety margin. The database computed
 * the expiry after that start, so an isolated leader stops leading before any other replica can take the row.
 *
 * <p>The loop ({@code loopMs}) starts one attempt at a time on a virtual thread: campaign (take a free or expired
 * row, or renew our own) unless a demote's campaign delay is running, then read the row. A second, independent
 * check (the watchdog) steps down when the local deadline passes, whatever the attempt is doing: a renewal that hangs
 * (database unreachable, pool exhausted, a black-holed connection) cannot keep a replica leading. An attempt that
 * runs past the renewal timeout is interrupted (a virtual thread blocked in socket I/O gets its socket closed).
 */
public final class LeaseElector implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(LeaseElector.class);
    public static final String LEASE_NAME = "control-plane";

    /**
     * @param leaseMs how long a renewal holds the row (database clock)
     * @param loopMs how often the loop campaigns or renews
     * @param marginMs the leader steps down this long before its lease could expire (clock-rate drift, scheduling)
     * @param renewTimeoutMs an attempt running longer is interrupted; also the statements' query timeout
     */
    public record Settings(String nodeId, long leaseMs, long loopMs, long marginMs, long renewTimeoutMs) {
        public Settings {
            if (nodeId == null || nodeId.isBlank() || nodeId.length() > 255) {
                throw new IllegalArgumentException("leader node id must be 1-255 characters, got '" + nodeId + "'");
            }
            if (leaseMs < 200) {
                throw new IllegalArgumentException("leader lease must be at least 200 ms, got " + leaseMs);
            }
            if (loopMs < 10 || loopMs * 2 > leaseMs) {
                throw new IllegalArgumentException("leader loop interval must be 10 ms to half the lease (" + leaseMs
                        + " ms) so a leader renews at least twice per lease, got " + loopMs);
            }
            if (marginMs <= 0 || marginMs + loopMs >= leaseMs) {
                throw new IllegalArgumentException("leader safety margin must be > 0 and leave more than one loop "
                        + "interval of the lease, got " + marginMs + " (lease " + leaseMs + ", loop " + loopMs + ")");
            }
            if (renewTimeoutMs <= 0) {
                throw new IllegalArgumentException("leader renew timeout must be > 0, got " + renewTimeoutMs);
            }
        }

        /** The defaults for a lease and loop: margin a quarter of the lease, renew timeout a quarter too. */
        public static Settings of(String nodeId, long leaseMs, long loopMs) {
            return new Settings(nodeId, leaseMs, loopMs, Math.max(1, leaseMs / 4), Math.max(100, leaseMs / 4));
        }
    }

    /** Called on the elector's event thread, in order. */
    public interface Listener {
        void gained(long epoch);

        void lost(long epoch, String why);
    }

    private final DataSource ds;
    private final Settings s;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService timers;
    private final java.util.concurrent.ExecutorService events;
    private volatile String nowSql;

    private volatile boolean leading;
    private volatile long epoch;
    private volatile long leaderUntilNanos;
    private volatile String leaderNodeId = "";
    private volatile long leaseExpiresAtMs;
    private volatile long lastLoopMillis;
    private volatile boolean dbReachable;
    private volatile String lastError;
    private volatile long campaignBlockedUntilNanos = System.nanoTime();
    private volatile Thread attempt;
    private volatile long attemptStartedNanos;
    /** Bumped by demote and close: an attempt started before must not make this node leader again. */
    private long generation;
    private volatile boolean closed;

    public LeaseElector(DataSource ds, Settings s) {
        this.ds = ds;
        this.s = s;
        this.timers = Executors.newScheduledThreadPool(2, r -> {
            Thread t = new Thread(r, "kvpool-leader-loop");
            t.setDaemon(true);
            return t;
        });
        this.events = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kvpool-leader-events");
            t.setDaemon(true);
            return t;
        });
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    /** Campaigns at once, then every loop interval; the watchdog checks the deadline twice per margin. */
    public void start() {
        timers.scheduleWithFixedDelay(this::tick, 0, s.loopMs(), TimeUnit.MILLISECONDS);
        long check = Math.max(5, Math.min(s.loopMs(), s.marginMs()) / 2);
        timers.scheduleAtFixedRate(this::watchdog, check, check, TimeUnit.MILLISECONDS);
    }

    public Settings settings() {
        return s;
    }

    public String nodeId() {
        return s.nodeId();
    }

    /** Leader now: holds the lease and its local deadline has not passed. */
    public boolean isLeader() {
        return leading && System.nanoTime() - leaderUntilNanos < 0;
    }

    /** The current term's fencing token while leading; the last term seen otherwise. */
    public long epoch() {
        return epoch;
    }

    /** The holder of an unexpired lease as last read, "" when none; this node's id while it leads. */
    public String leaderNodeId() {
        return isLeader() ? s.nodeId() : leaderNodeId;
    }

    /** Epoch ms (database clock) at which the lease as last read expires. */
    public long leaseExpiresAtMs() {
        return leaseExpiresAtMs;
    }

    /** Epoch ms (local clock) at which the last election attempt finished, 0 before the first. */
    public long lastLoopMillis() {
        return lastLoopMillis;
    }

    /** Whether the last attempt reached the database. */
    public boolean dbReachable() {
        return dbReachable;
    }

    public String lastError() {
        return lastError;
    }

    /** Milliseconds the leader has left before it fences itself (0 when not leading). */
    public long leadingForMs() {
        return isLeader() ? TimeUnit.NANOSECONDS.toMillis(leaderUntilNanos - System.nanoTime()) : 0;
    }

    /** Milliseconds of campaign delay left after a demote. */
    public long campaignDelayLeftMs() {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(campaignBlockedUntilNanos - System.nanoTime()));
    }

    private void tick() {
        if (closed) {
            return;
        }
        Thread a = attempt;
        if (a != null && a.isAlive()) {
            // still running: a hung renewal must not pile up attempts; past the timeout it is interrupted
            if (System.nanoTime() - attemptStartedNanos > TimeUnit.MILLISECONDS.toNanos(s.renewTimeoutMs())) {
                a.interrupt();
            }
            return;
        }
        attemptStartedNanos = System.nanoTime();
        attempt = Thread.ofVirtual().name("kvpool-leader-attempt").start(this::attemptOnce);
    }

    private void watchdog() {
        if (leading && System.nanoTime() - leaderUntilNanos >= 0) {
            step(false, epoch, "the lease was not renewed in time (self-fenced " + s.marginMs()
                    + " ms before it could expire" + (lastError == null ? "" : "; last error: " + lastError) + ")");
        }
    }

    private String now(Connection c) throws SQLException {
        String n = nowSql;
        if (n == null) {
            String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
            // the database's clock in epoch ms; PostgreSQL's clock_timestamp() is the statement's own time
            n = product.contains("postgres") ? "cast(extract(epoch from clock_timestamp()) * 1000 as bigint)"
                    : "cast(extract(epoch from current_timestamp) * 1000 as bigint)";
            nowSql = n;
        }
        return n;
    }

    private int queryTimeoutSeconds() {
        return (int) Math.max(1, (s.renewTimeoutMs() + 999) / 1000);
    }

    private void attemptOnce() {
        long t0 = System.nanoTime();
        long gen;
        synchronized (this) {
            gen = generation;
        }
        boolean campaign = !closed && t0 - campaignBlockedUntilNanos >= 0;
        try (Connection c = ds.getConnection()) {
            String now = now(c);
            int updated = 0;
            if (campaign) {
                // take a free or expired row (new term: epoch + 1) or renew our own (same term while unexpired)
                try (PreparedStatement p = c.prepareStatement("update leader_lease set "
                        + "epoch = case when holder = ? and expires_at_ms > " + now + " then epoch else epoch + 1 end, "
                        + "holder = ?, expires_at_ms = " + now + " + ?, renewed_at_ms = " + now
                        + " where name = ? and (holder is null or holder = ? or expires_at_ms <= " + now + ")")) {
                    p.setQueryTimeout(queryTimeoutSeconds());
                    p.setString(1, s.nodeId());
                    p.setString(2, s.nodeId());
                    p.setLong(3, s.leaseMs());
                    p.setString(4, LEASE_NAME);
                    p.setString(5, s.nodeId());
                    updated = p.executeUpdate();
                }
            }
            String holder;
            long e, expires, dbNow;
            try (PreparedStatement p = c.prepareStatement("select holder, epoch, expires_at_ms, " + now
                    + " from leader_lease where name = ?")) {
                p.setQueryTimeout(queryTimeoutSeconds());
                p.setString(1, LEASE_NAME);
                try (ResultSet r = p.executeQuery()) {
                    if (!r.next()) {
                        throw new SQLException("leader_lease has no row '" + LEASE_NAME + "' (migration V4 missing?)");
                    }
                    holder = r.getString(1);
                    e = r.getLong(2);
                    expires = r.getLong(3);
                    dbNow = r.getLong(4);
                }
            }
            boolean mine = updated == 1 && s.nodeId().equals(holder);
            boolean release = false;
            synchronized (this) {
                leaseExpiresAtMs = expires;
                leaderNodeId = holder != null && expires > dbNow ? holder : "";
                dbReachable = true;
                lastError = null;
                long until = t0 + TimeUnit.MILLISECONDS.toNanos(s.leaseMs() - s.marginMs());
                if (mine && (gen != generation || closed)) {
                    release = true; // demoted (or closing) while this attempt ran: give the row back
                } else if (mine && System.nanoTime() - until < 0) {
                    if (leading && e != epoch) {
                        step(false, epoch, "a new term began (epoch " + e + ")");
                    }
                    epoch = e;
                    leaderUntilNanos = until;
                    if (!leading) {
                        step(true, e, "took the lease");
                    }
                } else if (leading && !mine) {
                    step(false, epoch, holder == null ? "the lease is free" : "the lease is held by " + holder);
                }
                if (!mine) {
                    epoch = Math.max(epoch, e);
                }
            }
            if (release) {
                release(c, e);
            }
        } catch (SQLException | RuntimeException ex) {
            dbReachable = false;
            lastError = ex.getClass().getSimpleName() + ": " + ex.getMessage();
            LOG.debugf("leader election attempt failed: %s", lastError);
        } finally {
            lastLoopMillis = System.currentTimeMillis();
        }
    }

    /** Caller holds the monitor. */
    private void step(boolean gain, long e, String why) {
        if (leading == gain) {
            return;
        }
        leading = gain;
        if (gain) {
            LOG.infof("control plane %s is now the leader (epoch %d): %s", s.nodeId(), e, why);
        } else {
            leaderUntilNanos = System.nanoTime();
            LOG.infof("control plane %s is no longer the leader (epoch %d): %s", s.nodeId(), e, why);
        }
        for (Listener l : listeners) {
            events.execute(() -> {
                try {
                    if (gain) {
                        l.gained(e);
                    } else {
                        l.lost(e, why);
                    }
                } catch (RuntimeException ex) {
                    LOG.warnf(ex, "leadership listener failed");
                }
            });
        }
    }

    /**
     * Steps down at once, gives the lease back so another replica can take it without waiting for the expiry, and
     * does not campaign for {@code campaignDelayMs}. False when this node is not the leader.
     */
    public boolean demote(long campaignDelayMs) {
        long e;
        synchronized (this) {
            if (!isLeader()) {
                return false;
            }
            generation++;
            // no campaign until the release is done: an attempt renewing between here and the release would
            // otherwise count itself leader of a row the release then frees
            campaignBlockedUntilNanos = System.nanoTime() + TimeUnit.DAYS.toNanos(365);
            e = epoch;
            step(false, e, "demoted (no campaign for " + campaignDelayMs + " ms)");
        }
        releaseQuietly(e);
        campaignBlockedUntilNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, campaignDelayMs));
        return true;
    }

    private void releaseQuietly(long e) {
        try (Connection c = ds.getConnection()) {
            release(c, e);
        } catch (SQLException | RuntimeException ex) {
            // unreachable database: the lease simply expires
            LOG.infof("could not release the leader lease (%s); it expires by itself", ex.getMessage());
        }
    }

    private void release(Connection c, long e) throws SQLException {
        String now = now(c);
        try (PreparedStatement p = c.prepareStatement("update leader_lease set holder = null, expires_at_ms = " + now
                + ", renewed_at_ms = " + now + " where name = ? and holder = ? and epoch = ?")) {
            p.setQueryTimeout(queryTimeoutSeconds());
            p.setString(1, LEASE_NAME);
            p.setString(2, s.nodeId());
            p.setLong(3, e);
            p.executeUpdate();
        }
        if (leaderNodeId.equals(s.nodeId())) {
            leaderNodeId = "";
        }
    }

    /** Stops campaigning; a leader steps down and releases the lease. */
    @Override
    public void close() {
        long e;
        boolean wasLeader;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            generation++;
            wasLeader = leading;
            e = epoch;
            step(false, e, "shutting down");
        }
        timers.shutdownNow();
        Thread a = attempt;
        if (a != null) {
            a.interrupt();
        }
        if (wasLeader) {
            releaseQuietly(e);
        }
        events.shutdown();
        try {
            events.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
