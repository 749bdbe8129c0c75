package dev.kvpool.meta.ha;

/**
 * Who runs the background work (reclaimer, session expiry) among replicas sharing one store. Exactly one replica
 * is leader at a time; the others serve requests and take over when the leader's lease lapses.
 */
public interface Leadership extends LostReplicas, AutoCloseable {

    boolean isLeader();

    String selfId();

    /** The current holder as last seen, or "" when unknown. */
    String leaderId();

    /** Epoch ms at which this replica's lease ends (0 when not leader). */
    long leaseExpiresAtMs();

    /** Epoch ms of the last election-loop iteration (health: a stale loop means a stuck replica). */
    long lastLoopMs();

    /**
     * Why the shared store has been unreachable for a while, as the election loop (which talks to it every second)
     * last saw it; null while it answers, and always for a single process.
     */
    default String storeProblem() {
        return null;
    }

    /** None for a single process, which resumes its own deletions at start-up. */
    @Override
    default long replicasLost() {
        return 0;
    }

    @Override
    default long lostSwept() {
        return 0;
    }

    @Override
    default void lostSwept(long lost) {
    }

    /**
     * How this replica joins a cold start of the replicas sharing the store: whether it rebuilds usage and slots
     * from the index (the first one) or joins the others. May wait for another replica's rebuild. Close the result
     * after {@link #start()}. A single process always rebuilds.
     */
    default Startup begin() {
        return Startup.REBUILD;
    }

    /** The replica whose rebuild {@link #begin()} is waiting for; null when it is not waiting. */
    default String awaitingRebuildBy() {
        return null;
    }

    /** Takes part in the election from now on (after the rebuild, or on joining). */
    default Leadership start() {
        return this;
    }

    /**
     * Counts this replica as lost although it leaves cleanly: it stops with deletions whose reader lease had not
     * run out, so the leader sweeps for them. A single process resumes its own at the next start.
     */
    default void reportUnfinished() {
    }

    /** See {@link #begin()}. */
    interface Startup extends AutoCloseable {
        /** A single process's start: it rebuilds, and holds no claim. */
        Startup REBUILD = new Startup() {
            @Override
            public boolean rebuild() {
                return true;
            }

            @Override
            public void close() {
            }
        };

        /** True for the first replica of a cold start: it rebuilds usage and slots from the index. */
        boolean rebuild();

        /** Ends this replica's claim on the rebuild, if it holds one. */
        @Override
        void close();
    }

    @Override
    void close();

    /** A single process (embedded store): always the leader. */
    static Leadership single(String selfId) {
        return new Leadership() {
            @Override
            public boolean isLeader() {
                return true;
            }

            @Override
            public String selfId() {
                return selfId;
            }

            @Override
            public String leaderId() {
                return selfId;
            }

            @Override
            public long leaseExpiresAtMs() {
                return Long.MAX_VALUE;
            }

            @Override
            public long lastLoopMs() {
                return System.currentTimeMillis();
            }

            @Override
            public void close() {
            }
        };
    }
}
