package dev.kvpool.meta.storage;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.index.StorageKind;
import java.nio.file.Path;

/**
 * One storage backend that holds block bytes. {@code number} is the stable small integer that location words
 * carry (see dev.kvpool.meta.index.Loc); it is persisted with the index so a reordered config cannot remap
 * existing locations.
 */
public final class Storage {
    private static final ObjectMapper JSON = new ObjectMapper();

    public final String name;
    public final StorageKind kind;
    public final int number;
    /** file: root_path normalised to end with one '/'; hf3fs: mountpoint resolved with root_dir. */
    public final String basePath;
    public final int keyCountPerFile;
    /** The per-type spec object as KVCM prints it in storage_configs (§3.1.4), keys in KVCM's order. */
    private final ObjectNode spec;
    private volatile boolean available;

    public Storage(String name, StorageKind kind, int number, String basePath, int keyCountPerFile, ObjectNode spec,
                   boolean available) {
        // the name is a URI host and a Redis key part: the one identifier rule
        dev.kvpool.api.naming.Identifiers.require(dev.kvpool.api.naming.Identifiers.Kind.STORAGE,
                "storage global_unique_name", name);
        this.name = name;
        this.kind = kind;
        this.number = number;
        this.basePath = basePath;
        this.keyCountPerFile = Math.max(1, keyCountPerFile);
        this.spec = spec;
        this.available = available;
    }

    public static String normaliseRoot(String root) {
        String r = root.endsWith("/") ? root : root + "/";
        while (r.endsWith("//")) {
            r = r.substring(0, r.length() - 1);
        }
        return r;
    }

    public static String hf3fsBase(String mountpoint, String rootDir) {
        return Path.of(mountpoint).resolve(rootDir == null ? "" : rootDir).normalize().toString();
    }

    /**
     * File-type storages place blocks in slots of numbered files (one slot per file when key_count_per_file ≤ 1).
     * File numbers are never reused while a deletion of that file may be pending, so an asynchronous delete
     * can never hit a block written later.
     */
    public boolean usesFiles() {
        return kind == StorageKind.FILE || kind == StorageKind.HF3FS || kind == StorageKind.VCNS_HF3FS;
    }

    /** URIs carry blkid (and blocks share files) only when more than one key fits a file (§3.8.2). */
    public boolean sharesFiles() {
        return usesFiles() && keyCountPerFile > 1;
    }

    /**
     * The local directory this storage's files live under, absolute (a relative root is taken from the working
     * directory, as the file system would): every path under it is built by
     * {@link dev.kvpool.api.storage.StoragePaths}, which proves it stays inside.
     */
    public Path root() {
        Path r = root;
        if (r == null) {
            root = r = Path.of(basePath.isEmpty() ? "/" : basePath).toAbsolutePath().normalize();
        }
        return r;
    }

    private volatile Path root;

    public boolean available() {
        return available;
    }

    public void setAvailable(boolean available) {
        this.available = available;
    }

    public ObjectNode spec() {
        return spec;
    }

    /** The storage_configs entry: type, is_available, global_unique_name, storage_spec — in that order. */
    public ObjectNode toStorageConfigJson() {
        ObjectNode o = JSON.createObjectNode();
        o.put("type", kind.scheme);
        o.put("is_available", available);
        o.put("global_unique_name", name);
        o.set("storage_spec", spec);
        return o;
    }
}
