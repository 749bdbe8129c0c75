package dev.kvpool.control.services;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.security.Caller;
import dev.kvpool.control.stats.StatsService;
import dev.kvpool.control.usage.UsageService;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The services the console shows: this control plane, the metadata-plane replicas (from their stats reports, which
 * double as heartbeats) and the data agents (from their heartbeats, {@code POST /api/v1/services/heartbeat}, which
 * an agent posts when it is given a control-plane URL). Both live in {@code service_replica}, told apart by kind.
 */
@ApplicationScoped
public class ServicesService {
    /** A replica is DOWN when its last report is older than this many of its report periods. */
    public static final int DOWN_AFTER_PERIODS = 3;
    public static final String META = "meta";
    public static final String AGENT = "agent";
    /** Tiers one agent heartbeat may list. */
    public static final int MAX_TIERS = 16;
    /** An agent's period when its heartbeat names none (the agent's default). */
    public static final int DEFAULT_AGENT_PERIOD_SECONDS = 10;
    private static final Pattern TIER = Pattern.compile("[a-z0-9_-]{1,32}");

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

    /** What one tier of an agent holds; a field the agent did not report is absent. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record TierView(Long capacityBytes, Long usedBytes, Long blocks) {
    }

    /** A data agent's heartbeat as it is posted; everything is checked by {@link #agentHeartbeat}. */
    public record AgentHeartbeat(String kind, String id, String url, String version, Instant startedAt,
                                 Integer periodSeconds, Map<String, TierView> tiers) {
    }

    /** {@code url} is left out for a tenant. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record AgentView(String id, String url, String status, Instant lastSeen, String version, Instant startedAt,
                            Map<String, TierView> tiers) {
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
        } else if (!META.equals(r.kind)) {
            throw ApiException.conflict("replica.id", "replica.id '" + Text.safe(h.id()) + "' is a data agent's id");
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

    /**
     * Validates a data agent's heartbeat completely, then records the agent as seen at {@code now} with its tiers.
     * Each field is checked as the stats report checks its replica (400 naming the field); an id a metadata-plane
     * replica already reports under is a 409.
     */
    @Transactional
    public void agentHeartbeat(AgentHeartbeat h, Instant now) {
        if (h == null) {
            throw ApiException.invalid("kind", "send a heartbeat: {\"kind\": \"agent\", \"id\", \"url\", "
                    + "\"version\", \"startedAt\", \"periodSeconds\", \"tiers\": {...}}");
        }
        if (!AGENT.equals(h.kind())) {
            throw ApiException.invalid("kind", "kind must be 'agent' (metadata-plane replicas report through POST "
                    + "/api/v1/stats), got '" + Text.safe(String.valueOf(h.kind())) + "'");
        }
        if (h.id() == null || h.id().isBlank()) {
            throw ApiException.invalid("id", "id is required");
        }
        String id = Inputs.text("id", h.id(), 253);
        String url = Inputs.httpUrl("url", h.url());
        String version = h.version() == null ? null : Inputs.text("version", h.version(), 64);
        Instant started = h.startedAt();
        if (started != null && (started.isBefore(UsageService.EARLIEST)
                || started.isAfter(now.plus(UsageService.MAX_CLOCK_SKEW)))) {
            throw ApiException.invalid("startedAt", "startedAt must be between " + UsageService.EARLIEST
                    + " and now + " + UsageService.MAX_CLOCK_SKEW.toMinutes() + " minutes, got " + started);
        }
        int period = h.periodSeconds() == null ? DEFAULT_AGENT_PERIOD_SECONDS
                : (int) Inputs.range("periodSeconds", h.periodSeconds(), 1, StatsService.MAX_PERIOD_SECONDS);
        Map<String, TierView> tiers = new TreeMap<>();
        if (h.tiers() != null) {
            if (h.tiers().size() > MAX_TIERS) {
                throw ApiException.invalid("tiers", "tiers may list at most " + MAX_TIERS + " tiers, got "
                        + h.tiers().size());
            }
            for (var e : h.tiers().entrySet()) {
                String name = e.getKey();
                if (name == null || !TIER.matcher(name).matches()) {
                    throw ApiException.invalid("tiers", "tiers: a tier name must be 1-32 characters [a-z0-9_-] such "
                            + "as host or nvme, got '" + Text.safe(String.valueOf(name)) + "'");
                }
                String f = "tiers." + name;
                TierView t = e.getValue();
                if (t == null) {
                    throw ApiException.invalid(f, f + " must be an object {\"capacityBytes\", \"usedBytes\", "
                            + "\"blocks\"}");
                }
                Long cap = count(f + ".capacityBytes", t.capacityBytes()), used = count(f + ".usedBytes", t.usedBytes());
                Long blocks = count(f + ".blocks", t.blocks());
                if (cap != null && used != null && used > cap) {
                    throw ApiException.invalid(f + ".usedBytes", f + ".usedBytes (" + used + ") must not exceed "
                            + f + ".capacityBytes (" + cap + ")");
                }
                tiers.put(name, new TierView(cap, used, blocks));
            }
        }
        ReplicaEntity r = replicas.findById(id);
        boolean fresh = r == null;
        if (fresh) {
            r = new ReplicaEntity();
            r.id = id;
            r.kind = AGENT;
        } else if (!AGENT.equals(r.kind)) {
            throw ApiException.conflict("id", "id '" + Text.safe(id) + "' is a metadata-plane replica's id");
        }
        r.url = url;
        r.version = version;
        r.startedAt = started;
        r.periodSeconds = period;
        r.lastSeen = now;
        try {
            r.tiers = Json.MAPPER.writeValueAsString(tiers);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        if (fresh) {
            replicas.persist(r);
        }
    }

    private static Long count(String field, Long v) {
        return v == null ? null : Inputs.range(field, v, 0, StatsService.MAX_COUNT);
    }

    static Map<String, TierView> tiers(String json) {
        if (json == null || json.isEmpty()) {
            return Map.of();
        }
        try {
            return Json.MAPPER.readValue(json, TIERS);
        } catch (JsonProcessingException e) {
            return Map.of(); // written by agentHeartbeat only, so never; an unreadable row shows no tiers
        }
    }

    private static final TypeReference<TreeMap<String, TierView>> TIERS = new TypeReference<>() {
    };

    public static String status(Instant lastSeen, int periodSeconds, Instant now) {
        return lastSeen.plusSeconds((long) DOWN_AFTER_PERIODS * Math.max(1, periodSeconds)).isBefore(now) ? "DOWN" : "UP";
    }

    public ServicesView view(Caller c, Instant now) {
        List<ReplicaView> metas = replicas.sorted(META).stream().map(r -> new ReplicaView(r.id,
                c.isTenant() ? null : r.url, r.leader, status(r.lastSeen, r.periodSeconds, now), r.lastSeen, r.store,
                r.instances, r.keys, r.version, r.startedAt)).toList();
        List<AgentView> agents = replicas.sorted(AGENT).stream().map(r -> new AgentView(r.id,
                c.isTenant() ? null : r.url, status(r.lastSeen, r.periodSeconds, now), r.lastSeen, r.version,
                r.startedAt, tiers(r.tiers))).toList();
        return new ServicesView(new ControlPlaneView("UP", version, startedAt), metas, agents);
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
