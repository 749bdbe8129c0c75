package dev.kvpool.control.common;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Reports, once at start, objects whose names break the identifier rule ({@link Identifiers}): they were created
 * before the rule (instance ids could hold '/' and ':'). They still appear in lists, the snapshot and events (the
 * metadata plane refuses them), cannot be read or changed by name, and can be removed by name.
 */
@ApplicationScoped
public class LegacyNames {
    private static final Logger LOG = Logger.getLogger(LegacyNames.class);

    @Inject
    EntityManager em;

    void start(@Observes StartupEvent ev) {
        QuarkusTransaction.requiringNew().run(() -> {
            report("storage", "select s.name from StorageEntity s", Identifiers.Kind.STORAGE);
            report("instance group", "select g.name from GroupEntity g", Identifiers.Kind.GROUP);
            report("instance", "select i.instanceId from InstanceEntity i", Identifiers.Kind.INSTANCE);
            report("account", "select a.name from AccountEntity a", Identifiers.Kind.ACCOUNT);
        });
    }

    private void report(String what, String query, Identifiers.Kind kind) {
        List<String> bad = em.createQuery(query, String.class).getResultList().stream()
                .filter(n -> !Identifiers.valid(kind, n)).toList();
        if (!bad.isEmpty()) {
            LOG.warnf("%d %s name(s) break the identifier rule (1-128 of A-Z a-z 0-9 . _ -%s, not starting with . or -), "
                            + "created before it was enforced: %s; remove them (DELETE by name) and create them again "
                            + "under valid names", bad.size(), what, kind == Identifiers.Kind.ACCOUNT ? " @" : "",
                    bad.stream().limit(10).map(n -> "'" + Text.safe(n) + "'").toList());
        }
    }
}
