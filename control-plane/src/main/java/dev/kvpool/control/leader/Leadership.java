package dev.kvpool.control.leader;

import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.security.SecureRandom;
import java.util.Collections;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * This replica's view of the control plane's leader election ({@link LeaseElector}: a lease row in the database,
 * self-fenced). Work that must run once across replicas asks {@link #isLeader()} or registers a listener; KVCM's
 * CheckHealth, GetManagerClusterInfo and LeaderDemote read and drive it; {@code GET /api/v1/leader} shows it.
 * Metrics: {@code kvpool_control_leader} (1 while leading) and {@code kvpool_control_leader_transitions_total}
 * (tag {@code direction} = gained / lost).
 */
@ApplicationScoped
public class Leadership {
    private static final Logger LOG = Logger.getLogger(Leadership.class);
    private static final String ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";

    @Inject
    AgroalDataSource dataSource;
    @Inject
    MeterRegistry registry;
    @ConfigProperty(name = "kvpool.control.leader.lease-ms", defaultValue = "10000")
    long leaseMs;
    @ConfigProperty(name = "kvpool.control.leader.loop-interval-ms", defaultValue = "1000")
    long loopMs;
    @ConfigProperty(name = "kvpool.control.leader.safety-margin-ms")
    Optional<Long> marginMs;
    @ConfigProperty(name = "kvpool.control.leader.renew-timeout-ms")
    Optional<Long> renewTimeoutMs;
    @ConfigProperty(name = "kvpool.control.leader.node-id")
    Optional<String> nodeIdConfig;
    @ConfigProperty(name = "kvpool.control.leader.advertised-host")
    Optional<String> advertisedHost;
    @ConfigProperty(name = "quarkus.http.port", defaultValue = "6492")
    int httpPort;

    private volatile LeaseElector elector;
    private volatile String nodeId;
    private volatile long campaignDelayMs;
    private Counter gained, lost;

    /** Before the rest of the start-up observers, so a single replica leads as early as possible. */
    void start(@Observes @Priority(10) StartupEvent ev) {
        LeaseElector.Settings d = LeaseElector.Settings.of(nodeId(), leaseMs, loopMs);
        LeaseElector.Settings s = new LeaseElector.Settings(d.nodeId(), leaseMs, loopMs,
                marginMs.filter(m -> m > 0).orElse(d.marginMs()), renewTimeoutMs.filter(m -> m > 0).orElse(d.renewTimeoutMs()));
        gained = Counter.builder("kvpool.control.leader.transitions").tag("direction", "gained")
                .description("times this replica became or stopped being the control-plane leader").register(registry);
        lost = Counter.builder("kvpool.control.leader.transitions").tag("direction", "lost")
                .description("times this replica became or stopped being the control-plane leader").register(registry);
        Gauge.builder("kvpool.control.leader", this, l -> l.isLeader() ? 1 : 0)
                .description("1 while this replica is the control-plane leader").register(registry);
        LeaseElector e = new LeaseElector(dataSource, s);
        e.addListener(new LeaseElector.Listener() {
            @Override
            public void gained(long epoch) {
                gained.increment();
            }

            @Override
            public void lost(long epoch, String why) {
                lost.increment();
            }
        });
        elector = e;
        LOG.infof("leader election: node %s, lease %d ms, loop %d ms, safety margin %d ms, renew timeout %d ms",
                s.nodeId(), s.leaseMs(), s.loopMs(), s.marginMs(), s.renewTimeoutMs());
        e.start();
    }

    void stop(@Observes ShutdownEvent ev) {
        LeaseElector e = elector;
        if (e != null) {
            e.close(); // a leader hands the lease back, so a replica takes over without waiting for the expiry
        }
    }

    /** Registers for gain/loss, called on the elector's event thread in order (not before start-up). */
    public void addListener(LeaseElector.Listener l) {
        elector().addListener(l);
    }

    private LeaseElector elector() {
        LeaseElector e = elector;
        if (e == null) {
            throw new IllegalStateException("leader election has not started");
        }
        return e;
    }

    public boolean isLeader() {
        LeaseElector e = elector;
        return e != null && e.isLeader();
    }

    public long epoch() {
        LeaseElector e = elector;
        return e == null ? 0 : e.epoch();
    }

    public String leaderNodeId() {
        LeaseElector e = elector;
        return e == null ? "" : e.leaderNodeId();
    }

    public long leaseExpiresAtMs() {
        LeaseElector e = elector;
        return e == null ? 0 : e.leaseExpiresAtMs();
    }

    public long lastLoopMillis() {
        LeaseElector e = elector;
        return e == null ? 0 : e.lastLoopMillis();
    }

    public LeaseElector.Settings settings() {
        return elector().settings();
    }

    /**
     * Healthy while the election loop is fresh (an attempt finished within max(3 loops, half a lease)) and the last
     * one reached the database.
     */
    public boolean healthy() {
        LeaseElector e = elector;
        if (e == null) {
            return false;
        }
        long stale = Math.max(3 * loopMs, leaseMs / 2);
        return e.dbReachable() && System.currentTimeMillis() - e.lastLoopMillis() <= stale;
    }

    public String lastError() {
        LeaseElector e = elector;
        return e == null ? "not started" : e.lastError();
    }

    public long campaignDelayLeftMs() {
        LeaseElector e = elector;
        return e == null ? 0 : e.campaignDelayLeftMs();
    }

    /** KVCM's per-node campaign delay (in memory, default 0), applied by the next demote. */
    public long campaignDelayMs() {
        return campaignDelayMs;
    }

    public void campaignDelayMs(long ms) {
        campaignDelayMs = ms;
    }

    /** Steps down now, releases the lease and waits the campaign delay; false when not the leader. */
    public boolean demote() {
        LeaseElector e = elector;
        return e != null && e.demote(campaignDelayMs);
    }

    /**
     * Waits up to {@code maxMs} for this replica to lead, but only while no other replica is known to lead (start-up,
     * a demote's campaign delay on a lone replica): a follower of a live leader answers at once.
     */
    public boolean awaitLeader(long maxMs) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMs);
        while (!isLeader()) {
            String other = leaderNodeId();
            if ((!other.isEmpty() && !other.equals(nodeId())) || System.nanoTime() - end >= 0) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    /** {@code kvpool.control.leader.node-id} or {@code <advertised host>:<admin http port>_<16 random [a-z0-9]>}. */
    public String nodeId() {
        String n = nodeId;
        if (n == null) {
            synchronized (this) {
                if (nodeId == null) {
                    nodeId = nodeIdConfig.map(String::trim).filter(x -> !x.isEmpty())
                            .orElseGet(() -> host() + ":" + httpPort + "_" + random16());
                }
                n = nodeId;
            }
        }
        return n;
    }

    private String host() {
        return advertisedHost.map(String::trim).filter(x -> !x.isEmpty()).orElseGet(Leadership::firstNonLoopbackIpv4);
    }

    static String firstNonLoopbackIpv4() {
        try {
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!ni.isUp() || ni.isLoopback()) {
                    continue;
                }
                for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                    if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                        return a.getHostAddress();
                    }
                }
            }
        } catch (Exception e) {
            // no interfaces to read: fall back
        }
        return "127.0.0.1";
    }

    private static String random16() {
        SecureRandom r = new SecureRandom();
        StringBuilder s = new StringBuilder(16);
        for (int i = 0; i < 16; i++) {
            s.append(ID_CHARS.charAt(r.nextInt(ID_CHARS.length())));
        }
        return s.toString();
    }
}
