package dev.kvpool.meta.runtime;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once the index has been recovered and the leader gate is open (KVCM calls are refused before). */
@Readiness
@ApplicationScoped
public class MetaReadiness implements HealthCheck {
    @Inject
    MetaRuntime runtime;

    @Override
    public HealthCheckResponse call() {
        var b = HealthCheckResponse.named("kvpool-metadata-plane").status(runtime.ready());
        if (runtime.ready()) {
            b.withData("index_store", runtime.store().kind())
                    .withData("instances", runtime.registry().instances().size())
                    .withData("keys", runtime.registry().instances().stream().mapToLong(i -> i.index.keyCount()).sum());
        }
        return b.build();
    }
}
