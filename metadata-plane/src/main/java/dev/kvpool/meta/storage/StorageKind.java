package dev.kvpool.meta.storage;

import dev.kvpool.api.proto.meta.StorageType;
import java.util.Arrays;
import java.util.Locale;

/** Storage types, with their KVCM wire enum and the type string used in URIs and storage_configs. */
public enum StorageKind {
    FILE("file", StorageType.ST_NFS, 5),
    HF3FS("hf3fs", StorageType.ST_3FS, 3),
    MOONCAKE("mooncake", StorageType.ST_MOONCAKE, 3),
    PACE("pace", StorageType.ST_TAIRMEMPOOL, 3),
    VCNS_HF3FS("vcns_hf3fs", StorageType.ST_VCNS_3FS, 1);

    public final String scheme;
    public final StorageType wire;
    /** KVCM's read weight when a block has replicas on several storages (§3.5.3). */
    public final int readWeight;

    StorageKind(String scheme, StorageType wire, int readWeight) {
        this.scheme = scheme;
        this.wire = wire;
        this.readWeight = readWeight;
    }

    /** Quota bookkeeping counts vcns_hf3fs as hf3fs (§3.9.1). */
    public StorageKind usageKind() {
        return this == VCNS_HF3FS ? HF3FS : this;
    }

    /** Accepts the type string ("file", "nfs", "hf3fs", "3fs", "mooncake", "pace", "tair_mem_pool", ...) or a wire name/number. */
    public static StorageKind parse(String s) {
        String v = s.trim().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "file", "nfs", "st_nfs", "4", "local" -> FILE;
            case "hf3fs", "3fs", "threefs", "st_3fs", "1" -> HF3FS;
            case "mooncake", "st_mooncake", "2" -> MOONCAKE;
            case "pace", "tair_mem_pool", "tairmempool", "st_tairmempool", "3" -> PACE;
            case "vcns_hf3fs", "vcnsthreefs", "vcns_3fs", "st_vcns_3fs", "5" -> VCNS_HF3FS;
            default -> throw new IllegalArgumentException("unknown storage type '" + s + "'; expected one of "
                    + Arrays.stream(values()).map(k -> k.scheme).toList());
        };
    }

    public static StorageKind of(StorageType t) {
        for (StorageKind k : values()) {
            if (k.wire == t) {
                return k;
            }
        }
        throw new IllegalArgumentException("unsupported storage type " + t);
    }
}
