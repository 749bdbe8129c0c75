package dev.kvpool.control.storage;

import com.google.protobuf.Message;
import dev.kvpool.api.proto.admin.StorageConfig;
import dev.kvpool.api.proto.admin.StorageType;
import dev.kvpool.control.common.ApiException;
import java.util.List;
import java.util.Locale;

/**
 * Storage type names of the REST API (the names the metadata plane's startup file uses) and their KVCM forms: the
 * StorageConfig oneof member and the StorageType enum.
 */
public final class StorageTypes {
    public static final List<String> NAMES = List.of("nfs", "hf3fs", "mooncake", "tair_mem_pool", "vcns_hf3fs",
            "event_report_l1p5", "event_report_l2");
    /** Types that hold block bytes: quotas and placement candidates. */
    public static final List<String> DATA_NAMES = NAMES.subList(0, 5);
    public static final String EVENT_REPORT_L1P5 = "event_report_l1p5", EVENT_REPORT_L2 = "event_report_l2";
    /** Upper bound of every event-report duration (a day: longer is a typo, and keeps sums far from overflow). */
    public static final long MAX_EVENT_REPORT_MS = 86_400_000;
    /** The five EventReportStorageSpec fields with KVCM's defaults (kvcm-engine-events.md §6.1), in proto order. */
    public static final java.util.SequencedMap<String, Long> EVENT_REPORT_DEFAULTS = eventReportDefaults();

    private static java.util.SequencedMap<String, Long> eventReportDefaults() {
        var m = new java.util.LinkedHashMap<String, Long>();
        m.put("heartbeat_timeout_ms", 30_000L);
        m.put("cleanup_grace_ms", 300_000L);
        m.put("liveness_check_interval_ms", 5_000L);
        m.put("snapshot_min_interval_ms", 30_000L);
        m.put("snapshot_delta_drain_timeout_ms", 10_000L);
        return java.util.Collections.unmodifiableSequencedMap(m);
    }

    private StorageTypes() {
    }

    public static String canonical(String t, String field) {
        if (t == null || t.isBlank()) {
            throw ApiException.invalid(field, field + " is required; one of " + NAMES);
        }
        return switch (t.trim().toLowerCase(Locale.ROOT)) {
            case "nfs", "file", "st_nfs", "4" -> "nfs";
            case "hf3fs", "3fs", "threefs", "st_3fs", "1" -> "hf3fs";
            case "mooncake", "st_mooncake", "2" -> "mooncake";
            case "tair_mem_pool", "tairmempool", "pace", "st_tairmempool", "3" -> "tair_mem_pool";
            case "vcns_hf3fs", "vcnsthreefs", "vcns_3fs", "st_vcns_3fs", "5" -> "vcns_hf3fs";
            // an older RTP-LLM publisher said "ST_EVENT_REPORT" (kvcm-engine-events.md §2): engine-local
            case "event_report_l1p5", "st_event_report_l1p5", "7", "event_report", "st_event_report" -> EVENT_REPORT_L1P5;
            case "event_report_l2", "st_event_report_l2", "8" -> EVENT_REPORT_L2;
            default -> throw ApiException.invalid(field, "unknown storage type '" + t + "'; one of " + NAMES);
        };
    }

    public static StorageType wire(String canonical) {
        return switch (canonical) {
            case "nfs" -> StorageType.ST_NFS;
            case "hf3fs" -> StorageType.ST_3FS;
            case "mooncake" -> StorageType.ST_MOONCAKE;
            case "tair_mem_pool" -> StorageType.ST_TAIRMEMPOOL;
            case "vcns_hf3fs" -> StorageType.ST_VCNS_3FS;
            case EVENT_REPORT_L1P5 -> StorageType.ST_EVENT_REPORT_L1P5;
            case EVENT_REPORT_L2 -> StorageType.ST_EVENT_REPORT_L2;
            default -> StorageType.ST_UNSPECIFIED;
        };
    }

    public static String fromWire(StorageType t) {
        return switch (t) {
            case ST_NFS -> "nfs";
            case ST_3FS -> "hf3fs";
            case ST_MOONCAKE -> "mooncake";
            case ST_TAIRMEMPOOL -> "tair_mem_pool";
            case ST_VCNS_3FS -> "vcns_hf3fs";
            case ST_EVENT_REPORT_L1P5 -> EVENT_REPORT_L1P5;
            case ST_EVENT_REPORT_L2 -> EVENT_REPORT_L2;
            default -> throw ApiException.invalid("storage_type", "storage type must be one of " + NAMES + ", got " + t);
        };
    }

