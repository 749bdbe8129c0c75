package dev.kvpool.agent.health;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * /q/health/ready: UP once the tiers are open (the NVMe kept-block index read), the shared segment mapped and the
 * engine API listening, and while no tier has lost every device and no device worker is wedged; the reason
 * otherwise.
 */
@Readiness
@ApplicationScoped
public class AgentReadiness implements HealthCheck {
    @Inject
    AgentHealth health;

    @Override
    public HealthCheckResponse call() {
        return AgentHealth.build(health.readinessData(HealthCheckResponse.named("kvpool-agent-ready")),
                health.readinessProblem());
    }
}
