package dev.kvpool.meta.quota;

import dev.kvpool.meta.storage.StorageKind;
import java.util.EnumMap;
import java.util.Map;

/**
 * Usage per instance group, in bytes: the group total (bytes per key × keys, §3.9.1) and per storage type (the
 * spec sizes of each location). Writes reserve before they allocate and release what they do not keep, atomically
 * per group, so concurrent writes can never take a group past its hard quota, not even by one block. In-process
 * with the embedded store; in Redis when replicas share a Redis store, so their writes share one budget.
 */
public interface QuotaLedger {

    /** A group's usage; from a shared ledger it is a snapshot. */
    final class Usage {
        long total;
        final EnumMap<StorageKind, Long> byType = new EnumMap<>(StorageKind.class);

        public Usage() {
        }

        public Usage(long total, Map<StorageKind, Long> types) {
            this.total = total;
            byType.putAll(types);
        }

        public synchronized long total() {
            return total;
        }

        public synchronized long byType(StorageKind k) {
            return byType.getOrDefault(k.usageKind(), 0L);
        }

        public synchronized Map<StorageKind, Long> types() {
            return new EnumMap<>(byType);
        }

        /** As {@link QuotaLedger#add}, on this sum: never below zero. */
        public synchronized void add(long totalBytes, StorageKind kind, long typeBytes) {
            total = Math.max(0, total + totalBytes);
            if (kind != null) {
                byType.put(kind.usageKind(), Math.max(0, byType.getOrDefault(kind.usageKind(), 0L) + typeBytes));
            }
        }
    }

    Usage usage(String group);

    /**
     * Reserves {@code totalBytes} against {@code capacity} and {@code typeBytes} of type {@code kind} against
     * {@code typeCapacity} (null = no per-type quota). All or nothing; false when either would be exceeded.
     */
    boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind, long typeBytes, Long typeCapacity);

    /** Unconditional add (startup rebuild) or, with negative amounts, release; never below zero. */
    void add(String group, long totalBytes, StorageKind kind, long typeBytes);

    void reset(String group);

    static QuotaLedger inMemory() {
        return new LocalQuotaLedger();
    }
}
