package dev.kvpool.meta.kvcm;

import dev.kvpool.meta.runtime.MetaRuntime;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/**
 * The KVCM semantics ({@link KvcmMeta}) over the runtime's parts, built here rather than by the runtime so that the
 * composition root knows no wire type (and the kvcm package depends on the runtime, never the reverse).
 */
@ApplicationScoped
public class KvcmService {
    @Inject
    MetaRuntime runtime;

    @Inject
    MeterRegistry meters;

    private volatile KvcmMeta meta;

    /** Null while the runtime is still opening its store (the adapters refuse calls until it is ready). */
    public KvcmMeta meta() {
        KvcmMeta m = meta;
        if (m != null || runtime.query() == null) {
            return m;
        }
        synchronized (this) {
            if (meta == null) {
                var r = runtime;
                // every KVCM call answers SERVER_NOT_LEADER until recovery ends (a KVCM leader does the same, §1.8),
                // except lookups, which need only the loaded index
                meta = new KvcmMeta(r.registry(), r.query(), r.write(), r.deletions(), r.store()::sessionOwner,
                        r::ready, r::lookupsOpen,
                        new KvcmMeta.Node(r.nodeId(), r.advertisedHost(), r.grpcPort(), r.httpPort()), meters,
                        r::events, r.stats());
            }
            return meta;
        }
    }
}
