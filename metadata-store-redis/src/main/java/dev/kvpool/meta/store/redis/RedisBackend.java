package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.backend.BackendContext;
import dev.kvpool.meta.backend.MetaBackend;
import dev.kvpool.meta.ha.Leadership;
import dev.kvpool.meta.index.DeferredTouchIndex;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.slots.Slots;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import java.time.Duration;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

/**
 * Replicas share one Redis: the index store (with, optionally, a local copy of the served locations), the leader
 * lease with its cold-start rebuild claim, the quota ledger and the slot allocators, all under one key prefix.
 */
final class RedisBackend implements MetaBackend {
    private static final Logger LOG = Logger.getLogger(RedisBackend.class);

    private final RedisSettings settings;
    private final RedisStore store;
    private final RedisLeadership leadership;
    private final RedisQuotaLedger ledger;
    private final DeferredTouchIndex.Toucher toucher;
    private final Redis redis;
    private final String prefix;

    RedisBackend(RedisSettings rc, Redis redis, Vertx vx, BackendContext context) {
        this.settings = rc;
        this.redis = redis;
        this.prefix = rc.prefix() + ":";
        store = new RedisStore(redis, RedisStore.Options.defaults().withPrefix(rc.prefix())
                .withSessionGrace(rc.sessionGrace()).withPageSize(rc.pageSize())
                .withNativeFinishKeys(rc.nativeFinishKeys()));
        Config config = ConfigProvider.getConfig();
        var password = config.getOptionalValue("quarkus.redis.password", String.class);
        if (config.getOptionalValue("quarkus.redis.client-type", String.class).orElse("standalone")
                .equalsIgnoreCase("standalone")) {
            // the KVCM read path's Redis calls stay on the HTTP event loop that serves the request
            var perLoop = new RedisOptions().setConnectionString(rc.url()).setMaxPoolSize(4).setMaxPoolWaiting(1024);
            password.ifPresent(perLoop::setPassword);
            store.loopClients(() -> Redis.createClient(vx, perLoop));
            if (rc.mirror()) {
                store.startMirror(() -> Redis.createClient(vx, perLoop), rc.mirrorMaxLag(), rc.mirrorIdleAfter());
                LOG.infof("index store: local copy of the served locations on (max lag %d ms)",
                        rc.mirrorMaxLag().toMillis());
            }
        } else if (rc.mirror()) {
            // a cluster: the copy reads each instance's stream from its node, one connection per node, with the
            // scheme and credentials of the configured hosts
            java.net.URI first = java.net.URI.create(rc.url().split(",")[0].trim());
            String scheme = first.getScheme() == null ? "redis" : first.getScheme();
            String user = first.getRawUserInfo() == null ? "" : first.getRawUserInfo() + "@";
            store.startClusterMirror(node -> {
                var o = new RedisOptions().setConnectionString(scheme + "://" + user + node).setMaxPoolSize(1);
                password.ifPresent(o::setPassword);
                return Redis.createClient(vx, o);
            }, rc.mirrorMaxLag(), rc.mirrorIdleAfter());
            LOG.infof("index store: local copy of the served locations on, read from each cluster node "
                    + "(max lag %d ms)", rc.mirrorMaxLag().toMillis());
        }
        leadership = new RedisLeadership(redis, prefix, context.nodeId(), rc.leaseTtl(), rc.timeout());
        // no search cache (other replicas change the index under it); access times are recorded off the read
        // path: a touch is a round trip and a script, and it is only eviction input
        toucher = new DeferredTouchIndex.Toucher(rc.touchBuffer(), rc.touchInterval());
        ledger = new RedisQuotaLedger(redis, prefix, rc.timeout());
    }

    @Override
    public IndexStore store() {
        return store;
    }

    @Override
    public Leadership leadership() {
        return leadership;
    }

    @Override
    public QuotaLedger ledger() {
        return ledger;
    }

