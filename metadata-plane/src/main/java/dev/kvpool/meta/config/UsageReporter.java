package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.index.StorageKind;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * Usage reporting: on the leader, every usage period, one sample per group the control plane knows and storage
 * type, from the usage ledger ({@code POST /api/v1/usage}; the console's gauges and the quota views read them).
 *
 * <p>Runs on the sync's timer, not {@code @Scheduled}: it exists only when a control plane is configured, starts
 * after recovery, and its period is a setting read at start-up (quarkus-scheduler is not a dependency here).
 */
final class UsageReporter {
    private static final Logger LOG = Logger.getLogger(ControlPlaneSync.class); // the sync's log, as before the split

    private final ControlPlaneClient client;
    private final Registry registry;
    private final QuotaLedger ledger;
    /** The groups of the control plane's configuration as last applied. */
    private final Supplier<Set<String>> groups;

    UsageReporter(ControlPlaneClient client, Registry registry, QuotaLedger ledger, Supplier<Set<String>> groups) {
        this.client = client;
        this.registry = registry;
        this.ledger = ledger;
        this.groups = groups;
    }

    /** Reports every {@code period} while {@code leader}; the first soon, so the console's gauges start filled. */
    void start(ScheduledExecutorService timer, Duration period, BooleanSupplier leader) {
        long usageMs = Math.max(100, period.toMillis());
        timer.scheduleWithFixedDelay(() -> {
            if (leader.getAsBoolean()) {
                report();
            }
        }, Math.min(usageMs, 1000), usageMs, TimeUnit.MILLISECONDS);
    }

    /** One sample per group and storage type, from the usage ledger. */
    void report() {
        ArrayNode samples = ControlPlaneClient.JSON.createArrayNode();
        String now = Instant.now().toString();
        for (String name : groups.get()) {
            GroupConfig g = registry.group(name);
            if (g == null) {
                continue;
            }
            Set<StorageKind> kinds = new LinkedHashSet<>();
            g.typeQuotas().keySet().forEach(k -> kinds.add(k.usageKind()));
            for (String c : g.storageCandidates()) {
                var st = registry.storage(c);
                if (st != null) {
                    kinds.add(st.kind.usageKind());
                }
            }
            QuotaLedger.Usage u = ledger.usage(name);
            if (kinds.isEmpty()) {
                kinds.add(StorageKind.FILE);
            }
            for (StorageKind k : kinds) {
                samples.addObject().put("group", name).put("storageType", k.scheme).put("usedBytes", u.byType(k))
                        .put("timestamp", now);
            }
        }
        if (samples.isEmpty()) {
            return;
        }
        ObjectNode body = ControlPlaneClient.JSON.createObjectNode();
        body.set("samples", samples);
        try {
            ControlPlaneClient.Reply r = client.post("/api/v1/usage", body);
            if (!r.ok()) {
                LOG.warnf("usage report refused by the control plane: HTTP %d %s", r.status(), r.detail());
            }
        } catch (IOException | RuntimeException e) {
            LOG.debugf("usage report failed: %s", e.toString());
        }
    }
}
