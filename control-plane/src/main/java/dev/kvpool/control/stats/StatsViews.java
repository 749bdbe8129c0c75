package dev.kvpool.control.stats;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.group.GroupEntity;
import dev.kvpool.control.group.GroupService;
import dev.kvpool.control.instance.InstanceEntity;
import dev.kvpool.control.instance.InstanceRepository;
import dev.kvpool.control.security.Caller;
import dev.kvpool.control.storage.StorageRepository;
import dev.kvpool.control.usage.UsageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** The console's reads of the stats buckets: series and the overview's summary, filtered by the caller's role. */
@ApplicationScoped
public class StatsViews {
    @Inject
    StatsRepository repo;
    @Inject
    GroupService groups;
    @Inject
    InstanceRepository instances;
    @Inject
    StorageRepository storages;
    @Inject
    UsageService usage;

    public record Point(Instant t, long queries, long queriedBlocks, long hitBlocks, Double hitRate, long writtenBlocks,
                       Map<String, Long> evictedBlocks) {
    }

    public record Series(String step, Instant since, Instant until, List<Point> points) {
    }

    public record HitRates(Double last5m, Double lastHour, Double lastDay) {
    }

    public record GroupSummary(String group, long quotaBytes, long usedBytes, Map<String, Long> usageByType,
                               int softPercent, int hardPercent, HitRates hitRate, long queriesLastHour,
                               Map<String, Double> evictionsPerMinute) {
    }

    public record InstanceSummary(String instance, String group, Double hitRateLastHour, long queriesLastHour,
                                  long hitBlocksLastHour, long queriedBlocksLastHour) {
    }

    public record Totals(int groups, int instances, int storages, long quotaBytes, long usedBytes,
                         Double hitRateLastHour) {
    }

    public record Summary(List<GroupSummary> groups, List<InstanceSummary> instances, Totals totals) {
    }

    /** hits / queried, null when nothing was queried. */
    public static Double hitRate(long hits, long queried) {
        return queried <= 0 ? null : (double) hits / queried;
    }

    static long add(long a, long b) {
        long s = a + b;
        return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
    }

    /**
     * Which rows the caller may read: {@code group} (403 for a tenant not bound to it, 404 when it does not exist),
     * else every group it sees; {@code instance} (403 for a tenant when the instance is in another group).
     */
    public StatsRepository.Scope scope(Caller c, String group, String instance) {
        List<String> g = null;
        if (group != null) {
            Inputs.name(Identifiers.Kind.GROUP, "group", group);
            c.requireGroup(group);
            groups.get(group); // 404 when missing
            g = List.of(group);
        } else if (c.isTenant()) {
            g = List.copyOf(new TreeSet<>(c.groups()));
        }
        if (instance != null) {
            Inputs.existingName(Identifiers.Kind.INSTANCE, "instance", instance);
            InstanceEntity e = instances.byId(instance).orElse(null);
            if (e != null) {
                c.requireGroup(e.group.name);
            }
        }
        return new StatsRepository.Scope(g, instance);
    }

    public Series series(StatsRepository.Scope scope, Range range) {
        List<Point> points = new ArrayList<>();
        repo.series(scope, range.since(), range.until(), range.step()).forEach((t, c) -> points.add(point(t, c)));
        return new Series(range.stepText(), range.sinceInstant(), range.untilInstant(), points);
    }

    static Point point(long t, long[] c) {
        return new Point(Instant.ofEpochSecond(t), c[StatsRepository.QUERIES], c[StatsRepository.QUERIED],
                c[StatsRepository.HITS], hitRate(c[StatsRepository.HITS], c[StatsRepository.QUERIED]),
                c[StatsRepository.WRITTEN], evicted(c));
    }

    /** The eviction counts by reason, reasons with none left out. */
    static Map<String, Long> evicted(long[] c) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < StatsService.REASONS.size(); i++) {
            if (c[StatsRepository.EVICTED + i] != 0) {
                m.put(StatsService.REASONS.get(i), c[StatsRepository.EVICTED + i]);
            }
        }
        return m;
    }

    /**
     * The overview in one call: each visible group's quota, usage, water levels, hit rate over the last 5 minutes,
     * hour and day, queries in the last hour and evictions per minute by reason (averaged over the last hour); each
     * visible instance's last hour; and the totals.
     */
    public Summary summary(Caller c, Instant now) {
        List<GroupEntity> visible = groups.list().stream().filter(g -> c.canSeeGroup(g.name)).toList();
        Set<String> names = new TreeSet<>();
        visible.forEach(g -> names.add(g.name));
        StatsRepository.Scope scope = new StatsRepository.Scope(c.isTenant() ? List.copyOf(names) : null, null);
        long u = now.getEpochSecond() + 1;
        Map<List<String>, long[]> m5 = repo.totals(scope, u - 300, u, false);
        Map<List<String>, long[]> h1 = repo.totals(scope, u - 3600, u, false);
        Map<List<String>, long[]> d1 = repo.totals(scope, u - 86_400, u, false);
        Map<List<String>, long[]> perInstance = repo.totals(scope, u - 3600, u, true);
        long[] zero = new long[StatsRepository.COLUMNS.size()];
        List<GroupSummary> gs = new ArrayList<>();
        long quota = 0, used = 0, hits = 0, queried = 0;
        Set<String> storageNames = new TreeSet<>();
        for (GroupEntity g : visible) {
            UsageService.Current cur = usage.current(g.name);
            List<String> k = List.of(g.name);
            long[] a = m5.getOrDefault(k, zero), b = h1.getOrDefault(k, zero), d = d1.getOrDefault(k, zero);
            Map<String, Double> epm = new LinkedHashMap<>();
            evicted(b).forEach((reason, n) -> epm.put(reason, n / 60.0));
            gs.add(new GroupSummary(g.name, g.quotaBytes, cur.usedBytes(), new TreeMap<>(cur.byType()), g.softWaterPct,
                    g.hardWaterPct, new HitRates(hitRate(a[StatsRepository.HITS], a[StatsRepository.QUERIED]),
                    hitRate(b[StatsRepository.HITS], b[StatsRepository.QUERIED]),
                    hitRate(d[StatsRepository.HITS], d[StatsRepository.QUERIED])), b[StatsRepository.QUERIES], epm));
            quota = add(quota, g.quotaBytes);
            used = add(used, cur.usedBytes());
            hits = add(hits, b[StatsRepository.HITS]);
            queried = add(queried, b[StatsRepository.QUERIED]);
            storageNames.addAll(g.storageCandidates);
        }
        List<InstanceSummary> is = new ArrayList<>();
        for (InstanceEntity e : instances.sorted()) {
            if (!names.contains(e.group.name)) {
                continue;
            }
            long[] x = perInstance.getOrDefault(List.of(e.group.name, e.instanceId), zero);
            is.add(new InstanceSummary(e.instanceId, e.group.name, hitRate(x[StatsRepository.HITS],
                    x[StatsRepository.QUERIED]), x[StatsRepository.QUERIES], x[StatsRepository.HITS],
                    x[StatsRepository.QUERIED]));
        }
        // a tenant counts the storages its groups may use; the others every storage
        int storageCount = c.isTenant() ? storageNames.size() : (int) storages.count();
        return new Summary(gs, is, new Totals(gs.size(), is.size(), storageCount, quota, used, hitRate(hits, queried)));
    }
}
