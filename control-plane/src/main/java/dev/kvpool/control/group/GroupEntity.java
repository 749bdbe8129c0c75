package dev.kvpool.control.group;

import jakarta.persistence.CollectionTable;
import jakarta.persistence.Column;
import jakarta.persistence.ElementCollection;
import dev.kvpool.control.common.VersionedEntity;
import jakarta.persistence.Entity;
import jakarta.persistence.FetchType;
import jakarta.persistence.JoinColumn;
import jakarta.persistence.MapKeyColumn;
import jakarta.persistence.OrderColumn;
import jakarta.persistence.Table;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * An instance group: the unit of quota. {@code kvcmJson} keeps the KVCM admin InstanceGroup as last written (its
 * cache_config details that KVPool does not model), refreshed from the columns on every write.
 */
@Entity
@Table(name = "instance_group")
public class GroupEntity extends VersionedEntity {
    @Column(nullable = false)
    public String name;
    @Column(name = "quota_bytes", nullable = false)
    public long quotaBytes;
    @Column(name = "soft_water_pct", nullable = false)
    public int softWaterPct;
    @Column(name = "hard_water_pct", nullable = false)
    public int hardWaterPct;
    @Column(name = "eviction_policy", nullable = false)
    public String evictionPolicy;
    @Column(name = "trigger_period_s", nullable = false)
    public int triggerPeriodSeconds;
    @Column(name = "step_size", nullable = false)
    public int stepSize;
    @Column(name = "step_pct", nullable = false)
    public int stepPercentage;
    @Column(name = "ttl_seconds", nullable = false)
    public long ttlSeconds;
    @Column(name = "reader_lease_ms", nullable = false)
    public long readerLeaseMs;
    @Column(name = "max_instance_count", nullable = false)
    public long maxInstanceCount;
    @Column(name = "quota_group_name", nullable = false)
    public String quotaGroupName;
    @Column(name = "allow_anonymous_meta", nullable = false)
    public boolean allowAnonymousMeta;
    @Column(name = "user_data", nullable = false, length = 1000000)
    public String userData;
    @Column(name = "kvcm_json", nullable = false, length = 1000000)
    public String kvcmJson;

    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "group_storage_candidate", joinColumns = @JoinColumn(name = "group_id"))
    @OrderColumn(name = "position")
    @Column(name = "storage_name", nullable = false)
    public List<String> storageCandidates = new ArrayList<>();

    /** Event-report storages (no bytes: where engines report their own caches, kvcm-engine-events.md §6.1). */
    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "group_event_report_candidate", joinColumns = @JoinColumn(name = "group_id"))
    @OrderColumn(name = "position")
    @Column(name = "storage_name", nullable = false)
    public List<String> eventReportStorageCandidates = new ArrayList<>();

    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "group_type_quota", joinColumns = @JoinColumn(name = "group_id"))
    @MapKeyColumn(name = "storage_type")
    @Column(name = "capacity", nullable = false)
    public Map<String, Long> typeQuotas = new TreeMap<>();
}
