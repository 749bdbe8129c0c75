package dev.kvpool.meta.engine.scores;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Clock;

/** The process's router hit-rate statistics, fed by every scores query. */
@ApplicationScoped
public class EngineRouterStats {
    private final RouterStats stats = new RouterStats(Clock.systemUTC());

    public RouterStats stats() {
        return stats;
    }
}
