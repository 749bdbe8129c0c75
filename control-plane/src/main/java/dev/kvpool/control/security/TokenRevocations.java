package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Revoked tokens, shared by every replica through PostgreSQL: signed-out tokens by jti (until their own expiry) and
 * per-account cutoffs (tokens issued before are refused; set when an account is disabled, deleted or its role or
 * groups change; kept for one token TTL). Each replica polls both tables every
 * {@code kvpool.control.revocation.poll} (1 s) into memory, so a revocation made on any replica is in force on all of
 * them within about a second; the metadata planes poll {@code GET /api/v1/auth/revocations}. Expired rows are
 * deleted, so memory and the tables stay bounded by the tokens revoked within one TTL.
 */
@ApplicationScoped
public class TokenRevocations {
    private static final Logger LOG = Logger.getLogger(TokenRevocations.class);

    @Inject
    EntityManager em;
    @ConfigProperty(name = "kvpool.control.token-ttl", defaultValue = "PT1H")
    Duration ttl;

    /** jti → expiry (epoch ms). */
    private volatile Map<String, Long> tokens = new ConcurrentHashMap<>();
    /** account → not-before (epoch s). */
    private volatile Map<String, Long> cutoffs = new ConcurrentHashMap<>();
    private volatile boolean loaded;
    private volatile boolean failing;

    public record RevokedToken(String jti, long expiresMs) {
    }

    public record Cutoff(String subject, long notBeforeS, long expiresMs) {
    }

    /** What the metadata planes poll: rows changed since {@code sinceMs}, and the server's clock. */
    public record Feed(long nowMs, List<RevokedToken> tokens, List<Cutoff> cutoffs) {
    }

    /** Why a verified token is refused anyway; null when it is not revoked. */
    public String refusal(BearerToken.Claims c) {
        if (!loaded) {
            poll();
        }
        if (tokens.containsKey(c.jti())) {
            return "token revoked (signed out)";
        }
        Long nb = cutoffs.get(c.sub());
        if (nb != null && c.iat() < nb) {
            return "token revoked: account '" + c.sub() + "' was disabled, deleted or changed after it was issued";
        }
        return null;
    }

    /** The cutoff of an account, epoch seconds (0: none): a new token's iat must not be earlier. */
    public long notBefore(String subject) {
        Long nb = QuarkusTransaction.joiningExisting().call(() -> {
            List<?> r = em.createNativeQuery("select not_before_s from token_cutoff where subject = ?1")
                    .setParameter(1, subject).getResultList();
            return r.isEmpty() ? null : ((Number) r.get(0)).longValue();
        });
        return nb == null ? 0 : nb;
    }

    @Scheduled(every = "${kvpool.control.revocation.poll:1s}", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void poll() {
        try {
            long now = System.currentTimeMillis();
            Feed f = QuarkusTransaction.requiringNew().call(() -> read(0, now));
            Map<String, Long> t = new ConcurrentHashMap<>(), c = new ConcurrentHashMap<>();
            f.tokens().forEach(r -> t.put(r.jti(), r.expiresMs()));
            f.cutoffs().forEach(r -> c.put(r.subject(), r.notBeforeS()));
            tokens = t;
            cutoffs = c;
            loaded = true;
            failing = false;
        } catch (RuntimeException e) {
            if (!failing) { // once per outage, not every second
                LOG.warnf("cannot read token revocations (keeping the last known ones): %s", e.toString());
                failing = true;
            }
        }
    }

    /** Unexpired rows changed at or after {@code sinceMs}. */
    public Feed read(long sinceMs, long nowMs) {
        List<RevokedToken> ts = new ArrayList<>();
        List<Cutoff> cs = new ArrayList<>();
        for (Object o : em.createNativeQuery("select jti, expires_ms from token_revocation where expires_ms > ?1 "
                + "and changed_ms >= ?2").setParameter(1, nowMs).setParameter(2, sinceMs).getResultList()) {
            Object[] r = (Object[]) o;
            ts.add(new RevokedToken((String) r[0], ((Number) r[1]).longValue()));
        }
        for (Object o : em.createNativeQuery("select subject, not_before_s, expires_ms from token_cutoff "
                + "where expires_ms > ?1 and changed_ms >= ?2").setParameter(1, nowMs).setParameter(2, sinceMs)
                .getResultList()) {
            Object[] r = (Object[]) o;
            cs.add(new Cutoff((String) r[0], ((Number) r[1]).longValue(), ((Number) r[2]).longValue()));
        }
        return new Feed(nowMs, ts, cs);
    }

    /** Sign-out: the token is refused until its expiry (in the caller's transaction, or a new one). */
    public void revokeToken(String jti, String subject, long expSeconds) {
        long now = System.currentTimeMillis();
        QuarkusTransaction.joiningExisting().run(() -> {
            em.createNativeQuery("delete from token_revocation where jti = ?1").setParameter(1, jti).executeUpdate();
            em.createNativeQuery("insert into token_revocation (jti, subject, expires_ms, changed_ms) "
                            + "values (?1, ?2, ?3, ?4)").setParameter(1, jti).setParameter(2, subject)
                    .setParameter(3, expSeconds * 1000).setParameter(4, now).executeUpdate();
        });
        tokens.put(jti, expSeconds * 1000); // this replica at once; the others at their next poll
    }

    /**
     * Every token of the account issued until now is refused: called in the transaction that disables, deletes or
     * changes the account. Rounded up to the next second (iat has seconds): the account's next token is issued with
     * an iat no earlier than this ({@link #notBefore}), so it is not caught by its own account's cutoff.
     */
    public void revokeSubject(String subject) {
        long now = System.currentTimeMillis();
        long nb = (now + 999) / 1000;
        long expires = now + ttl.toMillis() + SigningKeys.MARGIN.toMillis();
        QuarkusTransaction.joiningExisting().run(() -> {
            em.createNativeQuery("delete from token_cutoff where subject = ?1").setParameter(1, subject).executeUpdate();
            em.createNativeQuery("insert into token_cutoff (subject, not_before_s, expires_ms, changed_ms) "
                            + "values (?1, ?2, ?3, ?4)").setParameter(1, subject).setParameter(2, nb)
                    .setParameter(3, expires).setParameter(4, now).executeUpdate();
        });
        cutoffs.put(subject, nb);
    }

    /** Expired rows go: a revoked token past its expiry is refused anyway. Idempotent, so any replica may run it. */
    @Scheduled(every = "1m", delay = 1, delayUnit = java.util.concurrent.TimeUnit.MINUTES,
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void purge() {
        long now = System.currentTimeMillis();
        QuarkusTransaction.requiringNew().run(() -> {
            em.createNativeQuery("delete from token_revocation where expires_ms <= ?1").setParameter(1, now).executeUpdate();
            em.createNativeQuery("delete from token_cutoff where expires_ms <= ?1").setParameter(1, now).executeUpdate();
        });
    }

    /** Sizes of the in-memory sets (tests, metrics). */
    public Map<String, Integer> sizes() {
        Map<String, Integer> m = new HashMap<>();
        m.put("tokens", tokens.size());
        m.put("cutoffs", cutoffs.size());
        return m;
    }
}
