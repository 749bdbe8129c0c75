package dev.kvpool.control.outbox;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import jakarta.enterprise.context.ApplicationScoped;

@ApplicationScoped
public class OutboxRepository implements PanacheRepository<OutboxEvent> {
    public long pending() {
        return count("publishedAt is null");
    }
}
