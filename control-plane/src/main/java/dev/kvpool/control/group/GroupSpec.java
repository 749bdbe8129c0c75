package dev.kvpool.control.group;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** The writable fields of an instance group (REST input; the KVCM admin routes map onto it). */
@Schema(name = "InstanceGroupInput", example = """
        {"name": "search", "quotaBytes": 30000000000, "storageTypeQuotas": {"nfs": 10000000000},
         "waterLevels": {"softPercent": 80, "hardPercent": 95},
         "eviction": {"policy": "LRU", "triggerPeriodSeconds": 5, "stepSize": 1000, "stepPercentage": 10,
                      "ttlSeconds": 0, "readerLeaseMs": 1000},
         "storageCandidates": ["nfs_01"], "eventReportStorageCandidates": ["engine_events"],
         "maxInstanceCount": 100, "allowAnonymousMeta": true}""")
@JsonIgnoreProperties({"version", "createdAt", "updatedAt", "usage", "kvcm", "missingStorages"}) // read-only: GET, edit, PUT works
public record GroupSpec(
        String name,
        @Schema(description = "total quota in bytes, > 0") Long quotaBytes,
        @Schema(description = "quota per storage type (nfs, hf3fs, mooncake, tair_mem_pool, vcns_hf3fs) in bytes")
        Map<String, Long> storageTypeQuotas,
        WaterLevels waterLevels,
        Eviction eviction,
        @Schema(description = "data storage names, in preference order; a name not yet added is kept (missingStorages);"
                + " an existing event-report storage is refused") List<String> storageCandidates,
        @Schema(description = "0 = unlimited") Long maxInstanceCount,
        @Schema(description = "KVCM global_quota_group_name; defaults to the group name") String quotaGroupName,
        @Schema(description = "let KVCM connectors (which send no token) call the metadata plane for this group")
        Boolean allowAnonymousMeta,
        String userData,
        @Schema(description = "event-report storages (event_report_l1p5 / event_report_l2) where engines of this group "
                + "report their caches (KVCM ReportEvent); a name not yet added is kept, an existing data storage is "
                + "refused; absent on update keeps the list")
        List<String> eventReportStorageCandidates) {


    /** Percentages of the quota: eviction starts at {@code softPercent}, writes are refused at {@code hardPercent}. */
    public record WaterLevels(Integer softPercent, Integer hardPercent) {
    }

    /** Eviction policy (LRU, LFU, TTL, PREFIX_LRU) and its parameters. */
    public record Eviction(String policy, Integer triggerPeriodSeconds, Integer stepSize, Integer stepPercentage,
                           Long ttlSeconds, Long readerLeaseMs) {
    }
}
