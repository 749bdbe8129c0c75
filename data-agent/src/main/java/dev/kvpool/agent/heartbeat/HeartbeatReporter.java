package dev.kvpool.agent.heartbeat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Posts {@code POST /api/v1/services/heartbeat} every period on its own daemon thread, so that the control plane
 * lists this agent (UP, with its tiers' capacity, usage and blocks) in {@code GET /api/v1/services}. A heartbeat that
 * fails or is refused is logged as a warning the first time, at debug (FINE) after that, and the next one waits
 * twice as long each time (up to {@link #MAX_BACKOFF}, never less than the period); one accepted resets it. The
 * engine API never waits on a heartbeat: the post (bounded by the client's timeout) runs on this thread, and the
 * tiers are read through {@code tiers} as {@code /v1/status} reads them.
 */
public final class HeartbeatReporter implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(HeartbeatReporter.class.getName());
    public static final String PATH = "/api/v1/services/heartbeat";
    /** The longest wait between two heartbeats while the control plane refuses them or is out of reach. */
    public static final Duration MAX_BACKOFF = Duration.ofMinutes(5);
    /** The control plane's bounds: at most 16 tiers, counts up to 2^53. */
    static final int MAX_TIERS = 16;
    static final long MAX_COUNT = 1L << 53;

    /** How this agent describes itself: id {@code <agent id>-<port>}, its engine API's URL (optional). */
    public record Info(String id, String url, String version, Instant startedAt) {
    }

    /** One tier's usage; {@code capacityBytes} null where the tier has no fixed capacity. */
    public record TierUsage(String name, Long capacityBytes, long usedBytes, long blocks) {
    }

    @FunctionalInterface
    public interface Poster {
        ControlPlaneClient.Reply post(String path, JsonNode body) throws IOException;
    }

    private final Poster poster;
    private final Info info;
    private final Supplier<List<TierUsage>> tiers;
    private final Duration period;
    private int failures;
    private ScheduledExecutorService timer;

    public HeartbeatReporter(Poster poster, Info info, Supplier<List<TierUsage>> tiers, Duration period) {
        this.poster = poster;
        this.info = info;
        this.tiers = tiers;
        this.period = period.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : period;
    }

    /** The heartbeat body for {@code usage}: counts clamped to the control plane's bounds, at most 16 tiers. */
    ObjectNode body(List<TierUsage> usage) {
        ObjectNode b = ControlPlaneClient.JSON.createObjectNode();
        b.put("kind", "agent");
        b.put("id", info.id());
        if (info.url() != null) {
            b.put("url", info.url());
        }
        if (info.version() != null) {
            b.put("version", info.version());
        }
        if (info.startedAt() != null) {
            b.put("startedAt", info.startedAt().toString());
        }
        b.put("periodSeconds", Math.min(86_400, period.toSeconds()));
        ObjectNode t = b.putObject("tiers");
        for (TierUsage u : usage) {
            if (t.size() >= MAX_TIERS) {
                break;
            }
            ObjectNode n = t.putObject(u.name());
            long used = clamp(u.usedBytes());
            if (u.capacityBytes() != null) {
                long cap = clamp(u.capacityBytes());
                n.put("capacityBytes", cap);
                used = Math.min(used, cap);
            }
            n.put("usedBytes", used);
            n.put("blocks", clamp(u.blocks()));
        }
        return b;
    }

    private static long clamp(long v) {
        return Math.max(0, Math.min(MAX_COUNT, v));
    }

    /** One heartbeat; whether the control plane accepted it (synchronized: the timer and tests call it). */
    public synchronized boolean beatOnce() {
        String why;
        try {
            ControlPlaneClient.Reply r = poster.post(PATH, body(tiers.get()));
            if (r.ok()) {
                if (failures > 0) {
                    LOG.info("heartbeats accepted by the control plane again (after " + failures + " failed)");
                }
                failures = 0;
                return true;
            }
            why = "HTTP " + r.status() + " " + r.detail();
        } catch (IOException | RuntimeException e) {
            why = e.toString();
        }
        failures++;
        if (failures == 1) {
            LOG.warning("heartbeat not accepted by the control plane (" + why + "); retrying with backoff, further"
                    + " failures are logged at debug");
        } else {
            LOG.log(Level.FINE, "heartbeat {0} not accepted: {1}", new Object[] {failures, why});
        }
        return false;
    }

    /** The wait before the next heartbeat: the period, doubled per consecutive failure up to the backoff bound. */
    public synchronized Duration nextDelay() {
        if (failures == 0) {
            return period;
        }
        Duration cap = MAX_BACKOFF.compareTo(period) > 0 ? MAX_BACKOFF : period;
        int shift = Math.min(failures, 20);
        Duration d = period.multipliedBy(1L << shift);
        return d.compareTo(cap) > 0 ? cap : d;
    }

    synchronized int failures() {
        return failures;
    }

    /** Starts the daemon thread: a first heartbeat at once, then one per {@link #nextDelay()}. */
    public HeartbeatReporter start() {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvpool-agent-heartbeat");
            t.setDaemon(true);
            return t;
        });
        timer.schedule(this::tick, 0, TimeUnit.MILLISECONDS);
        return this;
    }

    private void tick() {
        try {
            beatOnce();
        } catch (Throwable e) { // beatOnce catches what posting throws; anything else must not end the heartbeats
            LOG.log(Level.FINE, "heartbeat failed", e);
        }
        try {
            timer.schedule(this::tick, nextDelay().toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed: the agent is stopping
        }
    }

    @Override
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
