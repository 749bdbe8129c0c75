package dev.kvpool.control.stats;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.persistence.Query;
import jakarta.transaction.Transactional;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The stats buckets in SQL that runs alike on PostgreSQL and H2: bucket starts are epoch seconds (bigint), so a step
 * is integer arithmetic; sums are taken as numeric (no overflow whatever the rows hold) and saturate to a long.
 */
@ApplicationScoped
public class StatsRepository {
    /** The counter columns, in the order of every {@code long[]} of counts here. */
    public static final List<String> COLUMNS = List.of("queries", "queried_blocks", "hit_blocks", "written_blocks",
            "evicted_water_level", "evicted_type_water", "evicted_key_count", "evicted_ttl");
    public static final int QUERIES = 0, QUERIED = 1, HITS = 2, WRITTEN = 3, EVICTED = 4;
    /** A stored count never passes this: adding saturates here (far beyond any real count, and the add cannot overflow). */
    public static final long CAP = Long.MAX_VALUE / 2;

    public enum Table {
        MINUTE("stats_minute", 60), HOUR("stats_hour", 3600);

        final String sql;
        public final long seconds;

        Table(String sql, long seconds) {
            this.sql = sql;
            this.seconds = seconds;
        }
    }

    @Inject
    EntityManager em;

    /** Serializes stats writes (reports, roll-ups) for the caller's transaction. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void lock() {
        em.createNativeQuery("select id from stats_lock where id = 1 for update").getResultList();
    }

    /** Adds {@code counts} (each in [0, CAP]) to one bucket, creating it when missing; under {@link #lock}. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void add(Table table, String group, long t, String instance, long[] counts) {
        StringBuilder set = new StringBuilder();
        for (int i = 0; i < COLUMNS.size(); i++) {
            String c = COLUMNS.get(i);
            set.append(i == 0 ? "" : ", ").append(c).append(" = case when ").append(c).append(" > ").append(CAP)
                    .append(" - :a").append(i).append(" then ").append(CAP).append(" else ").append(c)
                    .append(" + :a").append(i).append(" end");
        }
        Query u = em.createNativeQuery("update " + table.sql + " set " + set
                + " where group_name = :g and t = :t and instance_id = :i");
        bind(u, group, t, instance, counts);
        if (u.executeUpdate() == 0) {
            Query ins = em.createNativeQuery("insert into " + table.sql + " (group_name, t, instance_id, "
                    + String.join(", ", COLUMNS) + ") values (:g, :t, :i, :a0, :a1, :a2, :a3, :a4, :a5, :a6, :a7)");
            bind(ins, group, t, instance, counts);
            ins.executeUpdate();
        }
    }

    private static void bind(Query q, String group, long t, String instance, long[] counts) {
        q.setParameter("g", group).setParameter("t", t).setParameter("i", instance);
        for (int i = 0; i < COLUMNS.size(); i++) {
            q.setParameter("a" + i, Math.min(CAP, Math.max(0, counts[i])));
        }
    }

    /** Which rows a read covers: a group (or a set of groups; null = all), an instance (null = all). */
    public record Scope(Collection<String> groups, String instance) {
        boolean empty() {
            return groups != null && groups.isEmpty();
        }
    }

    private static String where(Scope s) {
        StringBuilder w = new StringBuilder(" where t >= :s and t < :u");
        if (s.groups() != null) {
            w.append(" and group_name in (:groups)");
        }
        if (s.instance() != null) {
            w.append(" and instance_id = :inst");
        }
        return w.toString();
    }

    private static void bind(Query q, Scope s, long since, long until) {
        q.setParameter("s", since).setParameter("u", until);
        if (s.groups() != null) {
            q.setParameter("groups", s.groups());
        }
        if (s.instance() != null) {
            q.setParameter("inst", s.instance());
        }
    }

    private static String sums() {
        StringBuilder b = new StringBuilder();
        for (String c : COLUMNS) {
            b.append(", sum(cast(").append(c).append(" as numeric(38, 0)))");
        }
        return b.toString();
    }

    /** Both tables' rows of the scope in [since, until) as one relation (a minute is in one of them, never both). */
    private static String both(Scope s) {
        String cols = "group_name, t, instance_id, " + String.join(", ", COLUMNS);
        return "(select " + cols + " from stats_minute" + where(s) + " union all select " + cols + " from stats_hour"
                + where(s) + ") b";
    }

