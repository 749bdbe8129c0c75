package dev.kvpool.meta.storage;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.index.StorageKind;

/** A storage as configured (a startup file, the control plane), before it receives its persisted number. */
public record StorageDef(String name, StorageKind kind, String basePath, int keyCountPerFile, ObjectNode spec) {
    public Storage toStorage(int number) {
        return new Storage(name, kind, number, basePath, keyCountPerFile, spec, true);
    }
}
