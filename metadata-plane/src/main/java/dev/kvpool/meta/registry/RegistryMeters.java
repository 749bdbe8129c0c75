package dev.kvpool.meta.registry;

import dev.kvpool.meta.index.CachedIndex;
import dev.kvpool.meta.quota.QuotaLedger;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.HashSet;
import java.util.Set;

/**
 * The registry's meters: usage against quota per group, keys (and the search cache's hit ratio) per instance, and
 * the ledger's drift. Groups and instances come and go at runtime, so {@link #refresh()} registers the new ones;
 * a removed one reads 0.
 */
public final class RegistryMeters {
    private final Registry registry;
    private final QuotaLedger ledger;
    private final MeterRegistry meters;
    private final Set<String> gauged = new HashSet<>();

    public RegistryMeters(Registry registry, QuotaLedger ledger, MeterRegistry meters) {
        this.registry = registry;
        this.ledger = ledger;
        this.meters = meters;
        Gauge.builder("kvpool.meta.usage.drift", ledger, l -> l.drift().events())
                .description("releases that would have taken a group's usage below zero (accounting drift; "
                        + "should stay 0)").register(meters);
        Gauge.builder("kvpool.meta.usage.drift.bytes", ledger, l -> l.drift().bytes())
                .description("bytes those releases went below zero (clamped)").register(meters);
        refresh();
    }

    /** Registers the meters of groups and instances that appeared since the last call. */
    public synchronized void refresh() {
        for (var g : registry.groups()) {
            String name = g.name();
            if (gauged.add("g:" + name)) {
                Gauge.builder("kvpool.meta.group.used.bytes", ledger, l -> l.usage(name).total())
                        .tag("group", name).register(meters);
                Gauge.builder("kvpool.meta.group.quota.bytes", registry, r -> {
                    var now = r.group(name); // the control plane may change or remove it at runtime
                    return now == null ? 0 : now.capacity();
                }).tag("group", name).register(meters);
            }
        }
        for (Instance inst : registry.instances()) {
            String id = inst.id;
            if (gauged.add("i:" + id)) {
                Gauge.builder("kvpool.meta.index.keys", registry, r -> {
                    Instance i = r.instance(id);
                    return i == null ? 0 : i.index.keyCount();
                }).tag("instance", id).description("block keys in the instance index").register(meters);
                if (inst.index instanceof CachedIndex c) {
                    Gauge.builder("kvpool.meta.search.cache.hit.ratio", c, x -> {
                        long h = x.hits(), m = x.misses();
                        return h + m == 0 ? 0 : (double) h / (h + m);
                    }).tag("instance", id).description("search cache hits / lookups").register(meters);
                }
            }
        }
    }
}
