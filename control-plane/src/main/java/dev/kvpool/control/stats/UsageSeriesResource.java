package dev.kvpool.control.stats;

import dev.kvpool.control.security.Caller;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.persistence.TypedQuery;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** Usage over time for the console's charts, from the samples the metadata plane's leader posts. */
@Path("/api/v1/usage/series")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "usage", description = "Usage history reported by the metadata plane")
public class UsageSeriesResource {
    @Inject
    StatsViews views;
    @Inject
    EntityManager em;
    @Inject
    SecurityIdentity identity;

    public record Point(Instant t, Map<String, Long> byType, long usedBytes) {
    }

    public record Series(String step, Instant since, Instant until, List<Point> points) {
    }

    @GET
    @RolesAllowed({"admin", "operator", "tenant"})
    @Operation(summary = "Bytes used per storage type over time (a tenant: its groups)",
            description = "Per bucket the last sample of each group and storage type in it; byType sums them over the "
                    + "groups (no group: every group the caller may see), usedBytes sums byType. since, until, step "
                    + "as in GET /api/v1/stats/series. Only buckets with samples are listed.")
    public Series series(@QueryParam("group") String group, @QueryParam("since") String since,
                         @QueryParam("until") String until, @QueryParam("step") String step) {
        StatsRepository.Scope scope = views.scope(Caller.of(identity), group, null);
        Range r = Range.parse(since, until, step, Instant.now());
        return new Series(r.stepText(), r.sinceInstant(), r.untilInstant(), points(scope, r));
    }

    /**
     * Streams the samples in the range oldest first, keeping per bucket the latest of each (group, type); memory is
     * bounded by buckets × groups × types, not by the samples read.
     */
    List<Point> points(StatsRepository.Scope scope, Range r) {
        if (scope.groups() != null && scope.groups().isEmpty()) {
            return List.of();
        }
        TypedQuery<Object[]> q = em.createQuery("select u.groupName, u.storageType, u.sampledAt, u.usedBytes from "
                + "UsageSample u where u.sampledAt >= :s and u.sampledAt < :u"
                + (scope.groups() != null ? " and u.groupName in :g" : "") + " order by u.sampledAt, u.id",
                Object[].class).setParameter("s", r.sinceInstant()).setParameter("u", r.untilInstant());
        if (scope.groups() != null) {
            q.setParameter("g", scope.groups());
        }
        TreeMap<Long, Map<List<String>, Long>> buckets = new TreeMap<>();
        try (var rows = q.setHint("org.hibernate.fetchSize", 1000).getResultStream()) {
            rows.forEach(row -> {
                long t = Math.floorDiv(((Instant) row[2]).getEpochSecond(), r.step()) * r.step();
                buckets.computeIfAbsent(t, x -> new HashMap<>()).put(List.of((String) row[0], (String) row[1]),
                        (Long) row[3]);
            });
        }
        List<Point> out = new ArrayList<>(buckets.size());
        buckets.forEach((t, last) -> {
            Map<String, Long> byType = new TreeMap<>();
            long total = 0;
            for (var e : last.entrySet()) {
                byType.merge(e.getKey().get(1), Math.max(0, e.getValue()), StatsViews::add);
                total = StatsViews.add(total, Math.max(0, e.getValue()));
            }
            out.add(new Point(Instant.ofEpochSecond(t), byType, total));
        });
        return out;
    }
}
