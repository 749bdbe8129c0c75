package dev.kvpool.agent.health;

import dev.kvpool.agent.api.AgentConfig;
import dev.kvpool.agent.api.AgentService;
import dev.kvpool.agent.api.SharedMemory;
import dev.kvpool.agent.events.BlockEventPublisher;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.store.BlockStore;
import dev.kvpool.agent.tier.Tier;
import io.quarkus.vertx.http.HttpServerStart;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.ObservesAsync;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;

/**
 * What the agent's three health checks read: the device workers (alive, and whether due work progresses), the
 * tiers and their failed devices, the shared segment, the engine API's listener and the event spool. Reads only
 * in-memory state, no I/O: the checks may run on an event-loop thread.
 */
@ApplicationScoped
public class AgentHealth {
    @Inject
    AgentService agent;

    @Inject
    AgentConfig config;

    /** The engine API's port once Quarkus' HTTP server listens (0 until then). */
    private volatile int listening;

    void listening(@ObservesAsync HttpServerStart e) {
        listening = e.options().getPort();
    }

    boolean started() {
        return "started".equals(agent.phase());
    }

    /** Why the device workers are not live (a worker thread ended, or due work saw no progress), or null. */
    String workerProblem() {
        BlockStore s = agent.store();
        if (s == null) {
            return null;
        }
        long limit = config.health().stallAfter().toNanos();
        List<String> problems = new ArrayList<>();
        for (PooledTier t : pooled(s)) {
            for (DeviceWorker w : t.workers()) {
                DeviceWorker.Health h = w.health();
                String dev = t.name() + " device " + w.device().id();
                if (!h.alive()) {
                    problems.add(dev + ": its worker thread ended" + (h.died() == null ? "" : " (" + h.died() + ")")
                            + "; its requests cannot complete");
                } else if (h.stalledNanos() > limit) {
                    problems.add(String.format("%s: no progress on due work for %.1f s (%d request(s) on the device,"
                                    + " %d queued read(s), %d queued write(s); limit %.1f s,"
                                    + " kvpool.agent.health.stall-after)", dev, h.stalledNanos() / 1e9, h.onDevice(),
                            h.queuedReads(), h.queuedWrites(), limit / 1e9));
                }
            }
        }
        return problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** Tiers with every device out of use (they store and serve nothing), or null. */
    String tierProblem() {
        BlockStore s = agent.store();
        if (s == null) {
            return null;
        }
        List<String> problems = new ArrayList<>();
        for (PooledTier t : pooled(s)) {
            List<String> failed = t.failedDevices();
            if (!failed.isEmpty() && failed.size() == t.devices().size()) {
                problems.add("tier " + t.name() + ": every device out of use after failed I/O (" + String.join(",", failed)
                        + "); each is probed again after a rest");
            }
        }
        return problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** Why the agent should not take engine traffic, or null: start-up, listener, segment, tiers, workers. */
    String readinessProblem() {
        if (!started()) {
            return "agent " + agent.phase();
        }
        if (listening == 0) {
            return "the engine API is not listening yet";
        }
        SharedMemory shm = agent.shm();
        if (shm == null || !shm.mapped()) {
            return "the shared segment is not mapped";
        }
        String t = tierProblem();
        String w = workerProblem();
        return t == null ? w : w == null ? t : t + "; " + w;
    }

    /** Tiers, devices and failed devices, the event spool: what every check reports. */
    HealthCheckResponseBuilder describe(HealthCheckResponseBuilder b) {
        b.withData("phase", agent.phase());
        BlockStore s = agent.store();
        if (s == null) {
            return b;
        }
        List<String> tiers = new ArrayList<>(), devices = new ArrayList<>(), failed = new ArrayList<>();
        for (Tier t : s.tiers()) {
            tiers.add(t.name());
        }
        for (PooledTier t : pooled(s)) {
            for (int d = 0; d < t.devices().size(); d++) {
                String id = t.devices().get(d).id();
                devices.add(id);
                if (t.failed(d)) {
                    failed.add(id);
                }
            }
        }
        b.withData("tiers", String.join(",", tiers)).withData("devices", String.join(",", devices))
                .withData("failed_devices", failed.isEmpty() ? "none" : String.join(",", failed));
        BlockEventPublisher p = agent.publisher();
        b.withData("events", p == null ? "off" : String.format("sent %d batches, %d spooled (%d bytes), %d dropped",
                p.sentBatches(), p.spooled(), p.spooledBytes(), p.droppedBatches()));
        return b;
    }

    HealthCheckResponseBuilder readinessData(HealthCheckResponseBuilder b) {
        describe(b);
        if (listening != 0) {
            b.withData("engine_api", "http://" + config.httpHost() + ":" + listening);
        }
        SharedMemory shm = agent.shm();
        if (shm != null) {
            b.withData("shm", shm.path().toString()).withData("shm_bytes", shm.size());
        }
        BlockStore s = agent.store();
        if (s != null && s.nvme() != null) {
            // the kept-block index is read before the agent serves: what it found
            b.withData("nvme_kept_at_start", s.nvme().keptAtStart().values().stream().mapToLong(Integer::longValue).sum())
                    .withData("nvme_kept_announced", s.keptAnnounced().isDone());
        }
        if (s != null && s.pool() != null) {
            b.withData("pool_backlog_blocks", s.poolBacklog());
        }
        return b;
    }

    static HealthCheckResponse build(HealthCheckResponseBuilder b, String problem) {
        if (problem != null) {
            b.withData("reason", problem);
        }
        return b.status(problem == null).build();
    }

    private static List<PooledTier> pooled(BlockStore s) {
        List<PooledTier> out = new ArrayList<>();
        for (Tier t : s.tiers()) {
            if (t instanceof PooledTier p) {
                out.add(p);
            }
        }
        return out;
    }
}
