package dev.kvpool.meta.index;

/**
 * A write reached an index that no longer exists in its store: another replica removed the instance, or the store
 * lost its data (a Redis restarted without persistence, a failover to an empty replica). The registry tells the two
 * apart and either forgets the instance or starts a new index for it.
 */
public class IndexDroppedException extends IllegalStateException {
    private final String instanceId;

    public IndexDroppedException(String instanceId) {
        super("the index of instance " + instanceId + " was dropped");
        this.instanceId = instanceId;
    }

    public String instanceId() {
        return instanceId;
    }
}
