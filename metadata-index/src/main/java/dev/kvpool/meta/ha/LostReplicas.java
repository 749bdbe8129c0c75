package dev.kvpool.meta.ha;

/**
 * Replicas that stopped without finishing their deletions — killed, or stopped before a reader lease ran out —
 * counted over the cluster's life: what they left DELETING waits for the leader's sweep.
 */
public interface LostReplicas {
    long replicasLost();

    /** Up to which {@link #replicasLost()} count a completed sweep has resumed what they left. */
    long lostSwept();

    /** Records that a sweep begun when {@link #replicasLost()} read {@code lost} is complete. */
    void lostSwept(long lost);
}