    /** Event-report storages hold no bytes: no type quotas, never placement candidates. */
    public static boolean eventReport(String canonical) {
        return EVENT_REPORT_L1P5.equals(canonical) || EVENT_REPORT_L2.equals(canonical);
    }

    /** The canonical type of a KVCM StorageConfig, validating it as KVCM's AddStorage does (§3.11). */
    public static String validate(StorageConfig c) {
        if (c.getGlobalUniqueName().isBlank()) {
            throw ApiException.invalid("global_unique_name", "storage global_unique_name must not be empty");
        }
        boolean reportType = c.getStorageType() == StorageType.ST_EVENT_REPORT_L1P5
                || c.getStorageType() == StorageType.ST_EVENT_REPORT_L2;
        if (c.getStorageSpecCase() == StorageConfig.StorageSpecCase.EVENT_REPORT || reportType) {
            // K7: the spec alone does not say L1P5 or L2, storage_type does, and it must match the spec
            if (c.getStorageSpecCase() != StorageConfig.StorageSpecCase.EVENT_REPORT) {
                throw ApiException.invalid("storage_type", "storage_type " + c.getStorageType()
                        + " needs the event_report spec, got " + c.getStorageSpecCase().name().toLowerCase(Locale.ROOT));
            }
            if (!reportType) {
                throw ApiException.invalid("storage_type", "storage_type must be ST_EVENT_REPORT_L1P5 or "
                        + "ST_EVENT_REPORT_L2 with an event_report spec, got " + c.getStorageType());
            }
            eventReportBounds(c.getEventReport());
            return fromWire(c.getStorageType());
        }
        if (c.getStorageType() != StorageType.ST_UNSPECIFIED) {
            // data storages may carry their type too (K7 clients set it); when they do it must agree with the spec
            String given = c.getStorageType() == StorageType.UNRECOGNIZED ? null : switch (c.getStorageType()) {
                case ST_NFS, ST_3FS, ST_MOONCAKE, ST_TAIRMEMPOOL, ST_VCNS_3FS -> fromWire(c.getStorageType());
                default -> null;
            };
            String spec = c.getStorageSpecCase() == StorageConfig.StorageSpecCase.STORAGESPEC_NOT_SET ? null
                    : dataType(c);
            if (given == null || !given.equals(spec)) {
                throw ApiException.invalid("storage_type", "storage_type " + c.getStorageType()
                        + " does not match the storage's spec " + c.getStorageSpecCase().name().toLowerCase(Locale.ROOT));
            }
        }
        return dataType(c);
    }

    /** The five durations: each in [min, 1 day]; snapshot_min_interval_ms and the liveness pair must be > 0. */
    static void eventReportBounds(dev.kvpool.api.proto.admin.EventReportStorageSpec s) {
        range("event_report.heartbeat_timeout_ms", s.getHeartbeatTimeoutMs(), 1);
        range("event_report.cleanup_grace_ms", s.getCleanupGraceMs(), 0);
        range("event_report.liveness_check_interval_ms", s.getLivenessCheckIntervalMs(), 1);
        range("event_report.snapshot_min_interval_ms", s.getSnapshotMinIntervalMs(), 1);
        range("event_report.snapshot_delta_drain_timeout_ms", s.getSnapshotDeltaDrainTimeoutMs(), 0);
    }

    private static void range(String field, long v, long min) {
        if (v < min || v > MAX_EVENT_REPORT_MS) {
            throw ApiException.invalid(field, field + " must be between " + min + " and " + MAX_EVENT_REPORT_MS
                    + " (one day) milliseconds, got " + v);
        }
    }

