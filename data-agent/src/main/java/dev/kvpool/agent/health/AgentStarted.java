package dev.kvpool.agent.health;

import dev.kvpool.agent.api.AgentService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Startup;

/** /q/health/started: UP once start-up finished (how long it took), the phase it is in until then. */
@Startup
@ApplicationScoped
public class AgentStarted implements HealthCheck {
    @Inject
    AgentHealth health;

    @Inject
    AgentService agent;

    @Override
    public HealthCheckResponse call() {
        var b = HealthCheckResponse.named("kvpool-agent-start").withData("phase", agent.phase());
        if (agent.agentId() != null) {
            b.withData("agent", agent.agentId());
        }
        if (agent.startedInMs() >= 0) {
            b.withData("started_in_ms", agent.startedInMs());
        }
        return AgentHealth.build(b, health.started() ? null : "agent " + agent.phase());
    }
}
