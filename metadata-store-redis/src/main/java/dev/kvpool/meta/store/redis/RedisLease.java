package dev.kvpool.meta.store.redis;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.List;

/**
 * A leader lease on one Redis key: acquired with {@code SET key owner NX PX ttl}, renewed and released only by its
 * owner (compare-and-pexpire, compare-and-delete scripts), so a stale leader can never extend or delete a lease a
 * successor took.
 *
 * <p>Redis expires the key ttl after the last successful renew; the holder itself counts its lease from the moment
 * it <em>sent</em> that renew, which is earlier, so {@link #held()} turns false on the holder before any other
 * process can acquire the key (assuming clocks that run at the same rate; {@code safety} absorbs drift). A
 * leader must stop acting as one when {@link #held()} is false. Renew well within the ttl (every ttl/3 say).
 */
public final class RedisLease {
    private final Calls calls;
    private final String key;
    private final String owner;
    private final long ttlMs;
    private final long safetyMs;
    /** System.nanoTime() until which this process may act as holder; 0 when it does not hold. */
    private volatile long validUntilNanos;

    /**
     * @param key     the lease key (a single key: it works in cluster mode as is)
     * @param owner   this contender's unique id (node id + a random suffix for restarts)
     * @param ttl     how long the lease lasts without renewal: the take-over time after a crash
     * @param safety  margin subtracted locally from ttl for clock-rate drift (e.g. ttl / 10)
     * @param timeout how long one Redis call may take
     */
    public RedisLease(Redis redis, String key, String owner, Duration ttl, Duration safety, Duration timeout) {
        if (ttl.toMillis() <= safety.toMillis() || owner == null || owner.isEmpty()) {
            throw new IllegalArgumentException("lease needs an owner id and a ttl longer than its safety margin");
        }
        this.calls = new Calls(redis, timeout);
        this.key = key;
        this.owner = owner;
        this.ttlMs = ttl.toMillis();
        this.safetyMs = safety.toMillis();
    }

    public String owner() {
        return owner;
    }

    /** Takes the lease when free, or renews it when this owner holds it; true when this owner holds it now. */
    public boolean acquireOrRenew() {
        long sent = System.nanoTime();
        boolean ok;
        try {
            Response set = calls.send(Request.cmd(Command.SET).arg(key).arg(owner).arg("NX").arg("PX").arg(ttlMs),
                    "acquire lease " + key);
            ok = set != null || calls.eval(Lua.COMPARE_PEXPIRE, List.of(key), List.of(owner, ttlMs),
                    "renew lease " + key).toLong() == 1;
        } catch (RuntimeException e) {
            // unknown outcome: the only safe local belief is that we do not hold it
            validUntilNanos = 0;
            throw e;
        }
        validUntilNanos = ok ? sent + (ttlMs - safetyMs) * 1_000_000L : 0;
        return ok;
    }

    /** Whether this owner may act as holder right now (a successful renew less than ttl − safety ago). */
    public boolean held() {
        long until = validUntilNanos;
        return until != 0 && System.nanoTime() - until < 0;
    }

    /** Gives the lease up if this owner holds it; true when it did. */
    public boolean release() {
        validUntilNanos = 0;
        return calls.eval(Lua.COMPARE_DEL, List.of(key), List.of(owner), "release lease " + key).toLong() == 1;
    }

    /** The current holder's owner id, or null when nobody holds the lease. */
    public String holder() {
        Response r = calls.send(Request.cmd(Command.GET).arg(key), "lease holder " + key);
        return r == null ? null : r.toString();
    }
}