    /**
     * KVCM's defaults for the event-report fields left at zero: proto3 cannot tell an absent field from 0, and a
     * KVCM client that leaves them out means the defaults (so 0 cannot be asked for through KVCM; REST can).
     */
    public static StorageConfig withEventReportDefaults(StorageConfig c) {
        if (c.getStorageSpecCase() != StorageConfig.StorageSpecCase.EVENT_REPORT) {
            return c;
        }
        var e = c.getEventReport().toBuilder();
        if (e.getHeartbeatTimeoutMs() == 0) {
            e.setHeartbeatTimeoutMs(EVENT_REPORT_DEFAULTS.get("heartbeat_timeout_ms"));
        }
        if (e.getCleanupGraceMs() == 0) {
            e.setCleanupGraceMs(EVENT_REPORT_DEFAULTS.get("cleanup_grace_ms"));
        }
        if (e.getLivenessCheckIntervalMs() == 0) {
            e.setLivenessCheckIntervalMs(EVENT_REPORT_DEFAULTS.get("liveness_check_interval_ms"));
        }
        if (e.getSnapshotMinIntervalMs() == 0) {
            e.setSnapshotMinIntervalMs(EVENT_REPORT_DEFAULTS.get("snapshot_min_interval_ms"));
        }
        if (e.getSnapshotDeltaDrainTimeoutMs() == 0) {
            e.setSnapshotDeltaDrainTimeoutMs(EVENT_REPORT_DEFAULTS.get("snapshot_delta_drain_timeout_ms"));
        }
        return c.toBuilder().setEventReport(e).build();
    }

    private static String dataType(StorageConfig c) {
        return switch (c.getStorageSpecCase()) {
            case NFS -> {
                need(c.getNfs().getRootPath(), "nfs.root_path");
                yield "nfs";
            }
            case THREEFS -> {
                need(c.getThreefs().getMountpoint(), "threefs.mountpoint");
                need(c.getThreefs().getRootDir(), "threefs.root_dir");
                yield "hf3fs";
            }
            case MOONCAKE -> {
                var m = c.getMooncake();
                need(m.getLocalHostname(), "mooncake.local_hostname");
                need(m.getMetadataConnstring(), "mooncake.metadata_connstring");
                need(m.getProtocol(), "mooncake.protocol");
                if (m.getProtocol().equalsIgnoreCase("rdma")) {
                    need(m.getRdmaDevice(), "mooncake.rdma_device");
                }
                need(m.getMasterServiceEntry(), "mooncake.master_service_entry");
                yield "mooncake";
            }
            case TAIR_MEM_POOL -> {
                need(c.getTairMemPool().getDomain(), "tair_mem_pool.domain");
                yield "tair_mem_pool";
            }
            case VCNSTHREEFS -> {
                var v = c.getVcnsthreefs();
                need(v.getMountpoint(), "vcnsthreefs.mountpoint");
                need(v.getRootDir(), "vcnsthreefs.root_dir");
                need(v.getRemoteHost(), "vcnsthreefs.remote_host");
                if (v.getRemotePort() <= 0) {
                    throw ApiException.invalid("vcnsthreefs.remote_port", "vcnsthreefs.remote_port must be > 0");
                }
                need(v.getMetaStorageUri(), "vcnsthreefs.meta_storage_uri");
                yield "vcns_hf3fs";
            }
            default -> throw ApiException.invalid("storage_spec", "storage '" + c.getGlobalUniqueName()
                    + "' needs exactly one spec among nfs, threefs, mooncake, tair_mem_pool, vcnsthreefs, "
                    + "event_report");
        };
    }

    /** The oneof member name that holds the spec of a canonical type. */
    public static String member(String canonical) {
        return switch (canonical) {
            case "nfs" -> "nfs";
            case "hf3fs" -> "threefs";
            case "mooncake" -> "mooncake";
            case "tair_mem_pool" -> "tair_mem_pool";
            case "vcns_hf3fs" -> "vcnsthreefs";
            case EVENT_REPORT_L1P5, EVENT_REPORT_L2 -> "event_report";
            default -> throw new IllegalArgumentException(canonical);
        };
    }

    public static Message spec(StorageConfig c) {
        return switch (c.getStorageSpecCase()) {
            case NFS -> c.getNfs();
            case THREEFS -> c.getThreefs();
            case MOONCAKE -> c.getMooncake();
            case TAIR_MEM_POOL -> c.getTairMemPool();
            case VCNSTHREEFS -> c.getVcnsthreefs();
            case EVENT_REPORT -> c.getEventReport();
            default -> c.getLocal();
        };
    }

    private static void need(String v, String field) {
        if (v == null || v.isBlank()) {
            throw ApiException.invalid(field, field + " is required");
        }
    }
}
