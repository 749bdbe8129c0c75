package dev.kvpool.meta.store.redis;

import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.meta.ha.Leadership;
import dev.kvpool.meta.index.StoreException;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import org.jboss.logging.Logger;

/**
 * Leadership among replicas over one Redis: a lease key renewed every ttl/3 by its holder; when the holder dies
 * (kill -9) the key expires after ttl and the next contender's loop takes it. The same loop keeps this replica in
 * a membership set (a sorted set scored by expiry), which tells a starting replica whether it is alone — then the
 * usage and slot state derived from the index are rebuilt, since a crashed cluster may have left them behind, by
 * one replica only ({@link #begin()}).
 */
public final class RedisLeadership implements Leadership {
    private static final Logger LOG = Logger.getLogger(RedisLeadership.class);

    private final RedisLease lease;
    /** Held by the replica that rebuilds usage and slots on a cold start, until it is listed as a member. */
    private final RedisLease rebuildClaim;
    private final long claimTtlMs;
    private final Calls calls;
    private final String selfId;
    private final String membersKey;
    private final long ttlMs;
    private final Thread loop;
    private volatile String leaderId = "";
    private volatile long lastLoopMs;
    private volatile long leaseUntilMs;
    private volatile boolean wasLeader;
    private volatile boolean closed;
    private final String lostKey, lostSweptKey;
    private static final dev.kvpool.meta.store.redis.Lua.Script SET_IF_GREATER = dev.kvpool.meta.store.redis.Lua.Script.of(
            "set-if-greater", """
            if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
            return 1
            """);
    private volatile long replicasLost, lostSwept;
    /** While {@link #begin()} waits: the replica whose rebuild it waits for (start-up health shows it). */
    private volatile String awaiting;

    public RedisLeadership(Redis redis, String prefix, String selfId, Duration ttl, Duration timeout) {
        this.calls = new Calls(redis, timeout);
        this.selfId = selfId;
        this.ttlMs = ttl.toMillis();
        this.membersKey = prefix + "members";
        this.lostKey = prefix + "members-lost";
        this.lostSweptKey = prefix + "members-lost-swept";
        this.lease = new RedisLease(redis, prefix + "leader", selfId, ttl, ttl.dividedBy(10), timeout);
        // longer than the leader lease: renewals must survive a slow Redis during a long rebuild
        this.claimTtlMs = Math.max(10_000, 5 * ttlMs);
        this.rebuildClaim = new RedisLease(redis, prefix + "rebuilding", selfId, Duration.ofMillis(claimTtlMs),
                Duration.ofMillis(claimTtlMs / 10), timeout);
        this.loop = Thread.ofPlatform().daemon().name("kvpool-leader-election").unstarted(this::run);
    }

