package dev.kvpool.meta.engine.scores;

import static dev.kvpool.meta.rest.BlockKeysResource.problem;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.engine.view.EngineView;
import dev.kvpool.engine.view.PrefixScores;
import dev.kvpool.engine.view.TierWeights;
import dev.kvpool.meta.auth.MetaAuth;
import dev.kvpool.meta.engine.EngineCaches;
import dev.kvpool.meta.engine.ingest.EngineIngest;
import dev.kvpool.meta.engine.ingest.EngineSource;
import dev.kvpool.meta.engine.ingest.PodStates;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.rest.BlockKeysResource;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * Per-pod prefix scores for routers, and what the engines' caches hold per instance. Admin and operator tokens may use
 * any instance; a tenant token the registered instances of its groups (RestAuthFilter lets the scores call through
 * with any valid token; the instance, named in the body, is checked here).
 */
@Path("/api/v1/engine")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "engine", description = "vLLM / SGLang KV-event ingest and prefix scores")
public class EngineScoresResource {
    public static final int MAX_KEYS = 100_000;
    public static final int MAX_TIERS = 64;

    @Inject
    EngineCaches caches;

    @Inject
    EngineIngest ingest;

    @Inject
    MetaRuntime runtime;

    @Inject
    EngineRouterStats routerStats;

    public record ScoresRequest(String instance_id, List<Long> token_ids, List<JsonNode> block_keys,
                                Map<String, Double> tier_weights, String lora_name, String cache_salt,
                                List<BlockKeysResource.MmItemBody> mm_items) {
    }

    public record PodScoreView(String pod, int longest_prefix, Map<String, Integer> prefix_per_tier, double score) {
    }

    public record Pool(int serving_prefix) {
    }

    public record ScoresResponse(String instance_id, int blocks, List<PodScoreView> pods, Pool pool) {
    }

    public record InstanceView(String instance_id, boolean registered, int pods, int visible_pods, int uncertain_pods) {
    }

    public record PodView(String pod, String source, boolean visible, String state, Map<String, Long> tiers,
                          String last_event_at, Long last_seq) {
    }

    public record PoolKeys(long keys) {
    }

    public record MinuteView(String minute, long queries, double routed_hit_rate, double random_hit_rate,
                             double pool_hit_rate) {
    }

    public record RouterView(long queries, long prompt_blocks, long routed_hit_blocks, double routed_hit_rate,
                             double random_hit_rate, double pool_hit_rate, List<MinuteView> series) {
    }

    public record CacheView(String instance_id, List<PodView> pods, PoolKeys pool, RouterView router) {
    }

