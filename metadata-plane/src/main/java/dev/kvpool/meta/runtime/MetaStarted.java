package dev.kvpool.meta.runtime;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Startup;

/**
 * /q/health/started: DOWN while the replica recovers (waits for another replica's rebuild, rebuilds usage and slots
 * from the index), with the phase and the rebuild's progress; UP for good once it serves. A Kubernetes startupProbe
 * on it holds off the liveness probe for as long as a rebuild takes, and shows how far it got.
 */
@Startup
@ApplicationScoped
public class MetaStarted implements HealthCheck {
    @Inject
    MetaRuntime runtime;

    @Override
    public HealthCheckResponse call() {
        var b = HealthCheckResponse.named("kvpool-metadata-plane-start").status(runtime.ready());
        return withStartState(b, runtime).build();
    }

    static HealthCheckResponseBuilder withStartState(HealthCheckResponseBuilder b, MetaRuntime runtime) {
        runtime.startState().forEach((k, v) -> {
            if (v instanceof Number n) {
                b.withData(k, n.longValue());
            } else {
                b.withData(k, String.valueOf(v));
            }
        });
        return b;
    }
}
