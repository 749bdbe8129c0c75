package dev.kvpool.meta.engine.report;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;

/** KVCM engine-event APIs (ReportEvent / GetHostCacheState; README "Engine cache events"). */
@ConfigMapping(prefix = "kvpool.kvcm")
public interface EngineReportSettings {
    /**
     * GetHostCacheState over HTTP also prints "global" (= local: no remote source is evaluated); off because
     * strict proto3 JSON parsers of H3 clients refuse the unknown field.
     */
    @WithName("host-cache-state.emit-global")
    @WithDefault("false")
    boolean emitGlobal();

    /**
     * Reported (block, medium) locations one instance may hold over all its reporters when its group's
     * max_key_count is 0 (unlimited); otherwise max_key_count is the bound (beyond it REACH_MAX_ENTITY_CAPACITY).
     */
    @WithName("report.max-locations-per-instance")
    @WithDefault("4000000")
    long maxLocationsPerInstance();

    /** How often the liveness sweep looks at reporters (each storage's liveness_check_interval_ms applies). */
    @WithName("report.sweep-tick")
    @WithDefault("1s")
    Duration sweepTick();
}
