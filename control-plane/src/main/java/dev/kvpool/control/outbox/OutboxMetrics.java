package dev.kvpool.control.outbox;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

/** {@code kvpool_control_outbox_pending} (rows not yet on Kafka) and {@code kvpool_control_outbox_published_total}. */
@ApplicationScoped
public class OutboxMetrics {
    @Inject
    MeterRegistry registry;
    @Inject
    OutboxRepository events;
    @Inject
    OutboxRelay relay;

    void start(@Observes StartupEvent ev) {
        Gauge.builder("kvpool.control.outbox.pending", this, m -> m.pending())
                .description("config changes waiting in the outbox for Kafka").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("kvpool.control.outbox.published", relay,
                OutboxRelay::publishedCount).description("outbox rows published to kvpool.config").register(registry);
    }

    double pending() {
        try {
            return QuarkusTransaction.requiringNew().call(() -> events.pending());
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }
}