    /**
     * The counts of the scope in [since, until), summed per bucket of {@code step} seconds (bucket start = t rounded
     * down to a multiple of the step), oldest first; only buckets with rows.
     */
    public Map<Long, long[]> series(Scope s, long since, long until, long step) {
        Map<Long, long[]> out = new LinkedHashMap<>();
        if (s.empty()) {
            return out;
        }
        // the step is a long computed here, inlined so that the select and group-by expressions are the same text
        String bucket = "(t / " + step + ") * " + step;
        Query q = em.createNativeQuery("select " + bucket + " as bt" + sums() + " from " + both(s) + " group by "
                + bucket + " order by " + bucket);
        bind(q, s, since, until);
        for (Object row : q.getResultList()) {
            Object[] r = (Object[]) row;
            out.put(saturated(r[0]), counts(r, 1));
        }
        return out;
    }

    /** The counts of the scope in [since, until) per group ({@code byInstance} false) or per group and instance. */
    public Map<List<String>, long[]> totals(Scope s, long since, long until, boolean byInstance) {
        Map<List<String>, long[]> out = new LinkedHashMap<>();
        if (s.empty()) {
            return out;
        }
        String key = byInstance ? "group_name, instance_id" : "group_name";
        Query q = em.createNativeQuery("select " + key + sums() + " from " + both(s) + " group by " + key
                + " order by " + key);
        bind(q, s, since, until);
        int n = byInstance ? 2 : 1;
        for (Object row : q.getResultList()) {
            Object[] r = (Object[]) row;
            List<String> k = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                k.add((String) r[i]);
            }
            out.put(k, counts(r, n));
        }
        return out;
    }

    private static long[] counts(Object[] r, int from) {
        long[] c = new long[COLUMNS.size()];
        for (int i = 0; i < c.length; i++) {
            c[i] = saturated(r[from + i]);
        }
        return c;
    }

    /** A SQL number as a long, saturated (a numeric sum may pass a long's range). */
    static long saturated(Object o) {
        if (o == null) {
            return 0;
        }
        if (o instanceof Long || o instanceof Integer || o instanceof Short) {
            return ((Number) o).longValue();
        }
        BigInteger v = o instanceof BigDecimal d ? d.toBigInteger() : o instanceof BigInteger b ? b
                : new BigDecimal(o.toString()).toBigInteger();
        return v.bitLength() < 64 ? v.longValue() : v.signum() > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
    }

    /**
     * Rolls the minute buckets of the oldest hour before {@code cutoff} (an hour boundary) up into that hour's bucket,
     * sums preserved, and deletes them. Returns {minute rows removed, hour rows written}, or null when no minute bucket
     * is older than the cutoff. Under {@link #lock}.
     */
    @Transactional(Transactional.TxType.MANDATORY)
    public long[] rollUpOneHour(long cutoff) {
        Object oldest = em.createNativeQuery("select min(t) from stats_minute where t < :c").setParameter("c", cutoff)
                .getSingleResult();
        if (oldest == null) {
            return null;
        }
        long hour = Math.floorDiv(saturated(oldest), 3600L) * 3600;
        long end = Math.min(hour + 3600, cutoff);
        Query q = em.createNativeQuery("select group_name, instance_id" + sums() + " from stats_minute where t >= :h "
                + "and t < :e group by group_name, instance_id").setParameter("h", hour).setParameter("e", end);
        long written = 0;
        for (Object row : q.getResultList()) {
            Object[] r = (Object[]) row;
            long[] c = counts(r, 2);
            for (int i = 0; i < c.length; i++) {
                c[i] = Math.min(CAP, c[i]);
            }
            add(Table.HOUR, (String) r[0], hour, (String) r[1], c);
            written++;
        }
        long removed = em.createNativeQuery("delete from stats_minute where t >= :h and t < :e").setParameter("h", hour)
                .setParameter("e", end).executeUpdate();
        return new long[] {removed, written};
    }

    /** Deletes hour buckets that start before {@code before}; returns how many. */
    @Transactional(Transactional.TxType.MANDATORY)
    public int dropHours(long before) {
        return em.createNativeQuery("delete from stats_hour where t < :b").setParameter("b", before).executeUpdate();
    }

    /** Drops a removed group's buckets, in the caller's transaction. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void forget(String group) {
        for (Table t : Table.values()) {
            em.createNativeQuery("delete from " + t.sql + " where group_name = :g").setParameter("g", group)
                    .executeUpdate();
        }
    }
}
