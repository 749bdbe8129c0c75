package dev.kvpool.meta.whatif;

import dev.kvpool.meta.runtime.MetaSettings;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.nio.file.Path;

/** The what-if traces and jobs of this plane, built lazily from {@code kvpool.meta.whatif.*} on first use. */
@ApplicationScoped
public class WhatIf {
    @Inject
    MetaSettings cfg;
    @Inject
    WhatIfSettings w;

    private volatile WhatIfTraces traces;
    private volatile WhatIfJobs jobs;

    /** Uploads live in {@code <data dir>/whatif/traces}. */
    public Path tracesDir() {
        return Path.of(cfg.dataDir()).toAbsolutePath().normalize().resolve("whatif").resolve("traces");
    }

    public synchronized WhatIfTraces traces() {
        if (traces == null) {
            traces = new WhatIfTraces(tracesDir(), WhatIfTraces.defaultExamples(), w.maxTraceBytes().asLongValue(),
                    w.maxTraceRequests(), w.maxTraceBlocks());
        }
        return traces;
    }

    public synchronized WhatIfJobs jobs() {
        if (jobs == null) {
            jobs = new WhatIfJobs(traces(), w.jobsKept(), w.jobsRunning(), w.threads(), w.maxRuns(), w.bisectSteps());
        }
        return jobs;
    }

    @PreDestroy
    synchronized void close() {
        if (jobs != null) {
            jobs.close();
        }
    }
}
