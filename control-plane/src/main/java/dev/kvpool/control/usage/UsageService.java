package dev.kvpool.control.usage;

import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.storage.StorageTypes;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Usage history as reported by the metadata plane, and each group's current usage (the latest sample per type). */
@ApplicationScoped
public class UsageService {
    @Inject
    UsageRepository repo;

    public record Report(String group, String storageType, Long usedBytes, Instant timestamp) {
    }

    public record Current(long usedBytes, Map<String, Long> byType) {
    }

    @Transactional
    public int record(List<Report> reports, java.util.function.Predicate<String> groupExists) {
        if (reports == null || reports.isEmpty()) {
            throw ApiException.invalid("samples", "send at least one usage sample");
        }
        for (int i = 0; i < reports.size(); i++) {
            Report r = reports.get(i);
            String f = "samples[" + i + "]";
            if (r == null || r.group() == null || r.group().isBlank()) {
                throw ApiException.invalid(f + ".group", "group is required");
            }
            if (!groupExists.test(r.group())) {
                throw ApiException.invalid(f + ".group", "instance group '" + r.group() + "' does not exist");
            }
            String t = StorageTypes.canonical(r.storageType(), f + ".storageType");
            if (r.usedBytes() == null || r.usedBytes() < 0) {
                throw ApiException.invalid(f + ".usedBytes", "usedBytes must be >= 0");
            }
            UsageSample s = new UsageSample();
            s.groupName = r.group();
            s.storageType = t;
            s.usedBytes = r.usedBytes();
            s.sampledAt = r.timestamp() == null ? Instant.now() : r.timestamp();
            repo.persist(s);
        }
        return reports.size();
    }

    public Current current(String group) {
        Map<String, Long> m = repo.current(group);
        return new Current(m.values().stream().mapToLong(Long::longValue).sum(), m);
    }

    public List<UsageSample> history(String group, String type, Instant since, Instant until) {
        StringBuilder q = new StringBuilder("1 = 1");
        var params = new java.util.HashMap<String, Object>();
        if (group != null) {
            q.append(" and groupName = :g");
            params.put("g", group);
        }
        if (type != null) {
            q.append(" and storageType = :t");
            params.put("t", StorageTypes.canonical(type, "storageType"));
        }
        if (since != null) {
            q.append(" and sampledAt >= :s");
            params.put("s", since);
        }
        if (until != null) {
            q.append(" and sampledAt < :u");
            params.put("u", until);
        }
        return repo.find(q + " order by sampledAt, id", params).list();
    }
}
