package dev.kvpool.control.security;

import dev.kvpool.api.auth.JwtTokens;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The Ed25519 keys that sign bearer tokens, in table {@code token_signing_key} so that every replica signs and
 * verifies with the same keys. One key is active (the newest not retired); rotation makes a new one active and
 * retires the old one, which stays in the JWKS until every token it could have signed has expired (retired + token
 * TTL + a margin for replicas that signed with it before they reloaded), then is deleted.
 *
 * <p>Each replica caches the keys and reloads them every {@code kvpool.control.token-keys.refresh} and on a token
 * with an unknown kid (at most once a second), so a rotation on one replica is seen by the others within seconds.
 */
@ApplicationScoped
public class SigningKeys {
    private static final Logger LOG = Logger.getLogger(SigningKeys.class);
    /** Beyond the token TTL: replicas may sign with a retired key until their next reload, clocks differ a little. */
    static final Duration MARGIN = Duration.ofMinutes(2);

    public record Key(String kid, PrivateKey privateKey, PublicKey publicKey, Instant created, Instant retired) {
    }

    @Inject
    EntityManager em;
    @ConfigProperty(name = "kvpool.control.token-ttl", defaultValue = "PT1H")
    Duration ttl;
    /** 0 turns automatic rotation off (POST /api/v1/auth/keys/rotate still rotates). */
    @ConfigProperty(name = "kvpool.control.token-keys.rotation-period", defaultValue = "P30D")
    Duration rotationPeriod;
    /** Tests move time forward. */
    volatile Clock clock = Clock.systemUTC();

    private volatile Map<String, Key> keys = Map.of();
    private volatile Key active;
    private final AtomicLong lastLoadMs = new AtomicLong();

    /** The key that signs new tokens. */
    public Key active() {
        if (active == null) {
            reload();
        }
        return active;
    }

    /** The public key of a kid while its tokens may still be valid; null otherwise. Unknown kids reload (1/s). */
    public PublicKey verificationKey(String kid) {
        if (active == null) {
            reload();
        }
        Key k = keys.get(kid);
        if (k == null) {
            long now = System.currentTimeMillis(), last = lastLoadMs.get();
            if (now - last >= 1000 && lastLoadMs.compareAndSet(last, now)) {
                try {
                    reload();
                } catch (RuntimeException e) {
                    // the database is away: the kid stays unknown (401), not a 5xx
                    LOG.warnf("cannot reload token signing keys: %s", e.toString());
                }
                k = keys.get(kid);
            }
        }
        return k == null || !published(k, clock.instant()) ? null : k.publicKey();
    }

    /** Keys in the JWKS at {@code now}: the active one and retired ones whose tokens may not all have expired. */
    public List<Key> published(Instant now) {
        if (active == null) {
            reload();
        }
        return keys.values().stream().filter(k -> published(k, now)).toList();
    }

    private boolean published(Key k, Instant now) {
        return k.retired() == null || k.retired().plus(ttl).plus(MARGIN).isAfter(now);
    }

    public Duration tokenTtl() {
        return ttl;
    }

