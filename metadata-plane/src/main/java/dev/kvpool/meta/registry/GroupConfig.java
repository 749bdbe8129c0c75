package dev.kvpool.meta.registry;

import dev.kvpool.meta.index.StorageKind;
import java.util.List;
import java.util.Map;

/**
 * An instance group: the unit of quota. Capacity and per-type quotas are bytes; {@code maxKeyCount} caps each
 * instance's index (KVCM meta_indexer_config.max_key_count, 0 = unlimited). {@code eventReportStorageCandidates}
 * names the event-report storages whose engine reports (KVCM ReportEvent) this group's instances accept
 * (kvcm-engine-events.md §6.1); they are never placement candidates.
 */
public record GroupConfig(String name, List<String> storageCandidates, String quotaGroupName, long maxInstanceCount,
                          long capacity, Map<StorageKind, Long> typeQuotas, Prefer prefer, long maxKeyCount,
                          int mutexShardNum, int searchCacheCapacity, String extraInfo, String userData, long version,
                          ReclaimConfig reclaim, List<String> eventReportStorageCandidates) {

    public GroupConfig {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("instance group name must not be empty");
        }
        if (storageCandidates == null || storageCandidates.isEmpty()) {
            throw new IllegalArgumentException("instance group '" + name + "': storage_candidates must not be empty");
        }
        if (capacity <= 0) {
            throw new IllegalArgumentException("instance group '" + name + "': quota capacity must be > 0, got " + capacity);
        }
        if (mutexShardNum <= 0 || Integer.bitCount(mutexShardNum) != 1) {
            throw new IllegalArgumentException("instance group '" + name + "': mutex_shard_num must be a power of two, got "
                    + mutexShardNum);
        }
        if (maxKeyCount < 0) {
            throw new IllegalArgumentException("instance group '" + name + "': max_key_count must be >= 0");
        }
        if (reclaim == null) {
            reclaim = ReclaimConfig.DEFAULT;
        }
        storageCandidates = List.copyOf(storageCandidates);
        eventReportStorageCandidates = eventReportStorageCandidates == null ? List.of()
                : List.copyOf(eventReportStorageCandidates);
        typeQuotas = Map.copyOf(typeQuotas);
    }

    /** This group with another reclaim strategy and version (runtime water-level and policy changes). */
    public GroupConfig withReclaim(ReclaimConfig r, long newVersion) {
        return new GroupConfig(name, storageCandidates, quotaGroupName, maxInstanceCount, capacity, typeQuotas, prefer,
                maxKeyCount, mutexShardNum, searchCacheCapacity, extraInfo, userData, newVersion, r,
                eventReportStorageCandidates);
    }

    /** KVCM CachePreferStrategy (§3.9.2 step 7): ALWAYS_X fails without an X candidate, PREFER_X falls back. */
    public record Prefer(StorageKind kind, boolean always) {
        public static final Prefer FIRST = new Prefer(null, false);

        public static Prefer ofWire(int v) {
            return switch (v) {
                case 1 -> new Prefer(StorageKind.HF3FS, true);
                case 2 -> new Prefer(StorageKind.HF3FS, false);
                case 3 -> new Prefer(StorageKind.MOONCAKE, true);
                case 4 -> new Prefer(StorageKind.MOONCAKE, false);
                case 5 -> new Prefer(StorageKind.PACE, true);
                case 6 -> new Prefer(StorageKind.PACE, false);
                case 7 -> new Prefer(StorageKind.VCNS_HF3FS, true);
                case 8 -> new Prefer(StorageKind.VCNS_HF3FS, false);
                case 0 -> FIRST;
                default -> throw new IllegalArgumentException("unknown cache prefer strategy " + v);
            };
        }
    }
}
