package dev.kvpool.meta.registry;

/**
 * An event-report storage (kvcm-engine-events.md §6.1): no bytes live here, it names where engines report their own
 * caches through ReportEvent and carries the reporter liveness and snapshot settings. {@code l2} = peer-shareable
 * (ST_EVENT_REPORT_L2), else engine-local (ST_EVENT_REPORT_L1P5).
 */
public record EventReportStorage(String name, boolean l2, long heartbeatTimeoutMs, long cleanupGraceMs,
                                 long livenessCheckIntervalMs, long snapshotMinIntervalMs,
                                 long snapshotDeltaDrainTimeoutMs) {
    public static final long HEARTBEAT_TIMEOUT_MS = 30_000, CLEANUP_GRACE_MS = 300_000,
            LIVENESS_CHECK_INTERVAL_MS = 5_000, SNAPSHOT_MIN_INTERVAL_MS = 30_000, SNAPSHOT_DRAIN_TIMEOUT_MS = 10_000;

    public EventReportStorage {
        if (heartbeatTimeoutMs <= 0 || cleanupGraceMs < 0 || livenessCheckIntervalMs <= 0 || snapshotMinIntervalMs <= 0
                || snapshotDeltaDrainTimeoutMs < 0) {
            throw new IllegalArgumentException("event-report storage '" + name + "': heartbeat_timeout_ms, "
                    + "liveness_check_interval_ms and snapshot_min_interval_ms must be > 0, cleanup_grace_ms and "
                    + "snapshot_delta_drain_timeout_ms >= 0");
        }
    }

    /** With KVCM's defaults. */
    public static EventReportStorage withDefaults(String name, boolean l2) {
        return new EventReportStorage(name, l2, HEARTBEAT_TIMEOUT_MS, CLEANUP_GRACE_MS, LIVENESS_CHECK_INTERVAL_MS,
                SNAPSHOT_MIN_INTERVAL_MS, SNAPSHOT_DRAIN_TIMEOUT_MS);
    }
}
