package dev.kvpool.meta.whatif;

import io.quarkus.runtime.configuration.MemorySize;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/** What-if replays on this plane (REST /api/v1/whatif, docs in README "What-if"). */
@ConfigMapping(prefix = "kvpool.meta.whatif")
public interface WhatIfSettings {
    /** The largest uploaded trace body: a larger one is refused with 413 before or as soon as it passes this. */
    @WithDefault("64M")
    MemorySize maxTraceBytes();

    /** Requests (lines) an uploaded trace may hold (400 naming the line that passes it). */
    @WithDefault("1000000")
    int maxTraceRequests();

    /**
     * Block ids (hash_ids) over all lines of an uploaded trace (400 naming the line that passes it); a replay holds
     * them in memory.
     */
    @WithDefault("4000000")
    long maxTraceBlocks();

    /**
     * Jobs kept in memory (queued, running and finished): the oldest finished one is forgotten to make room; 429
     * when all are queued or running.
     */
    @WithDefault("8")
    int jobsKept();

    /** Jobs that run at once; the others wait in the queue. */
    @WithDefault("1")
    int jobsRunning();

    /** Replays that run at once, shared by the running jobs (each on its own thread); 0: one per processor. */
    @WithDefault("0")
    int threads();

    /** Replays one job may ask for (policies × capacities, plus the ceiling and the bisection). */
    @WithDefault("320")
    int maxRuns();

    /** Extra replays that narrow down the smallest capacity reaching a target hit rate. */
    @WithDefault("6")
    int bisectSteps();
}
