package dev.kvpool.control.outbox;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** One config change waiting for (or past) publication to kvpool.config; written in the change's transaction. */
@Entity
@Table(name = "outbox_event")
public class OutboxEvent {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;
    @Column(name = "event_id", nullable = false)
    public String eventId;
    @Column(nullable = false)
    public long position;
    @Column(nullable = false)
    public String kind;
    @Column(nullable = false)
    public String name;
    @Column(nullable = false)
    public String action;
    @Column(nullable = false)
    public long version;
    @Column(nullable = false, length = 1000000)
    public String payload;
    @Column(name = "created_at", nullable = false)
    public Instant createdAt;
    @Column(name = "published_at")
    public Instant publishedAt;
}
