package dev.kvpool.control.retention;

import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Keeps the append-only tables bounded: usage samples older than {@code kvpool.control.usage.retention} and
 * published outbox rows older than {@code kvpool.control.outbox.retention}. Unpublished rows are never deleted, and
 * positions come from {@code config_revision}, so deleting old rows never reuses a position. The console's history is
 * downsampled: stats minute buckets older than {@code kvpool.control.stats.minute-retention} are rolled up into hour
 * buckets (sums preserved), hour buckets older than {@code kvpool.control.stats.hour-retention} dropped, and usage
 * samples older than {@code kvpool.control.stats.usage-thin-after} thinned to the last one per hour of each group and
 * storage type. Runs a minute after start, then hourly ({@code kvpool.control.retention.every}), on the elected
 * leader only (followers skip: {@link dev.kvpool.control.leader.NotLeader}).
 */
@ApplicationScoped
public class Retention {
    private static final Logger LOG = Logger.getLogger(Retention.class);

    @Inject
    EntityManager em;
    @ConfigProperty(name = "kvpool.control.usage.retention", defaultValue = "P35D")
    Duration usageRetention;
    @ConfigProperty(name = "kvpool.control.stats.minute-retention", defaultValue = "PT48H")
    Duration minuteRetention;
    @ConfigProperty(name = "kvpool.control.stats.hour-retention", defaultValue = "P35D")
    Duration hourRetention;
    @ConfigProperty(name = "kvpool.control.stats.usage-thin-after", defaultValue = "PT48H")
    Duration usageThinAfter;
    @Inject
    dev.kvpool.control.stats.StatsRepository stats;
    @Inject
    dev.kvpool.control.services.ServicesService services;
    @ConfigProperty(name = "kvpool.control.outbox.retention", defaultValue = "P7D")
    Duration outboxRetention;

    /** Hourly, the first a minute after start; never two at once (a slow run makes the next one wait its turn). */
    @Scheduled(every = "${kvpool.control.retention.every:1h}", delay = 1, delayUnit = TimeUnit.MINUTES,
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP, identity = "kvpool-retention",
            skipExecutionIf = dev.kvpool.control.leader.NotLeader.class)
    void runSafely() {
        try {
            purge(Instant.now());
        } catch (RuntimeException e) {
            LOG.warnf("retention run failed: %s", e.getMessage());
        }
        try {
            Downsampled d = downsample(Instant.now());
            LOG.debugf("downsampled: %s", d);
        } catch (RuntimeException e) {
            LOG.warnf("downsampling failed: %s", e.getMessage());
        }
    }

    /** What one downsampling run did. */
    public record Downsampled(long minuteRowsRolledUp, long hourRowsWritten, long hourRowsDropped,
                              long usageSamplesThinned, long replicasForgotten) {
    }

    /**
     * Rolls minute buckets of whole hours older than the minute retention into hour buckets (one hour per
     * transaction, oldest first), drops hour buckets past the hour retention, thins old usage samples to the last per
     * hour, and forgets replicas silent for longer than {@code kvpool.control.stats.replica-retention}.
     */
    public Downsampled downsample(Instant now) {
        long cutoff = Math.floorDiv(now.minus(minuteRetention).getEpochSecond(), 3600L) * 3600;
        long rolled = 0, written = 0;
        for (int i = 0; i < 100_000; i++) { // bounded: one hour per round
            long[] r = QuarkusTransaction.requiringNew().call(() -> {
                stats.lock();
                return stats.rollUpOneHour(cutoff);
            });
            if (r == null) {
                break;
            }
            rolled += r[0];
            written += r[1];
        }
        long dropBefore = now.minus(hourRetention).getEpochSecond();
        long dropped = QuarkusTransaction.requiringNew().call(() -> {
            stats.lock();
            return (long) stats.dropHours(dropBefore);
        });
        long thinned = thinUsage(Instant.ofEpochSecond(Math.floorDiv(now.minus(usageThinAfter).getEpochSecond(), 3600L)
                * 3600));
        long forgotten = services.forgetSilent(now);
        return new Downsampled(rolled, written, dropped, thinned, forgotten);
    }

    /** Deletes every usage sample before {@code before} (an hour boundary) but the last of its hour, group and type. */
    long thinUsage(Instant before) {
        java.util.List<Long> doomed = new java.util.ArrayList<>();
        QuarkusTransaction.requiringNew().run(() -> {
            String key = null;
            long hour = Long.MIN_VALUE, previous = -1;
            try (var rows = em.createQuery("select u.id, u.groupName, u.storageType, u.sampledAt from UsageSample u "
                    + "where u.sampledAt < :b order by u.groupName, u.storageType, u.sampledAt, u.id", Object[].class)
                    .setParameter("b", before).setHint("org.hibernate.fetchSize", 1000).getResultStream()) {
                for (Object[] r : (Iterable<Object[]>) rows::iterator) {
                    String k = r[1] + "\u0000" + r[2];
                    long h = Math.floorDiv(((Instant) r[3]).getEpochSecond(), 3600L);
                    if (k.equals(key) && h == hour) {
                        doomed.add(previous); // a later sample of the same hour, group and type follows it
                    }
                    key = k;
                    hour = h;
                    previous = (Long) r[0];
                }
            }
        });
        for (int i = 0; i < doomed.size(); i += 1000) {
            var chunk = doomed.subList(i, Math.min(doomed.size(), i + 1000));
            QuarkusTransaction.requiringNew().run(() -> em.createQuery("delete from UsageSample u where u.id in :ids")
                    .setParameter("ids", chunk).executeUpdate());
        }
        return doomed.size();
    }

    /** Deletes what is past retention at {@code now}; returns {usage rows, outbox rows} deleted. */
    public int[] purge(Instant now) {
        return QuarkusTransaction.requiringNew().call(() -> new int[] {
            em.createQuery("delete from UsageSample u where u.sampledAt < :t")
                    .setParameter("t", now.minus(usageRetention)).executeUpdate(),
            em.createQuery("delete from OutboxEvent e where e.publishedAt is not null and e.publishedAt < :t")
                    .setParameter("t", now.minus(outboxRetention)).executeUpdate()});
    }
}
