package dev.kvpool.meta.registry;

import dev.kvpool.api.hash.KvcmHash;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.LocationSpec;
import dev.kvpool.api.proto.meta.StorageType;
import dev.kvpool.api.storage.SlabFiles;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Turns packed locations into KVCM CacheLocations (§3.8): {@code <scheme>://<storage><path>?<params>} with params
 * sorted by key. Files are named {@code slab_<file hex>} and addressed by {@code blkid} × size (no blkid when a
 * file holds one block); Mooncake keys use the key's unsigned hex. The URI a write hands out is byte-identical to what reads return,
 * because both are rendered from the same words.
 */
public final class Locations {
    /** KVCM's StorageType of each storage kind, by ordinal: the wire enum is this adapter's, not the kind's. */
    private static final StorageType[] WIRE = new StorageType[StorageKind.values().length];

    static {
        WIRE[StorageKind.FILE.ordinal()] = StorageType.ST_NFS;
        WIRE[StorageKind.HF3FS.ordinal()] = StorageType.ST_3FS;
        WIRE[StorageKind.MOONCAKE.ordinal()] = StorageType.ST_MOONCAKE;
        WIRE[StorageKind.PACE.ordinal()] = StorageType.ST_TAIRMEMPOOL;
        WIRE[StorageKind.VCNS_HF3FS.ordinal()] = StorageType.ST_VCNS_3FS;
    }

    /** The KVCM StorageType a location on a storage of this kind is reported with. */
    public static StorageType wire(StorageKind kind) {
        return WIRE[kind.ordinal()];
    }

    private Locations() {
    }

    static String fileName(Storage st, long key, long b) {
        return slabName(SlotAllocator.file(b));
    }

    /** The name of slab file number {@code file} (the inverse of {@link #fileNumber}). */
    public static String slabName(long file) {
        // as String.format("slab_%08x", file), without the formatter: this runs for every location rendered
        String hex = Long.toHexString(file);
        return hex.length() >= 8 ? "slab_" + hex : "slab_00000000".substring(0, 13 - hex.length()) + hex;
    }

    public static CacheLocation render(Instance inst, Storage st, long key, long a, long b, Set<String> specFilter) {
        int[] specs = inst.specGroups[Loc.specGroup(a)];
        String[] prefixes = inst.uriPrefixes(st);
        CacheLocation.Builder loc = CacheLocation.newBuilder().setType(wire(st.kind)).setSpecSize(specs.length);
        String file = st.kind == StorageKind.MOONCAKE ? KvcmHash.hex(key) : fileName(st, key, b);
        String slotParam = st.sharesFiles() ? "?blkid=" + SlotAllocator.slot(b) + "&size=" : "?size=";
        for (int i : specs) {
            if (specFilter != null && !specFilter.contains(inst.specNames[i])) {
                continue;
            }
            String uri = st.kind == StorageKind.MOONCAKE
                    ? prefixes[i] + file + "&size=" + inst.specSizes[i]
                    : prefixes[i] + file + slotParam + inst.specSizes[i];
            loc.addLocationSpecs(LocationSpec.newBuilder().setName(inst.specNames[i]).setUri(uri));
        }
        return loc.build();
    }

    /** The miss placeholder of BATCH_GET and sliding-window answers (§3.4.2). */
    public static CacheLocation placeholder(Instance inst) {
        CacheLocation.Builder loc = CacheLocation.newBuilder().setType(StorageType.ST_UNSPECIFIED)
                .setSpecSize(inst.specNames.length);
        for (String n : inst.specNames) {
            loc.addLocationSpecs(LocationSpec.newBuilder().setName(n).setUri(""));
        }
        return loc.build();
    }

    /** Local paths holding a location's bytes, for storages this process can reach (file, hf3fs mounts). */
    public static List<Path> localFiles(Instance inst, Storage st, long key, long b, int specGroup) {
        List<Path> out = new ArrayList<>();
        if (!st.usesFiles()) {
            return out;
        }
        String file = fileName(st, key, b);
        for (int i : inst.specGroups[specGroup]) {
            out.add(dev.kvpool.api.storage.StoragePaths.file(st.root(), inst.id, inst.specNames[i], file));
        }
        return out;
    }

    /** The directories of an instance's files on a file-type storage, one per spec name. */
    public static List<Path> fileDirs(Instance inst, Storage st) {
        List<Path> out = new ArrayList<>();
        if (st.usesFiles()) {
            for (int i = 0; i < inst.specNames.length; i++) {
                out.add(specDir(inst, st, i));
            }
        }
        return out;
    }

    /** Through the one function that proves the directory is inside the storage root and the instance's own. */
    private static Path specDir(Instance inst, Storage st, int spec) {
        return dev.kvpool.api.storage.StoragePaths.specDir(st.root(), inst.id, inst.specNames[spec]);
    }

    /**
     * The file number in a name {@link #slabName} gives (or in the agents' checksum sidecar of such a file);
     * -1 for any other name, which no sweep may touch.
     */
    public static long fileNumber(String name) {
        String n = name.endsWith(SlabFiles.SUFFIX) ? name.substring(0, name.length() - SlabFiles.SUFFIX.length()) : name;
        if (!n.startsWith("slab_") || n.length() < 13 || n.length() > 15) { // 8 to 10 hex digits: file << 24 fits a long
            return -1;
        }
        long v = 0;
        for (int i = 5; i < n.length(); i++) {
            int d = Character.digit(n.charAt(i), 16);
            if (d < 0 || Character.isUpperCase(n.charAt(i))) {
                return -1;
            }
            v = v << 4 | d;
        }
        return v;
    }
}
