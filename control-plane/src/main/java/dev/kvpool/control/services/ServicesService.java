package dev.kvpool.control.services;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.kvpool.control.security.Caller;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The services the console shows: this control plane, the metadata-plane replicas (from their stats reports, which
 * double as heartbeats) and the data agents (none report today: the data agent has no control-plane URL).
 */
@ApplicationScoped
public class ServicesService {
    /** A replica is DOWN when its last report is older than this many of its report periods. */
    public static final int DOWN_AFTER_PERIODS = 3;
    public static final String META = "meta";

    @Inject
    ReplicaRepository replicas;
    @ConfigProperty(name = "quarkus.application.version", defaultValue = "unknown")
    String version;
    @ConfigProperty(name = "kvpool.control.stats.replica-retention", defaultValue = "P7D")
    Duration replicaRetention;

    private volatile Instant startedAt = Instant.now();

    void started(@Observes StartupEvent ev) {
        startedAt = Instant.now();
    }

    /** A replica's description as a validated report carries it. */
    public record Heartbeat(String id, String url, boolean leader, String store, String version, Instant startedAt,
                            long instances, long keys, int periodSeconds) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ControlPlaneView(String status, String version, Instant startedAt) {
    }

    /** {@code url} is left out for a tenant. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ReplicaView(String id, String url, boolean leader, String status, Instant lastSeen, String store,
                              long instances, long keys, String version, Instant startedAt) {
    }

    public record AgentView(String id, String status, Instant lastSeen, Map<String, Object> tiers) {
    }

    public record ServicesView(ControlPlaneView controlPlane, List<ReplicaView> metadataPlanes, List<AgentView> agents) {
    }

    /** Records a report's replica as seen at {@code now}, in the report's transaction. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void heartbeat(Heartbeat h, Instant now) {
        ReplicaEntity r = replicas.findById(h.id());
        boolean fresh = r == null;
        if (fresh) {
            r = new ReplicaEntity();
            r.id = h.id();
            r.kind = META;
        }
        r.url = h.url();
        r.leader = h.leader();
        r.store = h.store();
        r.version = h.version();
        r.startedAt = h.startedAt();
        r.instances = h.instances();
        r.keys = h.keys();
        r.periodSeconds = h.periodSeconds();
        r.lastSeen = now;
        if (fresh) {
            replicas.persist(r);
        }
    }

    public static String status(Instant lastSeen, int periodSeconds, Instant now) {
        return lastSeen.plusSeconds((long) DOWN_AFTER_PERIODS * Math.max(1, periodSeconds)).isBefore(now) ? "DOWN" : "UP";
    }

    public ServicesView view(Caller c, Instant now) {
        List<ReplicaView> metas = replicas.sorted(META).stream().map(r -> new ReplicaView(r.id,
                c.isTenant() ? null : r.url, r.leader, status(r.lastSeen, r.periodSeconds, now), r.lastSeen, r.store,
                r.instances, r.keys, r.version, r.startedAt)).toList();
        return new ServicesView(new ControlPlaneView("UP", version, startedAt), metas, List.of());
    }

    /**
     * The URL of the metadata-plane replica that last reported itself leader and is UP (the one whose what-if jobs
     * the console follows), else of any UP replica, else null.
     */
    public String reportingMetaUrl(Instant now) {
        String any = null;
        for (var r : replicas.sorted(META)) {
            if (r.url == null || !status(r.lastSeen, r.periodSeconds, now).equals("UP")) {
                continue;
            }
            if (r.leader) {
                return r.url;
            }
            any = any == null ? r.url : any;
        }
        return any;
    }

    /** Forgets replicas not heard from for {@code kvpool.control.stats.replica-retention}; returns how many. */
    @Transactional
    public long forgetSilent(Instant now) {
        return replicas.delete("lastSeen < ?1", now.minus(replicaRetention));
    }
}
