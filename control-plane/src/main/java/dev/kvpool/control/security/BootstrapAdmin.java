package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.account.AccountRepository;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.account.PasswordHasher;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.security.SecureRandom;
import java.util.Optional;
import java.util.Set;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Creates the first admin when no admin account exists: name {@code kvpool.control.bootstrap-admin.name}, password
 * {@code kvpool.control.bootstrap-admin.password} (env {@code KVPOOL_ADMIN_PASSWORD}). A weak configured password stops
 * the start; no password at all generates one and logs it once.
 */
@ApplicationScoped
public class BootstrapAdmin {
    private static final Logger LOG = Logger.getLogger(BootstrapAdmin.class);

    @Inject
    AccountRepository repo;
    @Inject
    AccountService accounts;
    @Inject
    SigningKeys keys;
    @Inject
    dev.kvpool.control.outbox.Outbox outbox;
    @ConfigProperty(name = "kvpool.control.bootstrap-admin.name", defaultValue = "admin")
    String name;
    @ConfigProperty(name = "kvpool.control.bootstrap-admin.password")
    Optional<String> password;

    void start(@Observes StartupEvent ev) {
        String bad = Identifiers.problem(Identifiers.Kind.ACCOUNT, name);
        if (bad != null) {
            throw new IllegalStateException("kvpool.control.bootstrap-admin.name: " + bad);
        }
        keys.active(); // create or load the signing keys before the first request
        // replicas starting together: the check and the creation run in one transaction holding the revision row
        // (every change takes it), so exactly one replica creates the admin and the others see it
        String pw0 = password.filter(p -> !p.isEmpty()).orElse(null);
        String pw = pw0 != null ? pw0 : generated();
        boolean created = QuarkusTransaction.requiringNew().call(() -> {
            outbox.lock();
            if (repo.count("role", BearerToken.ADMIN) > 0) {
                return false;
            }
            String weak = pw0 == null ? null : PasswordHasher.weakness(name, pw0);
            if (weak != null) {
                throw new IllegalStateException("kvpool.control.bootstrap-admin.password is too weak: " + weak);
            }
            accounts.create(name, pw, BearerToken.ADMIN, Set.of());
            return true;
        });
        if (!created) {
            return;
        }
        if (pw0 == null) {
            LOG.warnf("no admin account and no kvpool.control.bootstrap-admin.password (KVPOOL_ADMIN_PASSWORD): created "
                    + "admin '%s' with the generated password %s (shown once; change it with PUT /api/v1/accounts/%s)",
                    name, pw, name);
        } else {
            LOG.infof("created the bootstrap admin account '%s'", name);
        }
    }

    private static String generated() {
        String chars = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        SecureRandom r = new SecureRandom();
        StringBuilder b = new StringBuilder("Kv-");
        for (int i = 0; i < 20; i++) {
            b.append(chars.charAt(r.nextInt(chars.length())));
        }
        return b.append("-9").toString();
    }
}
