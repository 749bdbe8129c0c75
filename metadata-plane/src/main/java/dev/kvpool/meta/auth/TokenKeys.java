package dev.kvpool.meta.auth;

import dev.kvpool.api.auth.JwtTokens;
import java.security.PublicKey;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.jboss.logging.Logger;

/**
 * The keys that verify the control plane's tokens on this plane, by kid: its JWKS, fetched at start, refreshed
 * periodically, and refetched when a token names a kid not known yet (a rotation on the control plane) — at most once
 * per {@code minRefetch}, by one caller at a time, and a kid a fetch did not find is not fetched for again for 30 s,
 * so a flood of tokens with invented kids cannot turn into a flood of fetches. A key dropped from the JWKS is
 * forgotten at the next fetch.
 * A pinned key ({@code kvpool.meta.auth.public-key}) verifies every kid, with no fetching.
 */
public final class TokenKeys implements JwtTokens.KeyResolver {
    private static final Logger LOG = Logger.getLogger(TokenKeys.class);

    /** Fetches the JWKS (kid → key); null when it cannot be had now. */
    public interface Source {
        Map<String, PublicKey> fetch();
    }

    private final PublicKey pinned;
    private final Source source;
    private final long minRefetchMs;
    private volatile Map<String, PublicKey> keys;
    private final AtomicLong lastFetchMs = new AtomicLong();
    private final ReentrantLock fetching = new ReentrantLock();
    /** Kids a fetch did not find, and when: not fetched again for a while. */
    private final Map<String, Long> misses = new java.util.concurrent.ConcurrentHashMap<>();
    private static final long MISS_MEMORY_MS = 30_000;

    public static TokenKeys pinned(PublicKey key) {
        return new TokenKeys(key, null, Map.of(), Duration.ZERO);
    }

    public TokenKeys(PublicKey pinned, Source source, Map<String, PublicKey> initial, Duration minRefetch) {
        this.pinned = pinned;
        this.source = source;
        this.keys = Map.copyOf(initial);
        this.minRefetchMs = minRefetch.toMillis();
    }

    @Override
    public PublicKey key(String kid) {
        if (pinned != null) {
            return pinned;
        }
        PublicKey k = keys.get(kid);
        if (k != null || source == null) {
            return k;
        }
        long now = System.currentTimeMillis();
        Long missed = misses.get(kid);
        if (missed != null && now - missed < MISS_MEMORY_MS) {
            return null; // fetched after this kid was first seen, and it was not there: no fetch per request
        }
        // one fetch at a time, at most one per minRefetch: a caller with a new kid waits for the next allowed fetch
        // (bounded) rather than being refused because another fetch happened just before the rotation
        try {
            if (!fetching.tryLock(2 * minRefetchMs + 100, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                return null;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
        try {
            k = keys.get(kid);
            if (k != null) {
                return k; // fetched by the caller before us
            }
            long wait = lastFetchMs.get() + minRefetchMs - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait);
            }
            refresh();
            k = keys.get(kid);
            if (k == null) {
                if (misses.size() > 1000) {
                    misses.clear(); // bounded: invented kids cost one fetch per minRefetch at most
                }
                misses.put(kid, System.currentTimeMillis());
            }
            return k;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } finally {
            fetching.unlock();
        }
    }

    /** Fetches the JWKS now; false when it could not be had (the known keys stay). */
    public boolean refresh() {
        if (source == null) {
            return pinned != null;
        }
        lastFetchMs.set(System.currentTimeMillis());
        Map<String, PublicKey> k = source.fetch();
        if (k == null) {
            return false;
        }
        if (!k.keySet().equals(keys.keySet())) {
            LOG.infof("token signing keys now %s", k.keySet());
        }
        keys = Map.copyOf(k);
        return true;
    }

    public boolean known() {
        return pinned != null || !keys.isEmpty();
    }

    public java.util.Set<String> kids() {
        return keys.keySet();
    }

    /** Refreshes every {@code period} on a daemon thread (a key rotated in is then known before its first token). */
    public void refreshEvery(Duration period) {
        if (source == null || period.isZero() || period.isNegative()) {
            return;
        }
        Thread.ofVirtual().name("kvpool-auth-jwks").start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(period);
                    refresh();
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    LOG.warnf("JWKS refresh failed: %s", e.toString());
                }
            }
        });
    }
}
