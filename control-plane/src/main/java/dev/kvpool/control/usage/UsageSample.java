package dev.kvpool.control.usage;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** One usage report from the metadata plane: bytes a group uses on one storage type at a moment. */
@Entity
@Table(name = "usage_sample")
public class UsageSample {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;
    @Column(name = "group_name", nullable = false)
    public String groupName;
    @Column(name = "storage_type", nullable = false)
    public String storageType;
    @Column(name = "used_bytes", nullable = false)
    public long usedBytes;
    @Column(name = "sampled_at", nullable = false)
    public Instant sampledAt;
}
