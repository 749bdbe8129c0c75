package dev.kvpool.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.meta.whatif.WhatIfJobs;
import dev.kvpool.meta.whatif.WhatIfTraces;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * The console's what-if figure (docs/benchmarks.md): a sweep of the conversation trace over 4 policies × 8
 * capacities (1 M to 30 M tokens, log-spaced) plus the ceiling, as the metadata plane runs it, three times in one
 * JVM (the first pays for the JIT). Run with {@code -Dkvpool.whatif.speed=true}; it prints, it asserts nothing about
 * time (the machine is shared).
 */
@EnabledIfSystemProperty(named = "kvpool.whatif.speed", matches = "true")
class WhatIfSweepSpeedTest {
    @TempDir
    Path dir;

    @Test
    void sweep4x8() throws Exception {
        java.util.logging.Logger.getLogger("dev.kvpool").setLevel(java.util.logging.Level.WARNING);
        WhatIfTraces traces = new WhatIfTraces(dir, WhatIfTraces.defaultExamples(), 64L << 20, 1_000_000, 4_000_000);
        int threads = Integer.getInteger("kvpool.whatif.threads", 0);
        try (WhatIfJobs jobs = new WhatIfJobs(traces, 8, 1, threads, 320, 6)) {
            for (int rep = 0; rep < Integer.getInteger("kvpool.whatif.reps", 3); rep++) {
                long t0 = System.nanoTime();
                WhatIfJobs.View v = WhatIfEqualsBenchTest.await(jobs, jobs.submit(new WhatIfJobs.RunRequest(
                        "conversation", List.of("LRU", "LFU", "TTL", "PREFIX_LRU"), null,
                        new WhatIfJobs.CapacityRange(1e6, 3e7, 8), 0.9, 5, null, null)));
                double wall = (System.nanoTime() - t0) / 1e9;
                double runSeconds = v.results().stream().mapToDouble(WhatIfJobs.ResultView::seconds).sum();
                long accesses = v.progress().accessesDone();
                assertEquals(33, v.progress().runsDone());
                System.out.printf(Locale.ROOT, "what-if sweep %d (%d threads): 33 replays, %,d block accesses in %.2f s "
                        + "(job %.2f s): %.2f M accesses/s overall, %.2f M/s per replay (32 bounded replays' own time "
                        + "%.1f s); load average %s%n", rep, jobs.threads(), accesses, wall, v.elapsedSeconds(),
                        accesses / wall / 1e6, (accesses - accesses / 33) / runSeconds / 1e6, runSeconds,
                        java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim());
                if (rep == 0 && Boolean.getBoolean("kvpool.whatif.print")) {
                    v.results().forEach(r -> System.out.printf(Locale.ROOT, "  %-10s %,12d tokens %8.4f%n", r.policy(),
                            r.capacityTokens(), r.hitRate()));
                }
            }
        }
    }
}
