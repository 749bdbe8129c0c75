package dev.kvpool.control.storage;

import jakarta.persistence.Column;
import dev.kvpool.control.common.VersionedEntity;
import jakarta.persistence.Entity;
import jakarta.persistence.Table;

/** A storage backend. {@code specJson} is the KVCM admin StorageConfig in proto3 JSON (the exact KVCM shape). */
@Entity
@Table(name = "storage")
public class StorageEntity extends VersionedEntity {
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
}
