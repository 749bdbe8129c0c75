package dev.kvpool.meta.auth;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.auth.BearerToken;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.logging.Logger;

/**
 * The control plane's token revocations on this plane: polls {@code GET /api/v1/auth/revocations?since=...} every
 * {@code kvpool.meta.auth.revocation-poll} (1 s) and refuses signed-out tokens (by jti) and tokens issued before
 * their account's cutoff (disabled, deleted, role or groups changed). Each poll asks for what changed since the
 * previous answer's server time minus an overlap (a revocation committed late is still seen); entries past their
 * expiry are dropped, so memory holds only revocations of tokens that could still be valid.
 *
 * <p>While the control plane cannot be reached, the revocations known so far stay in force and new ones are not
 * seen (tokens are verified offline; a plane cut off from the control plane cannot learn of a sign-out).
 */
public final class RevocationFeed {
    private static final Logger LOG = Logger.getLogger(RevocationFeed.class);
    static final long OVERLAP_MS = 5_000;

    /** One poll: the feed's JSON for {@code since}; throws when the control plane does not answer. */
    public interface Source {
        JsonNode fetch(long sinceMs) throws Exception;
    }

    private final Source source;
    /** jti → expiry (epoch ms). */
    private final Map<String, Long> tokens = new ConcurrentHashMap<>();
    /** account → {not-before (epoch s), expiry (epoch ms)}. */
    private final Map<String, long[]> cutoffs = new ConcurrentHashMap<>();
    private volatile long serverNowMs;
    private volatile long lastOkMs;
    private volatile boolean warned;

    public RevocationFeed(Source source) {
        this.source = source;
    }

    /** Why a verified token is refused anyway; null when it is not revoked (as far as this plane knows). */
    public String refusal(BearerToken.Claims c) {
        if (tokens.containsKey(c.jti())) {
            return "token revoked (signed out)";
        }
        long[] cut = cutoffs.get(c.sub());
        if (cut != null && c.iat() < cut[0]) {
            return "token revoked: account '" + c.sub() + "' was disabled, deleted or changed after it was issued";
        }
        return null;
    }

    /** One poll; false when the control plane did not answer. */
    public boolean poll() {
        long since = serverNowMs == 0 ? 0 : Math.max(0, serverNowMs - OVERLAP_MS);
        JsonNode f;
        try {
            f = source.fetch(since);
        } catch (Exception e) {
            if (!warned) {
                LOG.warnf("cannot poll token revocations (known ones stay in force): %s", e.toString());
                warned = true;
            }
            return false;
        }
        if (f == null || !f.has("nowMs")) {
            return false;
        }
        warned = false;
        for (JsonNode t : f.path("tokens")) {
            tokens.put(t.path("jti").asText(), t.path("expiresMs").asLong());
        }
        for (JsonNode c : f.path("cutoffs")) {
            cutoffs.merge(c.path("subject").asText(), new long[] {c.path("notBeforeS").asLong(), c.path("expiresMs").asLong()},
                    (a, b) -> b[0] >= a[0] ? b : a);
        }
        long now = System.currentTimeMillis();
        tokens.values().removeIf(exp -> exp <= now);
        cutoffs.values().removeIf(v -> v[1] <= now);
        serverNowMs = f.path("nowMs").asLong();
        lastOkMs = now;
        return true;
    }

    /** Polls every {@code period} on a daemon thread. */
    public void pollEvery(Duration period) {
        Thread.ofVirtual().name("kvpool-auth-revocations").start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    poll();
                } catch (RuntimeException e) {
                    LOG.warnf("revocation poll failed: %s", e.toString());
                }
                try {
                    Thread.sleep(period);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    public int size() {
        return tokens.size() + cutoffs.size();
    }

    public long lastOkMs() {
        return lastOkMs;
    }
}
