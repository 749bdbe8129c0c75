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
    public static final List<String> NAMES = List.of("nfs", "hf3fs", "mooncake", "tair_mem_pool", "vcns_hf3fs");

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
            default -> throw ApiException.invalid("storage_type", "storage type must be one of " + NAMES + ", got " + t);
        };
    }

    /** The canonical type of a KVCM StorageConfig, validating it as KVCM's AddStorage does (§3.11). */
    public static String validate(StorageConfig c) {
        if (c.getGlobalUniqueName().isBlank()) {
            throw ApiException.invalid("global_unique_name", "storage global_unique_name must not be empty");
        }
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
                    + "' needs exactly one spec among nfs, threefs, mooncake, tair_mem_pool, vcnsthreefs");
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
            default -> c.getLocal();
        };
    }

    private static void need(String v, String field) {
        if (v == null || v.isBlank()) {
            throw ApiException.invalid(field, field + " is required");
        }
    }
}