    @Override
    public Slots slots(String instanceId, int storageNumber, int slotsPerFile) {
        return new RedisSlots(redis, prefix, instanceId, storageNumber, slotsPerFile, settings.timeout());
    }

    @Override
    public InstanceIndex view(String instanceId) {
        return new DeferredTouchIndex(store.index(instanceId), toucher);
    }

    /**
     * A session outlives its deadline by the grace, then expires by itself: after that (and the longest write,
     * plus a minute) a WRITING location nobody names is an orphan.
     */
    @Override
    public Duration orphanWritingAfter() {
        return settings.sessionGrace().plusSeconds(60);
    }

    @Override
    public Duration reconcileEvery() {
        return settings.reconcileInterval();
    }

    @Override
    public void bindTo(MeterRegistry meters) {
        var t = toucher;
        Gauge.builder("kvpool.meta.touch.dropped", t, x -> x.dropped.get())
                .description("access-time updates dropped because the store was too slow to take them").register(meters);
        Gauge.builder("kvpool.meta.touch.pending", t, DeferredTouchIndex.Toucher::pending)
                .description("block keys waiting for their buffered access-time update").register(meters);
        Gauge.builder("kvpool.meta.touch.batches", t, x -> x.batches.get())
                .description("buffered access-time updates applied to the store (one call per instance and interval)")
                .register(meters);
        var rs = store;
        // a finish reaching another replica than its start, or a busy taint counter, costs Redis a read
        Gauge.builder("kvpool.meta.redis.finish.blind", rs, RedisStore::fastFinishes)
                .description("finishWrites that wrote what this replica's start remembered, reading no block")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.finish.native", rs, RedisStore::nativeFinishes)
                .description("blind finishes written with native commands under WATCH instead of a script")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.finish.blind.missed", rs, RedisStore::fastFinishMisses)
                .description("blind finishes refused because a block of the session changed; they then read")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.cas.conflicts", rs, RedisStore::conflicts)
                .description("compare-and-set attempts retried because a key changed since it was read")
                .register(meters);
        // the local copy (kvpool.meta.redis.mirror): how often the query path avoided Redis, and why not
        Gauge.builder("kvpool.meta.redis.copy.answered", rs, RedisStore::mirrorAnswered)
                .description("query-path reads answered from this replica's local copy of the index")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.copy.declined", rs, RedisStore::mirrorDeclined)
                .description("query-path reads the local copy could not answer (not in sync, behind this"
                        + " replica's own writes, or older than its max lag): they went to Redis")
                .register(meters);
        for (String reason : java.util.List.of("not-ready", "stale", "own")) {
            Gauge.builder("kvpool.meta.redis.copy.declined.by", rs, r -> r.mirrorDeclined(reason))
                    .tag("reason", reason)
                    .description("declined reads by reason: not-ready (a full read pending or running),"
                            + " stale (not proven recent within the max lag), own (a change of this replica"
                            + " the copy lacks, whose entry a script computed)")
                    .register(meters);
        }
        Gauge.builder("kvpool.meta.redis.copy.answered.own", rs, RedisStore::mirrorAnsweredOwn)
                .description("reads answered from the copy patched with this replica's own writes that the"
                        + " copy had not applied yet")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.copy.wakes", rs, RedisStore::mirrorWakes)
                .description("reads that found the copy dozing (no read and no change for"
                        + " kvpool.meta.redis.mirror-idle-after) and woke it; such a read goes to Redis")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.copy.resyncs", rs, RedisStore::mirrorResyncs)
                .description("full reads of an instance into the local copy (start, trimmed stream, lost data)")
                .register(meters);
        Gauge.builder("kvpool.meta.redis.copy.node.failures", rs, RedisStore::mirrorNodeFailures)
                .description("reads of the change streams that failed on a Redis node (lost, timed out, or"
                        + " redirecting after a slot move or failover): its instances were read again")
                .register(meters);
    }

    /** The toucher after the store's users, the store last (the plane closed leadership and paths before). */
    @Override
    public void close() {
        toucher.close();
        store.close();
    }
}
