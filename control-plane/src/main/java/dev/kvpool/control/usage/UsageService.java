package dev.kvpool.control.usage;

import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
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

    /** Earliest and latest instants a query or a sample may name (the database's timestamp range is narrower than Java's). */
    public static final Instant EARLIEST = Instant.parse("1970-01-01T00:00:00Z"),
            LATEST = Instant.parse("9999-12-31T23:59:59Z");
    /**
     * How far ahead of this clock a sample's timestamp may be: the current usage is the latest sample per type, so a
     * sample dated in the far future would hide every later report until then.
     */
    public static final java.time.Duration MAX_CLOCK_SKEW = java.time.Duration.ofHours(1);

    /**
     * Stores a batch of samples from a metadata plane, all or none: every sample is checked first (group name and
     * existence, storage type, {@code usedBytes} in [0, {@link Limits#MAX_QUOTA_BYTES}], timestamp not in the future
     * beyond {@link #MAX_CLOCK_SKEW}).
     */
    @Transactional
    public int record(List<Report> reports, java.util.function.Predicate<String> groupExists) {
        if (reports == null || reports.isEmpty()) {
            throw ApiException.invalid("samples", "send at least one usage sample");
        }
        Inputs.count("samples", reports, Inputs.MAX_USAGE_SAMPLES);
        Instant latest = Instant.now().plus(MAX_CLOCK_SKEW);
        List<UsageSample> ok = new java.util.ArrayList<>(reports.size());
        for (int i = 0; i < reports.size(); i++) {
            Report r = reports.get(i);
            String f = "samples[" + i + "]";
            if (r == null) {
                throw ApiException.invalid(f, f + " must be an object");
            }
            Inputs.name(Identifiers.Kind.GROUP, f + ".group", r.group());
            if (!groupExists.test(r.group())) {
                throw ApiException.invalid(f + ".group", "instance group '" + r.group() + "' does not exist");
            }
            String t = StorageTypes.canonical(r.storageType(), f + ".storageType");
            if (r.usedBytes() == null) {
                throw ApiException.invalid(f + ".usedBytes", f + ".usedBytes is required");
            }
            Inputs.range(f + ".usedBytes", r.usedBytes(), 0, Limits.MAX_QUOTA_BYTES);
            Instant at = r.timestamp() == null ? Instant.now() : r.timestamp();
            if (at.isBefore(EARLIEST) || at.isAfter(latest)) {
                throw ApiException.invalid(f + ".timestamp", f + ".timestamp must be between " + EARLIEST
                        + " and now + " + MAX_CLOCK_SKEW.toMinutes() + " minutes, got " + at);
            }
            UsageSample s = new UsageSample();
            s.groupName = r.group();
            s.storageType = t;
            s.usedBytes = r.usedBytes();
            s.sampledAt = at;
            ok.add(s);
        }
        ok.forEach(repo::persist);
        return reports.size();
    }

    /** Drops a removed group's samples, in the caller's transaction. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void forget(String group) {
        repo.delete("groupName", group);
    }

    public Current current(String group) {
        Map<String, Long> m = repo.current(group);
        long sum = 0;
        for (long v : m.values()) {
            // samples are bounded at the input; rows written before that bound saturate the sum rather than wrap it
            // negative, where it would pass for free space
            if (v > 0) {
                sum = v > Long.MAX_VALUE - sum ? Long.MAX_VALUE : sum + v;
            }
        }
        return new Current(sum, m);
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
