package dev.kvpool.meta.quota;

import dev.kvpool.meta.index.StorageKind;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The in-process ledger: one lock per group. */
final class LocalQuotaLedger implements QuotaLedger {
    private final Map<String, Usage> groups = new ConcurrentHashMap<>();

    @Override
    public Usage usage(String group) {
        return groups.computeIfAbsent(group, g -> new Usage());
    }

    @Override
    public boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind, long typeBytes,
                              Long typeCapacity) {
        QuotaLedger.checkReservation(totalBytes, typeBytes);
        Usage u = usage(group);
        synchronized (u) {
            // compared as "what is left", never as a sum that could wrap past Long.MAX_VALUE
            if (capacity <= 0 || totalBytes > capacity - u.total) {
                return false;
            }
            StorageKind k = kind.usageKind();
            long t = u.byType.getOrDefault(k, 0L);
            if (typeCapacity != null && typeBytes > typeCapacity - t) {
                return false;
            }
            u.total += totalBytes;
            u.byType.put(k, t + typeBytes);
            return true;
        }
    }

    @Override
    public void add(String group, long totalBytes, StorageKind kind, long typeBytes) {
        drift.report(group, usage(group).add(totalBytes, kind, typeBytes), "a release");
    }

    private final DriftLog drift = new DriftLog();

    @Override
    public DriftLog drift() {
        return drift;
    }

    @Override
    public void reset(String group) {
        groups.remove(group);
    }
}
