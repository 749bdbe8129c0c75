package dev.kvpool.meta.quota;

import dev.kvpool.meta.index.StorageKind;
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

        /**
         * As {@link QuotaLedger#add}, on this sum: never below zero, never past Long.MAX_VALUE. Returns the bytes
         * a release took below zero (0 when the books balance): usage released that was never counted is drift.
         */
        public synchronized long add(long totalBytes, StorageKind kind, long typeBytes) {
            long drift = 0;
            long t = Math.addExact(total, totalBytes);
            if (t < 0) {
                drift = -t;
                t = 0;
            }
            total = t;
            if (kind != null) {
                long v = Math.addExact(byType.getOrDefault(kind.usageKind(), 0L), typeBytes);
                if (v < 0) {
                    drift = Math.max(drift, -v);
                    v = 0;
                }
                byType.put(kind.usageKind(), v);
            }
            return drift;
        }
    }

    Usage usage(String group);

    /**
     * Reserves {@code totalBytes} against {@code capacity} and {@code typeBytes} of type {@code kind} against
     * {@code typeCapacity} (null = no per-type quota). All or nothing; false when either would be exceeded.
     */
    boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind, long typeBytes, Long typeCapacity);

    /** Reservations are of what a write adds: never negative (a negative one would lower the usage). */
    static void checkReservation(long totalBytes, long typeBytes) {
        if (totalBytes < 0 || typeBytes < 0) {
            throw new IllegalArgumentException("a reservation must not be negative: " + totalBytes + ", " + typeBytes);
        }
    }

    /**
     * Unconditional add (startup rebuild) or, with negative amounts, release; never below zero. A release that
     * would take usage below zero is drift (the books no longer match the index): it is clamped, counted in
     * {@link #drift()} and logged.
     */
    void add(String group, long totalBytes, StorageKind kind, long typeBytes);

    /** Releases so far that would have taken a group's usage below zero (kvpool_meta_usage_drift). */
    DriftLog drift();

    /** Counts and reports drift: every event in the metric, a log line per group at most every 30 s. */
    final class DriftLog {
        private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(QuotaLedger.class);
        private final java.util.concurrent.atomic.AtomicLong events = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.atomic.AtomicLong bytes = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.Map<String, Long> loggedAt = new java.util.concurrent.ConcurrentHashMap<>();

        public void report(String group, long driftBytes, String where) {
            if (driftBytes <= 0) {
                return;
            }
            events.incrementAndGet();
            bytes.addAndGet(driftBytes);
            long now = System.nanoTime();
            Long last = loggedAt.get(group);
            if (last == null || now - last > 30_000_000_000L) {
                loggedAt.put(group, now);
                LOG.warnf("usage of instance group %s: %s would have gone %,d bytes below zero; clamped at 0 "
                        + "(usage accounting drift: %d such releases so far)", group, where, driftBytes, events.get());
            }
        }

        public long events() {
            return events.get();
        }

        public long bytes() {
            return bytes.get();
        }
    }

    void reset(String group);

    static QuotaLedger inMemory() {
        return new LocalQuotaLedger();
    }
}
