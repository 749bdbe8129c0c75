package dev.kvpool.control.services;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/**
 * A metadata-plane replica as its last stats report described it, or a data agent as its last heartbeat did;
 * {@code lastSeen} is when that report arrived.
 */
@Entity
@Table(name = "service_replica")
public class ReplicaEntity {
    @Id
    @Column(name = "replica_id", nullable = false)
    public String id;
    /** {@code meta} (a metadata-plane replica) or {@code agent} (a data agent). */
    @Column(name = "kind", nullable = false)
    public String kind;
    @Column(name = "url")
    public String url;
    @Column(name = "leader", nullable = false)
    public boolean leader;
    @Column(name = "store")
    public String store;
    @Column(name = "version")
    public String version;
    @Column(name = "started_at")
    public Instant startedAt;
    @Column(name = "instances", nullable = false)
    public long instances;
    @Column(name = "keys_count", nullable = false)
    public long keys;
    /** Its report period in seconds: DOWN after three periods without a report. */
    @Column(name = "period_s", nullable = false)
    public int periodSeconds;
    @Column(name = "last_seen", nullable = false)
    public Instant lastSeen;
    /** An agent's tiers as JSON, {@code {"<tier>": {"capacityBytes", "usedBytes", "blocks"}}}; null for a replica. */
    @Column(name = "tiers", length = 8192)
    public String tiers;
}
