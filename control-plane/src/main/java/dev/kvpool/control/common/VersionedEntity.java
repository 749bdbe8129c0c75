package dev.kvpool.control.common;

import jakarta.persistence.Column;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.MappedSuperclass;
import java.time.Instant;

/**
 * What every configuration object carries: a surrogate id, the version clients send back in If-Match (and
 * events carry), and its creation and last-change times. {@link #created()} and {@link #changed()} are the only
 * ways they move.
 */
@MappedSuperclass
public abstract class VersionedEntity {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;
    @Column(nullable = false)
    public long version;
    @Column(name = "created_at", nullable = false)
    public Instant createdAt;
    @Column(name = "updated_at", nullable = false)
    public Instant updatedAt;

    /** A new object: version 1, both times now. */
    public void created() {
        version = 1;
        createdAt = updatedAt = Instant.now();
    }

    /** One more change: the next version, updated now. */
    public void changed() {
        version++;
        updatedAt = Instant.now();
    }
}
