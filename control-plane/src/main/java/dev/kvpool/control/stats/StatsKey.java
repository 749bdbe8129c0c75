package dev.kvpool.control.stats;

import java.io.Serializable;
import java.util.Objects;

/** The key of a stats bucket: group, bucket start (epoch seconds), instance. */
public class StatsKey implements Serializable {
    public String groupName;
    public long t;
    public String instanceId;

    public StatsKey() {
    }

    public StatsKey(String groupName, long t, String instanceId) {
        this.groupName = groupName;
        this.t = t;
        this.instanceId = instanceId;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StatsKey k && t == k.t && Objects.equals(groupName, k.groupName)
                && Objects.equals(instanceId, k.instanceId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(groupName, t, instanceId);
    }
}
