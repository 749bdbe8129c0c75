package dev.kvpool.control.instance;

import dev.kvpool.control.group.GroupEntity;
import jakarta.persistence.Column;
import dev.kvpool.control.common.VersionedEntity;
import jakarta.persistence.Entity;
import jakarta.persistence.FetchType;
import jakarta.persistence.JoinColumn;
import jakarta.persistence.ManyToOne;
import jakarta.persistence.Table;

/** One KV cache namespace with its fixed KV config; the JSON columns hold KVCM proto3 JSON. */
@Entity
@Table(name = "instance")
public class InstanceEntity extends VersionedEntity {
    @Column(name = "instance_id", nullable = false)
    public String instanceId;
    @ManyToOne(fetch = FetchType.EAGER, optional = false)
    @JoinColumn(name = "group_id", nullable = false)
    public GroupEntity group;
    @Column(name = "quota_group_name", nullable = false)
    public String quotaGroupName;
    @Column(name = "block_size", nullable = false)
    public int blockSize;
    @Column(name = "hash_scheme", nullable = false)
    public String hashScheme;
    @Column(name = "model_json", nullable = false, length = 1000000)
    public String modelJson;
    @Column(name = "specs_json", nullable = false, length = 1000000)
    public String specsJson;
    @Column(name = "spec_groups_json", nullable = false, length = 1000000)
    public String specGroupsJson;
}