    @POST
    @Path("/scores")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Score every pod for a prompt's leading blocks (longest prefix, tier-weighted)",
            description = "token_ids are hashed with the instance's scheme and block size; block_keys (signed or "
                    + "unsigned 64-bit decimal, as numbers or strings) are used as they are. Default weights: gpu 1.0, "
                    + "cpu 0.8, other tiers 1.0. pool.serving_prefix is the instance's own KVPool index prefix.")
    public ScoresResponse scores(ScoresRequest req, @HeaderParam("Authorization") String authorization) {
        if (req == null) {
            throw problem(400, "request body: a scores request object is required");
        }
        String id = req.instance_id();
        String p = Identifiers.problem(Identifiers.Kind.INSTANCE, id);
        if (p != null) {
            throw problem(400, "instance_id: " + p);
        }
        Instance inst = authorize(authorization, id);
        TierWeights weights = weights(req.tier_weights());
        if ((req.token_ids() == null) == (req.block_keys() == null)) {
            throw problem(400, "exactly one of token_ids and block_keys is required");
        }
        long[] keys = req.token_ids() != null ? keysOfTokens(inst, id, req) : blockKeys(req.block_keys());
        EngineView view = caches.view();
        PrefixScores s = view.score(id, keys, weights);
        int serving = inst == null || keys.length == 0 ? 0 : BlockKeysResource.servingPrefix(inst, keys);
        List<PodScoreView> pods = s.pods().stream().map(ps -> new PodScoreView(ps.pod(), ps.longestPrefix(),
                new TreeMap<>(ps.prefixPerTier()), ps.score())).toList();
        if (keys.length > 0 && known(id, inst)) {
            long visible = view.pods(id).stream().filter(EngineView.PodSummary::visible).count();
            double random = visible == 0 ? 0
                    : s.pods().stream().mapToLong(PrefixScores.PodScore::longestPrefix).sum() / (double) visible;
            int routed = s.pods().isEmpty() ? 0 : s.pods().getFirst().longestPrefix();
            routerStats.stats().record(id, keys.length, routed, random, serving);
        }
        return new ScoresResponse(id, s.blocks(), pods, new Pool(serving));
    }

    /** The registered instance (or null when it is not registered and the caller may see unregistered ones). */
    private Instance authorize(String authorization, String id) {
        Instance inst = runtime.registry().instance(id);
        MetaAuth auth = runtime.auth();
        if (auth != null) {
            MetaAuth.Refusal r = auth.checkInstance(authorization, id);
            if (r != null) {
                throw problem(r.unauthenticated() ? 401 : 403, r.message());
            }
            // event-fed instances need not be registered, but only a registered one has a group a tenant owns
            if (inst == null && auth.checkAdmin(authorization) != null) {
                throw problem(404, "instance '" + id + "' is not registered");
            }
        }
        return inst;
    }

    private boolean known(String id, Instance inst) {
        return inst != null || caches.view().instances().contains(id) || ingest.states().instances().containsKey(id);
    }

    private static TierWeights weights(Map<String, Double> w) {
        if (w == null) {
            return TierWeights.LLM_D;
        }
        if (w.size() > MAX_TIERS) {
            throw problem(400, "tier_weights: at most " + MAX_TIERS + " tiers, got " + w.size());
        }
        Map<String, Double> m = new HashMap<>();
        for (Map.Entry<String, Double> e : w.entrySet()) {
            String tp = EngineSource.tierProblem(e.getKey());
            if (tp != null) {
                throw problem(400, "tier_weights: tier name " + tp);
            }
            Double v = e.getValue();
            if (v == null || !Double.isFinite(v) || v < 0) {
                throw problem(400, "tier_weights." + e.getKey() + ": must be a finite number >= 0, got " + v);
            }
            m.put(e.getKey(), v);
        }
        return new TierWeights(m, TierWeights.LLM_D.unknownTier());
    }

    private static long[] keysOfTokens(Instance inst, String id, ScoresRequest req) {
        if (inst == null) {
            throw problem(404, "instance '" + id + "' is not registered, so its hash scheme is unknown: send "
                    + "block_keys instead of token_ids");
        }
        List<Long> t = req.token_ids();
        if (t.size() > Limits.MAX_TOKENS_PER_CALL) {
            throw problem(400, "token_ids: at most " + Limits.MAX_TOKENS_PER_CALL + " tokens, got " + t.size());
        }
        if (inst.blockSize <= 0) {
            throw problem(400, "instance '" + id + "' registered block_size " + inst.blockSize
                    + ", so token ids cannot be keyed");
        }
        if (t.size() / inst.blockSize > MAX_KEYS) {
            throw problem(400, "token_ids: at most " + MAX_KEYS + " blocks (" + (long) MAX_KEYS * inst.blockSize
                    + " tokens at block size " + inst.blockSize + "), got " + t.size() + " tokens");
        }
        // vLLM's extra keys (LoRA, cache salt, multimodal items) change its block hashes (hashing.md §3.4)
        dev.kvpool.api.hash.ExtraKeyInputs extras = BlockKeysResource.extras(req.lora_name(), req.cache_salt(),
                req.mm_items());
        long[] tokens = new long[t.size()];
        for (int i = 0; i < tokens.length; i++) {
            Long v = t.get(i);
            if (v == null) {
                throw problem(400, "token_ids[" + i + "] is null");
            }
            tokens[i] = v;
        }
        try {
            return inst.keysOf(tokens, extras);
        } catch (dev.kvpool.meta.core.MetaException e) {
            throw problem(400, e.getMessage());
        }
    }

    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    private static final BigInteger S64_MIN = BigInteger.valueOf(Long.MIN_VALUE);

    /** Block keys as the engines publish them: signed or unsigned 64-bit decimal (number or string). */
    static long[] blockKeys(List<JsonNode> in) {
        if (in.size() > MAX_KEYS) {
            throw problem(400, "block_keys: at most " + MAX_KEYS + " keys, got " + in.size());
        }
        long[] out = new long[in.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode n = in.get(i);
            BigInteger v;
            if (n != null && n.isIntegralNumber()) {
                v = n.bigIntegerValue();
            } else if (n != null && n.isTextual() && n.textValue().length() <= 20
                    && n.textValue().matches("-?[0-9]{1,20}")) {
                v = new BigInteger(n.textValue());
            } else {
                throw problem(400, "block_keys[" + i + "]: must be a 64-bit integer (a number or a decimal string)");
            }
            if (v.compareTo(S64_MIN) < 0 || v.compareTo(U64_MAX) > 0) {
                throw problem(400, "block_keys[" + i + "]: out of the signed/unsigned 64-bit range");
            }
            out[i] = v.longValue(); // the 64-bit pattern: unsigned values >= 2^63 wrap to the same key
        }
        return out;
    }

    @GET
    @Path("/instances")
    @Operation(summary = "Instances with engine pods (event-fed or KVCM reporters) and their pod counts")
    public List<InstanceView> instances() {
        TreeSet<String> ids = new TreeSet<>(caches.view().instances());
        ids.addAll(ingest.states().instances().keySet());
        List<InstanceView> out = new ArrayList<>();
        for (String id : ids) {
            List<EngineView.PodSummary> pods = caches.view().pods(id);
            int visible = (int) pods.stream().filter(EngineView.PodSummary::visible).count();
            int uncertain = (int) ingest.states().ofInstance(id).values().stream()
                    .filter(p -> p.state() == PodStates.State.UNCERTAIN).count();
            out.add(new InstanceView(id, runtime.registry().instance(id) != null, pods.size(), visible, uncertain));
        }
        return out;
    }

    @GET
    @Path("/instances/{id}/cache")
    @Operation(summary = "What each pod's cache holds per tier, its ingest state, and the router hit rates")
    public CacheView cache(@PathParam("id") String id, @HeaderParam("Authorization") String authorization) {
        String p = Identifiers.problem(Identifiers.Kind.INSTANCE, id);
        if (p != null) {
            throw problem(400, "instance id: " + p);
        }
        Instance inst = authorize(authorization, id);
        if (!known(id, inst)) {
            throw problem(404, "instance '" + id + "' has no engine pods and is not registered");
        }
        Map<String, PodStates.Pod> fed = ingest.states().ofInstance(id);
        Map<String, PodView> pods = new TreeMap<>();
        for (EngineView.PodSummary s : caches.view().pods(id)) {
            PodStates.Pod st = fed.get(s.pod());
            pods.put(s.pod(), podView(s.pod(), st, s.visible(), s.keysPerTier()));
        }
        fed.forEach((pod, st) -> pods.computeIfAbsent(pod, k -> podView(k, st, true, Map.of())));
        RouterStats.Snapshot r = routerStats.stats().snapshot(id);
        List<MinuteView> series = r.series().stream().map(m -> new MinuteView(m.minute().toString(), m.queries(),
                m.routedHitRate(), m.randomHitRate(), m.poolHitRate())).toList();
        return new CacheView(id, List.copyOf(pods.values()), new PoolKeys(inst == null ? 0 : inst.index.keyCount()),
                new RouterView(r.queries(), r.promptBlocks(), r.routedHitBlocks(), r.routedHitRate(),
                        r.randomHitRate(), r.poolHitRate(), series));
    }

    private static PodView podView(String pod, PodStates.Pod st, boolean visible, Map<String, Long> tiers) {
        if (st == null) { // a pod of the view that no event source created: a KVCM ReportEvent reporter
            return new PodView(pod, "kvcm", visible, "live", new TreeMap<>(tiers), null, null);
        }
        return new PodView(pod, st.source, visible, st.state().label, new TreeMap<>(tiers),
                st.lastEventAt() == null ? null : st.lastEventAt().toString(),
                st.lastSeq() < 0 ? null : st.lastSeq());
    }
}