    /** True when no other live replica is registered (call before {@link #start()}). */
    public boolean alone() {
        long now = System.currentTimeMillis();
        Response r = send(Request.cmd(Command.ZRANGEBYSCORE).arg(membersKey).arg(now).arg("+inf"));
        if (r == null) {
            return true;
        }
        for (Response m : r) {
            if (!m.toString().equals(selfId)) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@link #alone()}, once stale entries had time to lapse: a replica killed just before this one started is
     * still listed until its entry's ttl passes, and must not make a restart skip the rebuild. Live members
     * renew every ttl/3, so they are still there after the wait.
     */
    boolean aloneAfterSettling() {
        if (alone()) {
            return true;
        }
        try {
            Thread.sleep(ttlMs + 250);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return alone();
    }

    /**
     * Decides how this replica starts, atomically among replicas that start at once (a Deployment's pods after an
     * outage): the first of a cold cluster rebuilds usage and slots from the index; any other joins. Being alone
     * is not enough, since replicas starting together all see no member until one of them is listed: the
     * rebuilder must also win a claim in Redis, which it keeps while it reads the index. A replica that finds the
     * claim taken waits for the rebuild to end — serving writes meanwhile would race the rebuild's reset of usage
     * and file slots, so a slot could be handed out twice — and then joins. A rebuilder that dies lets its claim
     * lapse after {@link #claimTtlMs}; the next replica then rebuilds. Close the result after {@link #start()}, so
     * the claim goes only once this replica is listed as a member.
     */
    @Override
    public Startup begin() {
        long waitingSince = System.currentTimeMillis(), nextLog = waitingSince + 10_000;
        while (true) {
            if (aloneAfterSettling()) {
                if (rebuildClaim.acquireOrRenew()) {
                    if (alone()) { // no rebuilder listed itself between the check and the claim
                        return new Startup(true);
                    }
                    rebuildClaim.release();
                } else {
                    awaiting = rebuildClaim.holder();
                }
            } else if ((awaiting = rebuildClaim.holder()) == null) {
                return new Startup(false);
            }
            long now = System.currentTimeMillis();
            if (now >= nextLog) {
                nextLog = now + 10_000;
                LOG.infof("waiting %d s for %s, the first replica of this cold start, to finish rebuilding usage and "
                        + "slots from the index", (now - waitingSince) / 1000, awaiting);
            }
            try {
                Thread.sleep(250);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for another replica's rebuild", e);
            }
        }
    }

    /** The replica whose rebuild {@link #begin()} is waiting for, or null when it is not waiting. */
    @Override
    public String awaitingRebuildBy() {
        return awaiting;
    }

    /** How this replica starts (see {@link #begin()}); while it rebuilds, its claim is renewed in the background. */
    public final class Startup implements Leadership.Startup {
        private final boolean rebuild;
        private final Thread renewer;

        Startup(boolean rebuild) {
            this.rebuild = rebuild;
            awaiting = null;
            this.renewer = rebuild ? Thread.ofPlatform().daemon().name("kvpool-rebuild-claim").start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    try {
                        Thread.sleep(Math.max(50, claimTtlMs / 3));
                        if (!rebuildClaim.acquireOrRenew()) {
                            LOG.errorf("%s lost its claim on the rebuild of usage and slots: another replica may start "
                                    + "one too", selfId);
                        }
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        LOG.warnf("renewing the rebuild claim failed: %s", e.getMessage());
                    }
                }
            }) : null;
        }

        /** True for the first replica of a cold cluster: it rebuilds usage and slots from the index. */
        @Override
        public boolean rebuild() {
            return rebuild;
        }

        /** Ends the claim (after {@link #start()}, or after a failed start so another replica can rebuild). */
        @Override
        public void close() {
            if (renewer == null) {
                return;
            }
            // a start stopped mid-rebuild closes this from an interrupted thread: the release must still be sent
            // and awaited, or the next replica waits for the claim to lapse
            boolean interrupted = Thread.interrupted();
            renewer.interrupt();
            try {
                renewer.join(2_000);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            try {
                rebuildClaim.release();
            } catch (RuntimeException e) {
                LOG.warnf("releasing the rebuild claim failed (it lapses by itself): %s", e.getMessage());
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    @Override
    public RedisLeadership start() {
        tick();
        loop.start();
        return this;
    }

    private void run() {
        while (!closed) {
            try {
                Thread.sleep(Math.max(50, ttlMs / 3));
            } catch (InterruptedException e) {
                return;
            }
            tick();
        }
    }

    private final FailureLog failures = new FailureLog(LOG, "leader election", java.time.Duration.ofSeconds(30),
            StoreException.class::isInstance);

    @Override
    public String storeProblem() {
        return failures.failingFor(Duration.ofMillis(Math.max(3_000, ttlMs))); // not one lost round trip
    }

    private void tick() {
        try {
            long now = System.currentTimeMillis();
            send(Request.cmd(Command.ZADD).arg(membersKey).arg(now + ttlMs).arg(selfId));
            // an entry that lapsed belongs to a replica that died without leaving: whoever removes it counts it, and
            // the leader sweeps for the deletions that replica left DELETING
            Response stale = send(Request.cmd(Command.ZRANGEBYSCORE).arg(membersKey).arg("-inf").arg(now - ttlMs));
            if (stale != null && stale.size() > 0) {
                Request zrem = Request.cmd(Command.ZREM).arg(membersKey);
                stale.forEach(m -> zrem.arg(m.toString()));
                long removed = send(zrem).toLong();
                if (removed > 0) {
                    send(Request.cmd(Command.INCRBY).arg(lostKey).arg(removed));
                    LOG.warnf("%d replica(s) stopped answering without leaving (%s): the leader sweeps for the "
                            + "deletions they left", removed, stale);
                }
            }
            replicasLost = number(send(Request.cmd(Command.GET).arg(lostKey)));
            lostSwept = number(send(Request.cmd(Command.GET).arg(lostSweptKey)));
            boolean held = lease.acquireOrRenew();
            if (held) {
                leaseUntilMs = now + ttlMs;
            }
            String holder = lease.holder();
            leaderId = holder == null ? "" : holder;
            if (held != wasLeader) {
                LOG.infof(held ? "%s is now the leader (reclaimer, session expiry)" : "%s is no longer the leader; leader: %s",
                        selfId, leaderId);
                wasLeader = held;
            }
            failures.ok();
        } catch (RuntimeException e) {
            failures.failed(e);
        }
        lastLoopMs = System.currentTimeMillis();
    }

    private Response send(Request r) {
        return calls.send(r, "leader election");
    }

    private static long number(Response r) {
        return r == null ? 0 : r.toLong();
    }

    @Override
    public long replicasLost() {
        return replicasLost;
    }

    @Override
    public long lostSwept() {
        return lostSwept;
    }

    @Override
    public void lostSwept(long lost) {
        // only forward: a sweep that began earlier may finish later
        calls.eval(SET_IF_GREATER, java.util.List.of(lostSweptKey), java.util.List.of(lost), "record the lost-replica sweep");
        lostSwept = Math.max(lostSwept, lost);
    }

    /**
     * Counts this replica as lost although it leaves cleanly: it stops with deletions whose reader lease had not
     * run out, so the leader sweeps for them.
     */
    @Override
    public void reportUnfinished() {
        try {
            send(Request.cmd(Command.INCR).arg(lostKey));
        } catch (RuntimeException e) {
            LOG.warnf("could not report deletions left unfinished (the daily sweep finds them): %s", e.getMessage());
        }
    }

    @Override
    public boolean isLeader() {
        return lease.held();
    }

    @Override
    public String selfId() {
        return selfId;
    }

    @Override
    public String leaderId() {
        return leaderId;
    }

    @Override
    public long leaseExpiresAtMs() {
        return lease.held() ? leaseUntilMs : 0;
    }

    @Override
    public long lastLoopMs() {
        return lastLoopMs;
    }

    @Override
    public void close() {
        closed = true;
        loop.interrupt();
        try {
            loop.join(2000);
            if (lease.held()) {
                lease.release(); // a clean stop hands over at once instead of after the ttl
            }
            send(Request.cmd(Command.ZREM).arg(membersKey).arg(selfId));
        } catch (RuntimeException | InterruptedException e) {
            LOG.debugf("leaving the election: %s", e.getMessage());
        }
    }
}
