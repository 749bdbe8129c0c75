package dev.kvpool.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.sim.PolicySweep;
import dev.kvpool.meta.whatif.WhatIfJobs;
import dev.kvpool.meta.whatif.WhatIfTraces;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The console's what-if (a server-side job over an uploaded trace) and {@code ./kvpool bench policies} give the same
 * hit rates for the same trace, capacity and policy: the first {@value #LINES} requests of Mooncake's conversation
 * trace, uploaded as a trace of its own, against the bench's loading of the same file with {@code --limit}.
 *
 * <p>LRU, TTL and PREFIX_LRU are deterministic and must match to the block. LFU's counter grows with probability
 * 1/2^counter on a hit (Redis-style, {@code Loc.touched}): two runs of the bench itself differ by a few blocks, so
 * its hit rates are compared within 0.5 percentage points.
 */
class WhatIfEqualsBenchTest {
    static final int LINES = 2000;
    static final List<Long> CAPACITIES = List.of(100_000L, 300_000L, 1_000_000L);
    static final List<String> POLICIES = List.of("LRU", "LFU", "TTL", "PREFIX_LRU");

    @TempDir
    Path dir;

    @Test
    void serverSweepGivesTheBenchHitRates() throws Exception {
        Path conv = MooncakeTrace.conversation();
        List<String> lines = Files.readAllLines(conv).stream().filter(l -> !l.isBlank()).limit(LINES).toList();
        WhatIfTraces traces = new WhatIfTraces(dir, Map.of(), 64L << 20, 1_000_000, 4_000_000);
        traces.upload("conv2000", new ByteArrayInputStream((String.join("\n", lines) + "\n")
                .getBytes(StandardCharsets.UTF_8)), -1);
        try (WhatIfJobs jobs = new WhatIfJobs(traces, 4, 1, 2, 320, 6)) {
            WhatIfJobs.View v = await(jobs, jobs.submit(new WhatIfJobs.RunRequest("conv2000", POLICIES, CAPACITIES,
                    null, 0.9, 5, null, null)));
            assertEquals(v.progress().runsTotal(), v.progress().runsDone());
            assertEquals(1 + POLICIES.size() * CAPACITIES.size(), v.progress().runsDone());
            assertEquals(v.progress().accessesTotal(), v.progress().accessesDone());

            // the bench's own path: PolicyBench loads with --limit and replays with PolicyBench.replay
            PolicySweep.Trace t = PolicySweep.load("conversation", LINES, true);
            assertEquals(t.requests().size(), v.trace().requests());
            assertEquals(t.blocks(), v.trace().blocks());
            PolicySweep.Result ceiling = PolicySweep.unbounded(t, 0.9, 5, 60, PolicySweep.NONE);
            assertEquals(ceiling.hitRate(), v.ceiling().hitRate());
            assertEquals(POLICIES.size() * CAPACITIES.size(), v.results().size());
            for (WhatIfJobs.ResultView r : v.results()) {
                PolicySweep.Result b = PolicyBench.replay(t, ReclaimPolicy.parse(r.policy()), r.capacityTokens(),
                        r.capacityTokens() / MooncakeTrace.BLOCK_SIZE, 0.9, 5, 60);
                String what = r.policy() + " at " + r.capacityTokens() + " tokens";
                assertEquals(b.capacityBlocks(), r.capacityBlocks(), what);
                assertEquals(b.queried(), r.queriedBlocks(), what);
                if (r.policy().equals("LFU")) {
                    assertEquals(b.hitRate(), r.hitRate(), 0.005, what);
                } else {
                    assertEquals(b.hitRate(), r.hitRate(), 0.0, what);
                    assertEquals(b.hitBlocks(), r.hitBlocks(), what);
                    assertEquals(b.evicted(), r.evictedBlocks(), what);
                    assertEquals(b.refused(), r.refusedBlocks(), what);
                }
            }

            // the smallest LRU capacity reaching a hit rate between the first two capacities': found by bisection
            // with real replays; it reaches the target, and every probe below it does not
            double lo = v.results().get(0).hitRate(), hi = v.results().get(1).hitRate();
            assertEquals("LRU", v.results().get(0).policy());
            assertTrue(hi > lo, v.results().toString());
            double target = (lo + hi) / 2;
            WhatIfJobs.View b = await(jobs, jobs.submit(new WhatIfJobs.RunRequest("conv2000", List.of("LRU"),
                    CAPACITIES, null, 0.9, 5, null, new WhatIfJobs.Target("lru", target))));
            WhatIfJobs.Smallest s = b.smallest();
            assertNotNull(s);
            assertTrue(s.reached(), s.toString());
            assertTrue(s.achievedHitRate() >= target, s.toString());
            assertTrue(s.capacityBlocks() > CAPACITIES.get(0) / 512 && s.capacityBlocks() <= CAPACITIES.get(1) / 512,
                    s.toString());
            assertTrue(!s.probes().isEmpty() && s.probes().size() <= 6, s.toString());
            assertEquals(b.progress().runsDone(), 1 + CAPACITIES.size() + s.probes().size());
            PolicySweep.Result check = PolicyBench.replay(t, ReclaimPolicy.LRU, s.capacityTokens(), s.capacityBlocks(),
                    0.9, 5, 60);
            assertEquals(s.achievedHitRate(), check.hitRate(), 0.0, "the smallest capacity replayed again");
            for (WhatIfJobs.Probe p : s.probes()) {
                assertTrue(p.capacityBlocks() >= s.capacityBlocks() || p.hitRate() < target, s.toString());
            }
            // a target over the ceiling is not reached
            WhatIfJobs.View c = await(jobs, jobs.submit(new WhatIfJobs.RunRequest("conv2000", List.of("LRU"),
                    List.of(100_000L), null, 0.9, 5, null, new WhatIfJobs.Target("LRU", 0.99))));
            assertTrue(!c.smallest().reached() && c.smallest().note().contains("ceiling"), c.smallest().toString());
        }
    }

    static WhatIfJobs.View await(WhatIfJobs jobs, WhatIfJobs.View v) throws InterruptedException {
        long until = System.currentTimeMillis() + 120_000;
        while (!List.of("done", "failed", "cancelled").contains(v.state()) && System.currentTimeMillis() < until) {
            Thread.sleep(50);
            v = jobs.get(v.id());
        }
        assertEquals("done", v.state(), "job: " + v);
        return v;
    }
}
