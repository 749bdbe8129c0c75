package dev.kvpool.meta.index;

import java.util.Set;

/**
 * Where instance indexes live. The embedded store keeps them in this process with a snapshot + append log;
 * other stores (Redis) implement the same contract.
 */
public interface IndexStore extends AutoCloseable {

    /** The index of an instance, created empty on first use. */
    InstanceIndex index(String instanceId);

    /** The index if it exists, else null. */
    InstanceIndex existing(String instanceId);

    /** Removes an instance's index, its keys and its sessions. */
    void drop(String instanceId);

    Set<String> instanceIds();

    /** The instance a write session belongs to, or null. */
    String sessionOwner(String sessionId);

    /** Stores a small durable record (instance registrations and the like) beside the indexes. */
    void putRecord(String section, String name, byte[] value);

    void removeRecord(String section, String name);

    /** The records of a section, sorted by name. */
    java.util.Map<String, byte[]> records(String section);

    /** Forces what was appended so far to stable storage. */
    void sync();

    /**
     * How much later than the index itself this replica's {@link InstanceIndex#servingAsync} may see a change (0:
     * never later). A location marked DELETING may be served that much longer, so deleters add it to the reader
     * lease.
     */
    default long readerStalenessMs() {
        return 0;
    }

    /**
     * The key counts of several instances ({@link InstanceIndex#keyCount}; 0 for one that does not exist), in
     * {@code instanceIds} order. A remote store asks for all of them in one round trip: the reclaimer checks every
     * instance of a group each trigger period, and one call after another grew with the group.
     */
    default long[] keyCounts(java.util.List<String> instanceIds) {
        long[] out = new long[instanceIds.size()];
        for (int i = 0; i < out.length; i++) {
            InstanceIndex ix = existing(instanceIds.get(i));
            out[i] = ix == null ? 0 : ix.keyCount();
        }
        return out;
    }

    /**
     * The open write sessions of several instances whose deadline is at or before {@code nowMs}, in
     * {@code instanceIds} order (empty for one that does not exist): what session expiry closes. A remote store asks
     * for all instances in one round trip and sends only the sessions that are due, not every open one.
     */
    default java.util.List<java.util.List<WriteSession>> sessionsDue(java.util.List<String> instanceIds, long nowMs) {
        java.util.List<java.util.List<WriteSession>> out = new java.util.ArrayList<>(instanceIds.size());
        for (String id : instanceIds) {
            InstanceIndex ix = existing(id);
            out.add(ix == null ? java.util.List.of()
                    : ix.sessions().stream().filter(s -> s.deadlineMs() <= nowMs).toList());
        }
        return out;
    }

    /**
     * Whether other processes write the same store (the Redis store's replicas): a lookup that misses may find the
     * instance there, and the plane reconciles what it knows with the store.
     */
    default boolean shared() {
        return false;
    }

    /** Whether the store lives outside this process, so that its calls wait on the network (not on an event loop). */
    default boolean remote() {
        return shared();
    }

    /** A short name for metrics and logs ("embedded", "redis"). */
    String kind();

    @Override
    void close();
}
