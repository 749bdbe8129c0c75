package dev.kvpool.agent.health;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.logging.Logger;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * /q/health/live: DOWN when a device worker is dead or wedged (due work without progress for
 * {@code kvpool.agent.health.stall-after}): a restart is the cure. A device taken out of use after failed I/O is
 * reported, not DOWN: the agent routes around it and probes it back in, a restart would not mend the disk.
 */
@Liveness
@ApplicationScoped
public class AgentLiveness implements HealthCheck {
    @Inject
    AgentHealth health;

    private static final Logger LOG = Logger.getLogger(AgentLiveness.class.getName());
    private volatile String last;

    @Override
    public HealthCheckResponse call() {
        String problem = health.workerProblem();
        String was = last;
        last = problem;
        if (problem != null && was == null) { // once per episode, not once per probe
            LOG.warning("liveness DOWN: " + problem);
        } else if (problem == null && was != null) {
            LOG.info("liveness UP again (was: " + was + ")");
        }
        return AgentHealth.build(health.describe(HealthCheckResponse.named("kvpool-agent-live")), problem);
    }
}
