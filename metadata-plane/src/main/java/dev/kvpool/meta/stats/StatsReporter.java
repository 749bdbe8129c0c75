package dev.kvpool.meta.stats;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jboss.logging.Logger;

/**
 * Posts {@code POST /api/v1/stats} every period (on every replica: each reports the calls it served): this replica's
 * description and, per instance with anything new, the counts since its last accepted report. A report that fails or
 * is refused leaves the baseline where it was, so the next one carries its counts too; memory does not grow with
 * that (the baseline is one snapshot per instance), and after {@code carry} without an accepted report the unsent
 * counts are dropped rather than landing in one minute as a spike. An entry the control plane refuses by name (its
 * group removed there meanwhile) is dropped and the rest sent again at once.
 */
public final class StatsReporter implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(StatsReporter.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern ENTRY = Pattern.compile("^instances\\[(\\d+)]");
    /** Entries of one report (the control plane's bound); more wait for the next period. */
    public static final int MAX_ENTRIES = 10_000;
    public static final String PATH = "/api/v1/stats";

    /** How this replica describes itself in each report. */
    public record ReplicaInfo(String id, String url, boolean leader, String store, String version, Instant startedAt,
                              long instances, long keys) {
    }

    @FunctionalInterface
    public interface Poster {
        ControlPlaneClient.Reply post(String path, JsonNode body) throws IOException;
    }

    /** A report and the baseline each of its instances moves to once it is accepted. */
    record Pending(ObjectNode body, List<String> ids, Map<String, StatsCounters.Snapshot> baseline) {
    }

    private final StatsCounters counters;
    private final Poster poster;
    private final Supplier<ReplicaInfo> replica;
    private final Predicate<String> instanceExists;
    private final Duration period, carry;
    /** Per instance, the cumulative counts the control plane has accepted. */
    private final Map<String, StatsCounters.Snapshot> accepted = new HashMap<>();
    private Instant failingSince;
    private ScheduledExecutorService timer;

    public StatsReporter(StatsCounters counters, Poster poster, Supplier<ReplicaInfo> replica,
                         Predicate<String> instanceExists, Duration period, Duration carry) {
        this.counters = counters;
        this.poster = poster;
        this.replica = replica;
        this.instanceExists = instanceExists;
        this.period = period;
        this.carry = carry;
    }

    public StatsReporter start() {
        long ms = Math.max(100, period.toMillis());
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvpool-stats-report");
            t.setDaemon(true);
            return t;
        });
        // the first report (the replica's heartbeat) within a second of start: the console shows the replica UP at
        // once, not after a whole period
        timer.scheduleWithFixedDelay(() -> {
            try {
                reportOnce(Instant.now());
            } catch (RuntimeException e) {
                LOG.warnf(e, "stats report failed");
            }
        }, Math.min(ms, 1000), ms, TimeUnit.MILLISECONDS);
        return this;
    }

    /** The report of {@code current} against the accepted baseline: only instances with something new. */
    Pending prepare(Map<String, StatsCounters.Snapshot> current, ReplicaInfo info, Instant now) {
        ObjectNode body = JSON.createObjectNode();
        ObjectNode r = body.putObject("replica");
        r.put("id", info.id());
        if (info.url() != null) {
            r.put("url", info.url());
        }
        r.put("leader", info.leader());
        if (info.store() != null) {
            r.put("store", info.store());
        }
        if (info.version() != null) {
            r.put("version", info.version());
        }
        if (info.startedAt() != null) {
            r.put("startedAt", info.startedAt().toString());
        }
        r.put("instances", Math.max(0, info.instances()));
        r.put("keys", Math.max(0, info.keys()));
        r.put("periodSeconds", Math.max(1, Math.min(86_400, period.toSeconds())));
        body.put("intervalEnd", now.toString());
        ArrayNode entries = body.putArray("instances");
        List<String> ids = new ArrayList<>();
        Map<String, StatsCounters.Snapshot> next = new HashMap<>();
        for (var e : current.entrySet()) {
            if (ids.size() >= MAX_ENTRIES) {
                break;
            }
            StatsCounters.Snapshot cur = e.getValue();
            StatsCounters.Snapshot base = accepted.getOrDefault(e.getKey(), StatsCounters.Snapshot.zero(cur.group()));
            long queries = delta(cur.queries(), base.queries()), queried = delta(cur.queried(), base.queried()),
                    written = delta(cur.written(), base.written());
            long hits = delta(cur.hits(), base.hits()); // never above queried (see StatsCounters)
            long[] ev = new long[cur.evicted().length];
            boolean any = queries > 0 || queried > 0 || hits > 0 || written > 0;
            for (int i = 0; i < ev.length; i++) {
                ev[i] = delta(cur.evicted()[i], base.evicted()[i]);
                any |= ev[i] > 0;
            }
            if (!any) {
                continue;
            }
            ObjectNode n = entries.addObject();
            n.put("instance", e.getKey());
            n.put("group", cur.group());
            n.put("queries", queries);
            n.put("queriedBlocks", queried);
            n.put("hitBlocks", hits);
            n.put("writtenBlocks", written);
            ObjectNode evicted = n.putObject("evictedBlocks");
            for (int i = 0; i < ev.length; i++) {
                if (ev[i] > 0) {
                    evicted.put(StatsCounters.REASONS.get(i), ev[i]);
                }
            }
            ids.add(e.getKey());
            next.put(e.getKey(), cur);
        }
        return new Pending(body, ids, next);
    }

    private static long delta(long now, long before) {
        return Math.max(0, now - before);
    }

    /** One report: posted, then the baseline moved on acceptance (synchronized: the timer and tests call it). */
    public synchronized void reportOnce(Instant now) {
        Map<String, StatsCounters.Snapshot> current = counters.snapshot();
        ReplicaInfo info = replica.get();
        for (int attempt = 0; attempt < 4; attempt++) {
            Pending p = prepare(current, info, now);
            ControlPlaneClient.Reply r;
            try {
                r = poster.post(PATH, p.body());
            } catch (IOException | RuntimeException e) {
                failed(now, current, e.toString());
                return;
            }
            if (r.ok()) {
                accepted.putAll(p.baseline());
                if (failingSince != null) {
                    LOG.infof("stats reports accepted again by the control plane (failing since %s)", failingSince);
                }
                failingSince = null;
                forgetRemoved(current);
                return;
            }
            Integer i = r.status() == 400 ? entryIndex(r.body().path("field").asText("")) : null;
            if (i == null || i >= p.ids().size()) {
                failed(now, current, "HTTP " + r.status() + " " + r.detail());
                return;
            }
            String id = p.ids().get(i);
            LOG.warnf("stats of instance %s dropped: the control plane refused them (%s)", id, r.detail());
            accepted.put(id, p.baseline().get(id));
        }
    }

    static Integer entryIndex(String field) {
        Matcher m = ENTRY.matcher(field);
        if (!m.find()) {
            return null;
        }
        try {
            return Integer.parseInt(m.group(1));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private void failed(Instant now, Map<String, StatsCounters.Snapshot> current, String why) {
        if (failingSince == null) {
            failingSince = now;
            LOG.warnf("stats report not accepted by the control plane (%s); its counts go with the next one", why);
        } else {
            LOG.debugf("stats report not accepted: %s", why);
        }
        if (Duration.between(failingSince, now).compareTo(carry) > 0) {
            LOG.warnf("no stats report accepted since %s (more than %s): the counts since then are dropped",
                    failingSince, carry);
            accepted.putAll(current);
            failingSince = null;
        }
    }

    /** Instances gone from this replica whose counts were all reported: their counters go too. */
    private void forgetRemoved(Map<String, StatsCounters.Snapshot> current) {
        for (var e : current.entrySet()) {
            if (!instanceExists.test(e.getKey()) && e.getValue().equals(accepted.get(e.getKey()))) {
                counters.forget(e.getKey());
                accepted.remove(e.getKey());
            }
        }
        accepted.keySet().retainAll(current.keySet());
    }

    /** For tests: the accepted baseline of one instance. */
    synchronized StatsCounters.Snapshot accepted(String id) {
        return accepted.get(id);
    }

    @Override
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
