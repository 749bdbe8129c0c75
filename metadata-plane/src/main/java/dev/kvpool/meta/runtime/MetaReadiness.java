package dev.kvpool.meta.runtime;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready once the index has been recovered and the leader gate is open (KVCM calls are refused before); until then
 * it shows how far start-up got, as {@link MetaStarted} does.
 */
@Readiness
@ApplicationScoped
public class MetaReadiness implements HealthCheck {
    @Inject
    MetaRuntime runtime;

    @Override
    public HealthCheckResponse call() {
        // a replica whose election loop stalled must not look healthy: it may believe in a lease it lost
        boolean electing = runtime.ready()
                && System.currentTimeMillis() - runtime.leadership().lastLoopMs() < 30_000;
        // every call needs the shared store: a replica that cannot reach it should take no traffic
        String storeProblem = runtime.ready() ? runtime.leadership().storeProblem() : null;
        var b = HealthCheckResponse.named("kvpool-metadata-plane")
                .status(runtime.ready() && electing && storeProblem == null);
        if (storeProblem != null) {
            b.withData("index_store_error", storeProblem);
        }
        if (!runtime.ready()) {
            MetaStarted.withStartState(b, runtime);
        }
        if (runtime.ready()) {
            b.withData("node_id", runtime.leadership().selfId())
                    .withData("leader", runtime.leadership().isLeader())
                    .withData("leader_id", runtime.leadership().leaderId());
            b.withData("index_store", runtime.store().kind())
                    .withData("instances", runtime.registry().instances().size());
            var cp = runtime.controlPlane();
            if (cp != null) {
                // config_synced false: serving with the persisted configuration until the control plane answers
                b.withData("control_plane", cp.url()).withData("config_position", cp.position())
                        .withData("config_synced", cp.synced());
            }
            if (!runtime.remoteStore()) { // health checks may run on the event loop: no network calls here
                b.withData("keys", runtime.registry().instances().stream().mapToLong(i -> i.index.keyCount()).sum());
            }
        }
        return b.build();
    }
}
