package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.time.Instant;
import java.util.Base64;
import java.util.List;

/**
 * The Ed25519 key pair that signs bearer tokens, kept in table {@code signing_key} so tokens survive restarts and every
 * replica signs with the same key. Created on first use.
 */
@ApplicationScoped
public class SigningKeys {
    @Inject
    EntityManager em;

    private volatile PrivateKey privateKey;
    private volatile PublicKey publicKey;

    public PrivateKey privateKey() {
        load();
        return privateKey;
    }

    public PublicKey publicKey() {
        load();
        return publicKey;
    }

    private synchronized void load() {
        if (publicKey != null) {
            return;
        }
        QuarkusTransaction.requiringNew().run(() -> {
            @SuppressWarnings("unchecked")
            List<Object[]> rows = em.createNativeQuery("select private_key, public_key from signing_key where id = 1")
                    .getResultList();
            if (rows.isEmpty()) {
                KeyPair kp = BearerToken.generateKeyPair();
                em.createNativeQuery("insert into signing_key (id, private_key, public_key, created_at) "
                                + "values (1, ?1, ?2, ?3)")
                        .setParameter(1, Base64.getEncoder().encodeToString(kp.getPrivate().getEncoded()))
                        .setParameter(2, Base64.getEncoder().encodeToString(kp.getPublic().getEncoded()))
                        .setParameter(3, Instant.now()).executeUpdate();
                privateKey = kp.getPrivate();
                publicKey = kp.getPublic();
            } else {
                privateKey = BearerToken.privateKey(Base64.getDecoder().decode((String) rows.get(0)[0]));
                publicKey = BearerToken.publicKey(Base64.getDecoder().decode((String) rows.get(0)[1]));
            }
        });
    }
}
