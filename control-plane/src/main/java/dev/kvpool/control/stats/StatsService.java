package dev.kvpool.control.stats;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.services.ServicesService;
import dev.kvpool.control.usage.UsageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * What the metadata-plane replicas count per instance — prefix queries, blocks queried and hit, blocks written, blocks
 * evicted by reason — kept as minute buckets (then hour buckets, see {@code Retention}) so that the console draws its
 * charts without Prometheus. Every report is checked completely before anything is written, and written in one
 * transaction (the buckets and the replica's heartbeat), so a refusal leaves nothing behind.
 */
@ApplicationScoped
public class StatsService {
    /** The largest count one report may carry in a field: 2^53, exact in any JSON consumer. */
    public static final long MAX_COUNT = 1L << 53;
    /** Instances one report may list. */
    public static final int MAX_INSTANCES = 10_000;
    /** Eviction reasons as the metadata plane names them (its Reclaimer.Reason, lower case), in column order. */
    public static final List<String> REASONS = List.of("water_level", "type_water_level", "key_count", "ttl");
    /** How far a report's intervalEnd may be from this clock, either way. */
    public static final Duration MAX_CLOCK_SKEW = UsageService.MAX_CLOCK_SKEW;
    public static final int MAX_PERIOD_SECONDS = 86_400;
    private static final Pattern STORE = Pattern.compile("[a-z0-9_-]{1,32}");

    @Inject
    StatsRepository repo;
    @Inject
    ServicesService services;
    @ConfigProperty(name = "kvpool.control.stats.report-period", defaultValue = "30s")
    Duration defaultPeriod;

    public record Replica(String id, String url, Boolean leader, String store, String version, Instant startedAt,
                          Long instances, Long keys, Integer periodSeconds) {
    }

    public record Entry(String instance, String group, Long queries, Long queriedBlocks, Long hitBlocks,
                        Long writtenBlocks, Map<String, Long> evictedBlocks) {
    }

    public record Report(Replica replica, Instant intervalEnd, List<Entry> instances) {
    }

    /** The minute bucket a report ending at {@code end} falls into: the minute holding the instant just before it. */
    public static long minuteOf(Instant end) {
        return Math.floorDiv(end.toEpochMilli() - 1, 60_000L) * 60;
    }

    /**
     * Validates a report completely, then adds its counts to the minute bucket of its {@code intervalEnd} and records
     * the replica as seen. Returns the number of instance entries accepted.
     */
    @Transactional
    public int record(Report r, Predicate<String> groupExists, Instant now) {
        if (r == null) {
            throw ApiException.invalid("replica", "send a report: {\"replica\": {...}, \"intervalEnd\": ..., "
                    + "\"instances\": [...]}");
        }
        ServicesService.Heartbeat hb = replica(r.replica(), now);
        Instant end = r.intervalEnd() == null ? now : r.intervalEnd();
        if (end.isBefore(now.minus(MAX_CLOCK_SKEW)) || end.isAfter(now.plus(MAX_CLOCK_SKEW))) {
            throw ApiException.invalid("intervalEnd", "intervalEnd must be within " + MAX_CLOCK_SKEW.toMinutes()
                    + " minutes of the control plane's clock (" + now + "), got " + end);
        }
        List<Entry> entries = r.instances() == null ? List.of() : r.instances();
        Inputs.count("instances", entries, MAX_INSTANCES);
        record Row(String group, String instance, long[] counts) {
        }
        List<Row> rows = new ArrayList<>(entries.size());
        Set<String> seen = new HashSet<>();
        Map<String, Boolean> groups = new LinkedHashMap<>();
        for (int i = 0; i < entries.size(); i++) {
            Entry e = entries.get(i);
            String f = "instances[" + i + "]";
            if (e == null) {
                throw ApiException.invalid(f, f + " must be an object");
            }
            String inst = Inputs.existingName(Identifiers.Kind.INSTANCE, f + ".instance", e.instance());
            if (!seen.add(inst)) {
                throw ApiException.invalid(f + ".instance", f + ".instance '" + inst + "' is listed twice");
            }
            String g = Inputs.name(Identifiers.Kind.GROUP, f + ".group", e.group());
            if (!groups.computeIfAbsent(g, groupExists::test)) {
                throw ApiException.invalid(f + ".group", "instance group '" + g + "' does not exist");
            }
            long[] c = new long[StatsRepository.COLUMNS.size()];
            c[StatsRepository.QUERIES] = count(f + ".queries", e.queries());
            c[StatsRepository.QUERIED] = count(f + ".queriedBlocks", e.queriedBlocks());
            c[StatsRepository.HITS] = count(f + ".hitBlocks", e.hitBlocks());
            c[StatsRepository.WRITTEN] = count(f + ".writtenBlocks", e.writtenBlocks());
            if (c[StatsRepository.HITS] > c[StatsRepository.QUERIED]) {
                throw ApiException.invalid(f + ".hitBlocks", f + ".hitBlocks (" + c[StatsRepository.HITS]
                        + ") must not exceed " + f + ".queriedBlocks (" + c[StatsRepository.QUERIED] + ")");
            }
            if (e.evictedBlocks() != null) {
                if (e.evictedBlocks().size() > REASONS.size()) {
                    throw ApiException.invalid(f + ".evictedBlocks", f + ".evictedBlocks may hold at most "
                            + REASONS.size() + " reasons " + REASONS + ", got " + e.evictedBlocks().size());
                }
                for (var ev : e.evictedBlocks().entrySet()) {
                    int k = REASONS.indexOf(ev.getKey());
                    if (k < 0) {
                        throw ApiException.invalid(f + ".evictedBlocks", f + ".evictedBlocks: reason '"
                                + Text.safe(String.valueOf(ev.getKey())) + "' is not one of " + REASONS);
                    }
                    c[StatsRepository.EVICTED + k] = count(f + ".evictedBlocks." + ev.getKey(), ev.getValue());
                }
            }
            rows.add(new Row(g, inst, c));
        }
        repo.lock();
        long t = minuteOf(end);
        for (Row row : rows) {
            boolean any = false;
            for (long v : row.counts()) {
                any |= v != 0;
            }
            if (any) { // an idle instance adds no row
                repo.add(StatsRepository.Table.MINUTE, row.group(), t, row.instance(), row.counts());
            }
        }
        services.heartbeat(hb, now);
        return rows.size();
    }

    private static long count(String field, Long v) {
        return v == null ? 0 : Inputs.range(field, v, 0, MAX_COUNT);
    }

    private ServicesService.Heartbeat replica(Replica p, Instant now) {
        if (p == null) {
            throw ApiException.invalid("replica", "replica is required: {\"id\", \"url\", \"leader\", \"store\", "
                    + "\"version\", \"startedAt\", \"instances\", \"keys\"}");
        }
        if (p.id() == null || p.id().isBlank()) {
            throw ApiException.invalid("replica.id", "replica.id is required");
        }
        String id = Inputs.text("replica.id", p.id(), 253);
        String url = Inputs.httpUrl("replica.url", p.url());
        String store = null;
        if (p.store() != null) {
            if (!STORE.matcher(p.store()).matches()) {
                throw ApiException.invalid("replica.store", "replica.store must be 1-32 characters [a-z0-9_-] such "
                        + "as embedded or redis, got '" + Text.safe(p.store()) + "'");
            }
            store = p.store();
        }
        String version = p.version() == null ? null : Inputs.text("replica.version", p.version(), 64);
        Instant started = p.startedAt();
        if (started != null && (started.isBefore(UsageService.EARLIEST) || started.isAfter(now.plus(MAX_CLOCK_SKEW)))) {
            throw ApiException.invalid("replica.startedAt", "replica.startedAt must be between "
                    + UsageService.EARLIEST + " and now + " + MAX_CLOCK_SKEW.toMinutes() + " minutes, got " + started);
        }
        long instances = count("replica.instances", p.instances());
        long keys = count("replica.keys", p.keys());
        int period = p.periodSeconds() == null ? (int) Math.max(1, Math.min(MAX_PERIOD_SECONDS, defaultPeriod.toSeconds()))
                : (int) Inputs.range("replica.periodSeconds", p.periodSeconds(), 1, MAX_PERIOD_SECONDS);
        return new ServicesService.Heartbeat(id, url, Boolean.TRUE.equals(p.leader()), store, version, started,
                instances, keys, period);
    }
}
