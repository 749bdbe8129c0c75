package dev.kvpool.meta.index;

import java.util.Arrays;
import java.util.Locale;

/**
 * Storage types, with the type string used in URIs and storage_configs. Their KVCM wire enum (StorageType) is the
 * KVCM adapter's mapping (dev.kvpool.meta.kvcm.wire.KvcmStorageTypes): the stores and the quota ledger know no wire.
 */
public enum StorageKind {
    FILE("file", 5),
    HF3FS("hf3fs", 3),
    MOONCAKE("mooncake", 3),
    PACE("pace", 3),
    VCNS_HF3FS("vcns_hf3fs", 1);

    public final String scheme;
    /** KVCM's read weight when a block has replicas on several storages (§3.5.3). */
    public final int readWeight;

    StorageKind(String scheme, int readWeight) {
        this.scheme = scheme;
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
}
