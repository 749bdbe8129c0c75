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

    /** A short name for metrics and logs ("embedded", "redis"). */
    String kind();

    @Override
    void close();
}
