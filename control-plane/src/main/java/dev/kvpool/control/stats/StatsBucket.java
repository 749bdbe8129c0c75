package dev.kvpool.control.stats;

import jakarta.persistence.Column;
import jakarta.persistence.Id;
import jakarta.persistence.MappedSuperclass;

/**
 * One instance's counts over one bucket (a minute, or an hour once rolled up), summed over every report of every
 * metadata-plane replica that fell into it. {@code t} is the bucket's start in epoch seconds.
 */
@MappedSuperclass
public abstract class StatsBucket {
    @Id
    @Column(name = "group_name", nullable = false)
    public String groupName;
    @Id
    @Column(name = "t", nullable = false)
    public long t;
    @Id
    @Column(name = "instance_id", nullable = false)
    public String instanceId;
    @Column(name = "queries", nullable = false)
    public long queries;
    @Column(name = "queried_blocks", nullable = false)
    public long queriedBlocks;
    @Column(name = "hit_blocks", nullable = false)
    public long hitBlocks;
    @Column(name = "written_blocks", nullable = false)
    public long writtenBlocks;
    @Column(name = "evicted_water_level", nullable = false)
    public long evictedWaterLevel;
    @Column(name = "evicted_type_water", nullable = false)
    public long evictedTypeWaterLevel;
    @Column(name = "evicted_key_count", nullable = false)
    public long evictedKeyCount;
    @Column(name = "evicted_ttl", nullable = false)
    public long evictedTtl;
}