    @Scheduled(every = "${kvpool.control.token-keys.refresh:30s}", delay = 30, delayUnit = java.util.concurrent.TimeUnit.SECONDS,
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduledReload() {
        try {
            reload();
        } catch (RuntimeException e) {
            LOG.debugf("cannot reload token signing keys (keeping the known ones): %s", e.toString());
        }
    }

    /** Reads every key; creates the first one when there is none. */
    public synchronized void reload() {
        lastLoadMs.set(System.currentTimeMillis());
        Map<String, Key> ks = QuarkusTransaction.requiringNew().call(() -> {
            Map<String, Key> m = read();
            if (m.values().stream().noneMatch(k -> k.retired() == null)) {
                lock();
                m = read(); // another replica may have created it meanwhile
                if (m.values().stream().noneMatch(k -> k.retired() == null)) {
                    Key k = insert();
                    m.put(k.kid(), k);
                    LOG.infof("created token signing key %s", k.kid());
                }
            }
            return m;
        });
        keys = Map.copyOf(ks);
        active = ks.values().stream().filter(k -> k.retired() == null)
                .max(java.util.Comparator.comparing(Key::created).thenComparing(Key::kid)).orElseThrow();
    }

    /** Makes a new key active now and retires the others; returns the new key. */
    public Key rotate() {
        Key k = QuarkusTransaction.requiringNew().call(() -> {
            lock();
            return rotateLocked();
        });
        reload();
        return k;
    }

    private Key rotateLocked() {
        Key k = insert();
        em.createNativeQuery("update token_signing_key set retired_ms = ?1 where retired_ms is null and kid <> ?2")
                .setParameter(1, k.created().toEpochMilli()).setParameter(2, k.kid()).executeUpdate();
        LOG.infof("token signing key rotated: %s is active", k.kid());
        return k;
    }

    /** Rotates when the active key is older than the rotation period (checked under the lock: one replica does it). */
    @Scheduled(every = "1m", delay = 1, delayUnit = java.util.concurrent.TimeUnit.MINUTES,
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void housekeeping() {
        Instant now = clock.instant();
        if (!rotationPeriod.isZero() && !rotationPeriod.isNegative()) {
            boolean rotated = QuarkusTransaction.requiringNew().call(() -> {
                lock();
                boolean due = read().values().stream().filter(k -> k.retired() == null)
                        .allMatch(k -> !k.created().plus(rotationPeriod).isAfter(now));
                if (due) {
                    rotateLocked();
                }
                return due;
            });
            if (rotated) {
                reload();
            }
        }
        prune(now);
    }

    /** Deletes retired keys whose every token has expired at {@code now}; returns how many. */
    public int prune(Instant now) {
        int n = QuarkusTransaction.requiringNew().call(() -> em.createNativeQuery(
                        "delete from token_signing_key where retired_ms is not null and retired_ms < ?1")
                .setParameter(1, now.minus(ttl).minus(MARGIN).toEpochMilli()).executeUpdate());
        if (n > 0) {
            LOG.infof("removed %d retired token signing key(s) from the JWKS", n);
            reload();
        }
        return n;
    }

    private void lock() {
        em.createNativeQuery("select id from token_key_lock where id = 1 for update").getResultList();
    }

    private Map<String, Key> read() {
        @SuppressWarnings("unchecked")
        List<Object[]> rows = em.createNativeQuery("select kid, private_key, public_key, created_ms, retired_ms "
                + "from token_signing_key").getResultList();
        Map<String, Key> m = new LinkedHashMap<>();
        for (Object[] r : rows) {
            m.put((String) r[0], new Key((String) r[0], JwtTokens.privateKey(Base64.getDecoder().decode((String) r[1])),
                    JwtTokens.publicKey(Base64.getDecoder().decode((String) r[2])),
                    Instant.ofEpochMilli(((Number) r[3]).longValue()),
                    r[4] == null ? null : Instant.ofEpochMilli(((Number) r[4]).longValue())));
        }
        return m;
    }

    private static final DateTimeFormatter KID_TIME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss")
            .withZone(ZoneOffset.UTC);
    private static final SecureRandom RANDOM = new SecureRandom();

    private Key insert() {
        KeyPair kp = JwtTokens.generateKeyPair();
        Instant now = clock.instant();
        byte[] rnd = new byte[4];
        RANDOM.nextBytes(rnd);
        // readable in logs and the JWKS: when it was made, plus randomness so two replicas never collide
        String kid = "k" + KID_TIME.format(now) + "-" + HexFormat.of().formatHex(rnd);
        em.createNativeQuery("insert into token_signing_key (kid, algorithm, private_key, public_key, created_ms) "
                        + "values (?1, ?2, ?3, ?4, ?5)")
                .setParameter(1, kid).setParameter(2, JwtTokens.ALGORITHM)
                .setParameter(3, Base64.getEncoder().encodeToString(kp.getPrivate().getEncoded()))
                .setParameter(4, Base64.getEncoder().encodeToString(kp.getPublic().getEncoded()))
                .setParameter(5, now.toEpochMilli()).executeUpdate();
        return new Key(kid, kp.getPrivate(), kp.getPublic(), now, null);
    }

    /** The JWKS document of the keys published at {@code now}. */
    public Map<String, Object> jwks(Instant now) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Key k : published(now)) {
            out.add(JwtTokens.jwk(k.kid(), k.publicKey()));
        }
        return Map.of("keys", out);
    }
}
