package dev.kvpool.meta.reclaim;

import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.write.Recovery;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The usage invariant, checked on the leader: every group's ledger equals what its index holds. Started from the
 * reclaimer's rounds (it runs only where they run, on the leader), but on its own thread: an audit reads whole
 * indexes, and eviction rounds must not wait for it; one at a time.
 */
final class UsageAudit implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Reclaimer.class); // the reclaimer's log, as before the split

    private final Registry registry;
    private final Recovery recovery;
    /** How often (0: never). */
    private volatile long everyMs;
    private long nextMs;
    /** The difference each group's last quiet audit found (audit thread only). */
    private final Map<String, Long> lastDifference = new HashMap<>();
    /** Audits whose difference was confirmed by the next one: usage that no block accounts for (or the reverse). */
    final AtomicLong drifts = new AtomicLong();
    private final ExecutorService auditor = Executors.newSingleThreadExecutor(
            r -> Thread.ofPlatform().daemon().name("kvpool-usage-audit").unstarted(r));
    private final AtomicBoolean auditing = new AtomicBoolean();

    UsageAudit(Registry registry, Recovery recovery) {
        this.registry = registry;
        this.recovery = recovery;
    }

    void every(Duration d) {
        everyMs = d == null ? 0 : d.toMillis();
        nextMs = System.currentTimeMillis() + everyMs;
    }

    /** Starts an audit in the background when one is due and none is running. */
    void maybeStart(long nowMs) {
        if (everyMs > 0 && nowMs >= nextMs && auditing.compareAndSet(false, true)) {
            nextMs = nowMs + everyMs;
            auditor.execute(() -> {
                try {
                    run();
                } catch (RuntimeException e) {
                    LOG.warnf("usage audit failed: %s", e.toString());
                } finally {
                    auditing.set(false);
                }
            });
        }
    }

    /**
     * A difference is reported (log, the {@code kvpool_meta_usage_audit_drifts} metric) only when two quiet audits
     * in a row find the same one: a count that raced a write would not repeat exactly.
     */
    void run() {
        for (GroupConfig g : registry.groups()) {
            Recovery.Audit a = recovery.auditUsage(g.name());
            if (a.totalDifference() == null) {
                continue; // busy: compared nothing
            }
            long d = a.totalDifference();
            Long prev = lastDifference.put(g.name(), d);
            if (d != 0 && prev != null && prev == d) {
                drifts.incrementAndGet();
                LOG.warnf("usage audit of instance group %s: the ledger holds %,d bytes %s than its blocks account "
                        + "for, in two audits in a row (per storage type: %s); a restart recounts usage from the "
                        + "index", g.name(), Math.abs(d), d > 0 ? "more" : "less", a.typeDifferences());
            }
        }
    }

    @Override
    public void close() {
        auditor.shutdownNow();
    }
}
