package dev.kvpool.control.storage;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** A storage backend. {@code specJson} is the KVCM admin StorageConfig in proto3 JSON (the exact KVCM shape). */
@Entity
@Table(name = "storage")
public class StorageEntity {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;
    @Column(nullable = false)
    public String name;
    @Column(nullable = false)
    public String type;
    @Column(nullable = false)
    public boolean enabled;
    @Column(name = "check_available", nullable = false)
    public boolean checkAvailable;
    @Column(name = "spec_json", nullable = false, length = 1000000)
    public String specJson;
    @Column(nullable = false)
    public long version;
    @Column(name = "created_at", nullable = false)
    public Instant createdAt;
    @Column(name = "updated_at", nullable = false)
    public Instant updatedAt;
}
