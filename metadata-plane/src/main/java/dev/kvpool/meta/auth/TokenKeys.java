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
 * per {@code minRefetch}, by one caller at a time (others are answered with what is known), so a flood of tokens with
 * invented kids cannot turn into a flood of fetches. A key dropped from the JWKS is forgotten at the next fetch.
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
        if (k == null && source != null) {
            long now = System.currentTimeMillis(), last = lastFetchMs.get();
            if (now - last >= minRefetchMs && fetching.tryLock()) {
                try {
                    if (lastFetchMs.compareAndSet(last, now)) {
                        refresh();
                    }
                } finally {
                    fetching.unlock();
                }
                k = keys.get(kid);
            }
        }
        return k;
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
