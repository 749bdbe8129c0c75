package dev.kvpool.control.retention;

import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Keeps the two append-only tables bounded: usage samples older than {@code kvpool.control.usage.retention} and
 * published outbox rows older than {@code kvpool.control.outbox.retention}. Unpublished rows are never deleted, and
 * positions come from {@code config_revision}, so deleting old rows never reuses a position.
 */
@ApplicationScoped
public class Retention {
    private static final Logger LOG = Logger.getLogger(Retention.class);

    @Inject
    EntityManager em;
    @ConfigProperty(name = "kvpool.control.usage.retention", defaultValue = "P30D")
    Duration usageRetention;
    @ConfigProperty(name = "kvpool.control.outbox.retention", defaultValue = "P7D")
    Duration outboxRetention;

    private ScheduledExecutorService timer;

    void start(@Observes StartupEvent ev) {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvpool-retention");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::runSafely, 1, 60, TimeUnit.MINUTES);
    }

    void stop(@Observes ShutdownEvent ev) {
        if (timer != null) {
            timer.shutdownNow();
        }
    }

    private void runSafely() {
        try {
            purge(Instant.now());
        } catch (RuntimeException e) {
            LOG.warnf("retention run failed: %s", e.getMessage());
        }
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
