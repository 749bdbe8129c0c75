package dev.kvpool.control.outbox;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.events.EventCodec;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;

/**
 * The write side of the outbox. Every change first calls {@link #lock()} (which serializes configuration changes on
 * the single {@code config_revision} row), then {@link #record} in the same transaction: the row commits or rolls back
 * with the change, and its {@code position} (the config revision) orders the topic in commit order.
 */
@ApplicationScoped
public class Outbox {
    @Inject
    EntityManager em;
    @Inject
    OutboxRepository events;

    /** Locks the revision row for the rest of the transaction and returns the current revision. */
    @Transactional(Transactional.TxType.MANDATORY)
    public long lock() {
        Object r = em.createNativeQuery("select revision from config_revision where id = 1 for update").getSingleResult();
        return ((Number) r).longValue();
    }

    /** The current revision without locking (for reads). */
    public long revision() {
        return ((Number) em.createNativeQuery("select revision from config_revision where id = 1").getSingleResult())
                .longValue();
    }

    /** Appends a change; the caller holds {@link #lock()}. Returns its position. */
    @Transactional(Transactional.TxType.MANDATORY)
    public long record(String kind, String name, String action, long version, JsonNode object) {
        long position = lock() + 1;
        em.createNativeQuery("update config_revision set revision = ?1 where id = 1").setParameter(1, position)
                .executeUpdate();
        OutboxEvent e = new OutboxEvent();
        e.eventId = UUID.randomUUID().toString();
        e.position = position;
        e.kind = kind;
        e.name = name;
        e.action = action;
        e.version = version;
        e.payload = new String(EventCodec.toJson(new ConfigEvent(kind, name, action, version, object)),
                StandardCharsets.UTF_8);
        e.createdAt = Instant.now();
        events.persist(e);
        return position;
    }
}
