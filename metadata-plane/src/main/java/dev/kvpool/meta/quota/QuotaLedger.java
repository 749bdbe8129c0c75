package dev.kvpool.meta.quota;

import dev.kvpool.meta.storage.StorageKind;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Usage per instance group, in bytes: the group total (bytes per key × keys, §3.9.1) and per storage type (the
 * spec sizes of each location). Writes reserve before they allocate and release what they do not keep, under
 * one lock per group, so concurrent writes can never take a group past its hard quota, not even by one block.
 */
public final class QuotaLedger {

    public static final class Usage {
        long total;
        final EnumMap<StorageKind, Long> byType = new EnumMap<>(StorageKind.class);

        public synchronized long total() {
            return total;
        }

        public synchronized long byType(StorageKind k) {
            return byType.getOrDefault(k.usageKind(), 0L);
        }

        public synchronized Map<StorageKind, Long> types() {
            return new EnumMap<>(byType);
        }
    }

    private final Map<String, Usage> groups = new ConcurrentHashMap<>();

    public Usage usage(String group) {
        return groups.computeIfAbsent(group, g -> new Usage());
    }

    /**
     * Reserves {@code totalBytes} against {@code capacity} and {@code typeBytes} of type {@code kind} against
     * {@code typeCapacity} (≤ 0 or null = no per-type quota). All or nothing; false when either would be exceeded.
     */
    public boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind, long typeBytes,
                              Long typeCapacity) {
        Usage u = usage(group);
        synchronized (u) {
            if (capacity <= 0 || u.total + totalBytes > capacity) {
                return false;
            }
            StorageKind k = kind.usageKind();
            long t = u.byType.getOrDefault(k, 0L);
            if (typeCapacity != null && t + typeBytes > typeCapacity) {
                return false;
            }
            u.total += totalBytes;
            u.byType.put(k, t + typeBytes);
            return true;
        }
    }

    /** Unconditional add (startup rebuild) or, with negative amounts, release; never below zero. */
    public void add(String group, long totalBytes, StorageKind kind, long typeBytes) {
        Usage u = usage(group);
        synchronized (u) {
            u.total = Math.max(0, u.total + totalBytes);
            StorageKind k = kind == null ? null : kind.usageKind();
            if (k != null) {
                u.byType.put(k, Math.max(0, u.byType.getOrDefault(k, 0L) + typeBytes));
            }
        }
    }

    public void reset(String group) {
        groups.remove(group);
    }
}
