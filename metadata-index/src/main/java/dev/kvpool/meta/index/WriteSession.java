package dev.kvpool.meta.index;

/**
 * An open two-phase write: the keys that received a WRITING location, in the order their locations were
 * returned, and each location's id. Kept in the index store so a restart neither loses it nor leaves its
 * WRITING locations behind.
 */
public record WriteSession(String id, String instanceId, long deadlineMs, long[] keys, long[] locIds) {
    public int size() {
        return keys.length;
    }
}
