package dev.kvpool.agent.api;

import dev.kvpool.agent.io.gds.AutoGpuFileIo;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.store.BlockStore;
import dev.kvpool.agent.store.GpuPromoter;
import dev.kvpool.agent.tier.Tier;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;
import jakarta.ws.rs.ext.Provider;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The engine-facing control API (port 6390). Block bytes never travel in JSON: they sit in the shared segment
 * ({@link SharedMemory}) and requests carry offsets into it. Every request is checked before it reaches the store:
 * a body is present, names at most {@link #MAX_KEYS_PER_CALL} keys, gives one offset per key where offsets are taken
 * and each offset is a block-sized, 4 KiB-aligned range inside the segment, and carries no field the route does not
 * take; anything else is a 400 naming the field. (Bodies are bounded before they are read: api's HttpGuard.)
 */
@Path("/v1")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
public class AgentResource {
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(AgentResource.class);
    @Inject
    AgentService agent;

    /**
     * The most block keys one call may name: 65,536, above a 1 M-token prompt in 16-token blocks (62,500). Below the
     * platform-wide {@link dev.kvpool.api.limits.Limits#MAX_KEYS_PER_CALL} because a call's body must fit the agent's
     * 4 MiB body bound (65,536 keys and offsets take at most ~2.2 MB of JSON) and its answer is built in memory.
     */
    public static final int MAX_KEYS_PER_CALL = 1 << 16;

    /** save / load / query / remove bodies. */
    public record BlocksRequest(long[] keys, long[] offsets, Long parent, Boolean global, Boolean layerwise) {
    }

    /** The media type of a layer-wise load's answer: one JSON object per line, each flushed as it happens. */
    public static final String NDJSON = "application/x-ndjson";
    private static final com.fasterxml.jackson.databind.ObjectMapper LINES = new com.fasterxml.jackson.databind.ObjectMapper();

    public record SaveResponse(boolean[] stored, int count, String tier) {
    }

    public record LoadResponse(boolean[] found, long[] offsets, String[] tiers, int hits) {
    }

    public record QueryEntry(long key, List<String> tiers) {
    }

    public record QueryResponse(List<QueryEntry> blocks) {
    }

    public record RemoveResponse(boolean[] removed) {
    }

    @POST
    @Path("/save")
    public SaveResponse save(BlocksRequest r) {
        long[] keys = keys(r, "save");
        refuse(r.global(), "global", "save");
        refuse(r.layerwise(), "layerwise", "save");
        if (r.offsets() == null || r.offsets().length != keys.length) {
            throw new BadRequestException("offsets: save needs one shared-memory offset per key (" + keys.length
                    + " keys, " + (r.offsets() == null ? "no offsets" : r.offsets().length + " offsets") + ")");
        }
        BlockStore s = agent.store();
        MemorySegment[] src = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            src[i] = slice(r.offsets()[i], s.blockBytes(), "offsets[" + i + "]");
        }
        boolean[] ok = s.save(keys, src, r.parent());
        int n = 0;
        for (boolean b : ok) {
            n += b ? 1 : 0;
        }
        return new SaveResponse(ok, n, s.host().name());
    }

    /**
     * Loads blocks into the shared segment. With {@code "layerwise": true} the answer streams (NDJSON): a line
     * {@code {"layer":i,"missing":[...]}} once layer i of every block not listed is in place and verified, in layer
     * order, then {@code {"done":true, ...}} with the fields of a normal load's answer. Checked the same way either
     * way, before anything is streamed.
     */
    @POST
    @Path("/load")
    @Produces({MediaType.APPLICATION_JSON, NDJSON})
    public Response load(BlocksRequest r) {
        long[] keys = keys(r, "load");
        refuse(r.parent(), "parent", "load");
        refuse(r.global(), "global", "load");
        BlockStore s = agent.store();
        long[] offsets = r.offsets();
        if (offsets == null) {
            try {
                offsets = agent.shm().ringOffsets(keys.length, s.blockBytes());
            } catch (IllegalArgumentException e) {
                throw new BadRequestException("load: " + e.getMessage());
            }
        } else if (offsets.length != keys.length) {
            throw new BadRequestException("offsets: load has " + offsets.length + " offsets for " + keys.length
                    + " keys (give one per key, or none for offsets in the agent's half)");
        }
        MemorySegment[] dst = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            dst[i] = slice(offsets[i], s.blockBytes(), "offsets[" + i + "]");
        }
        if (Boolean.TRUE.equals(r.layerwise())) {
            long[] offs = offsets;
            return Response.ok((jakarta.ws.rs.core.StreamingOutput) out -> streamLayers(s, keys, dst, offs, out),
                    NDJSON).build();
        }
        BlockStore.LoadResult res = s.load(keys, dst);
        return Response.ok(new LoadResponse(res.found(), offsets, res.tier(), res.hits()), MediaType.APPLICATION_JSON)
                .build();
    }

    /** The lines of a layer-wise load; a client gone midway ends them (the load itself still completes). */
    private static void streamLayers(BlockStore s, long[] keys, MemorySegment[] dst, long[] offsets,
                                     java.io.OutputStream out) throws java.io.IOException {
        Map<String, Object> last = new LinkedHashMap<>();
        try {
            BlockStore.LoadResult res = s.loadLayerwise(keys, dst, (layer, missing) -> {
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("layer", layer);
                line.put("missing", missing);
                writeLine(out, line);
            });
            last.put("done", true);
            last.put("found", res.found());
            last.put("offsets", offsets);
            last.put("tiers", res.tier());
            last.put("hits", res.hits());
        } catch (java.io.UncheckedIOException e) {
            LOG.debugf("layer-wise load: the client went away: %s", e.getMessage());
            return;
        } catch (RuntimeException e) {
            LOG.error("layer-wise load failed", e);
            last.put("done", true);
            last.put("error", e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
            last.put("found", new boolean[keys.length]);
            last.put("offsets", offsets);
            last.put("tiers", new String[keys.length]);
            last.put("hits", 0);
        }
        try {
            writeLine(out, last);
        } catch (java.io.UncheckedIOException e) {
            LOG.debugf("layer-wise load: the client went away before the last line: %s", e.getMessage());
        }
    }

    private static void writeLine(java.io.OutputStream out, Map<String, Object> line) {
        try {
            byte[] b = LINES.writeValueAsBytes(line);
            out.write(b);
            out.write('\n');
            out.flush(); // a line is a promise the engine acts on: out now, not when a buffer fills
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @POST
    @Path("/query")
    public QueryResponse query(BlocksRequest r) {
        long[] keys = keys(r, "query");
        refuse(r.offsets(), "offsets", "query");
        refuse(r.parent(), "parent", "query");
        refuse(r.global(), "global", "query");
        refuse(r.layerwise(), "layerwise", "query");
        List<List<String>> where = agent.store().query(keys);
        List<QueryEntry> out = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            out.add(new QueryEntry(keys[i], where.get(i)));
        }
        return new QueryResponse(out);
    }

    @POST
    @Path("/remove")
    public RemoveResponse remove(BlocksRequest r) {
        long[] keys = keys(r, "remove");
        refuse(r.offsets(), "offsets", "remove");
        refuse(r.parent(), "parent", "remove");
        refuse(r.layerwise(), "layerwise", "remove");
        return new RemoveResponse(agent.store().remove(keys, Boolean.TRUE.equals(r.global())));
    }

    @GET
    @Path("/status")
    public Map<String, Object> status() {
        BlockStore s = agent.store();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("agent", agent.agentId());
        m.put("block_bytes", s.blockBytes());
        m.put("layout", s.host().layout().name());
        m.put("layers", s.layers());
        m.put("layer_bytes", s.blockBytes() / s.layers());
        m.put("shm", Map.of("path", agent.shm().path().toString(), "bytes", agent.shm().size(),
                "engine_area", List.of(0, agent.shm().size() / 2)));
        m.put("nvme_io", agent.built().ioEngine());
        m.put("gpu", agent.built().gpu());
        m.put("gds", gds(s));
        List<Map<String, Object>> tiers = new ArrayList<>();
        for (Tier t : s.tiers()) {
            Map<String, Object> tm = new LinkedHashMap<>();
            tm.put("name", t.name());
            tm.put("medium", t.medium());
            tm.put("blocks", t.size());
            if (t instanceof PooledTier p) {
                List<Map<String, Object>> devs = new ArrayList<>();
                double[] bw = p.bandwidth();
                long[] per = p.blocksPerDevice();
                for (int i = 0; i < p.devices().size(); i++) {
                    DeviceWorker w = p.workers().get(i);
                    Map<String, Object> dm = new LinkedHashMap<>(Map.of("id", p.devices().get(i).id(),
                            "bandwidth_mbps", Math.round(bw[i] / 1e6), "blocks", per[i], "read_bytes", w.readBytes(),
                            "write_bytes", w.writeBytes(), "deferred_writes", w.pendingDeferredOps(),
                            "failed", p.failed(i)));
                    Integer kept = p.keptAtStart().get(p.devices().get(i).id());
                    if (kept != null) { // keeps its blocks across restarts: how many it found at start-up
                        dm.put("kept_at_start", kept);
                    }
                    devs.add(dm);
                }
                tm.put("devices", devs);
                tm.put("checksum_failures", p.checksumFailures());
                tm.put("io_failures", p.ioFailures());
            }
            tiers.add(tm);
        }
        m.put("tiers", tiers);
        m.put("saved_blocks", s.savedBlocks());
        m.put("load_hits", s.loadHits());
        m.put("load_misses", s.loadMisses());
        m.put("kept_announced", s.keptAnnounced().isDone()); // the stored events of the blocks kept across a restart are out
        if (s.pool() != null) { // global-pool copies owed while the metadata plane was out of reach
            m.put("pool_backlog", Map.of("blocks", s.poolBacklog(), "written", s.poolBacklogWritten(),
                    "dropped", s.poolBacklogDropped(), "gone", s.poolBacklogGone(),
                    "kept_from_last_run", s.poolBacklogKeptFromLastRun()));
            m.put("pool", Map.of("checksum_failures", s.pool().checksumFailures(),
                    "write_failures", s.pool().writeFailures(), "late_skips", s.pool().lateSkips(),
                    "late_retries", s.poolLateRetries()));
        }
        if (agent.publisher() != null) {
            m.put("events", Map.of("next_seq", agent.publisher().nextSeq(), "sent_batches", agent.publisher().sentBatches(),
                    "spooled", agent.publisher().spooled(), "dropped_batches", agent.publisher().droppedBatches(),
                    "kept_from_last_run", agent.publisher().keptFromLastRun(),
                    "spooled_bytes", agent.publisher().spooledBytes()));
        }
        return m;
    }

    /**
     * The GPU tier's path to the NVMe slot files: mode gds (cuFile with nvidia-fs), compat (cuFile's own POSIX
     * path), bounce (O_DIRECT into pinned host memory + a copy) or none (no GPU tier or no NVMe tier); why; cuFile's
     * version; whether a transfer went through in full yet; bytes through cuFile; fallbacks. One entry per GPU in
     * {@code devices} where there are several (the top level is the first's).
     */
    static Map<String, Object> gds(BlockStore s) {
        Map<String, Object> g = new LinkedHashMap<>();
        GpuPromoter p = s.gpuPromoter();
        if (p == null || p.paths().isEmpty()) {
            g.put("mode", "none");
            g.put("reason", s.gpuPathNote());
            return g;
        }
        List<Map<String, Object>> devs = new ArrayList<>();
        for (AutoGpuFileIo io : p.paths()) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("device", io.gpu().id());
            d.put("mode", io.mode());
            d.put("reason", io.reason());
            d.put("version", io.version());
            d.put("verified", io.verified());
            d.put("read_bytes", io.gdsBytes(true));
            d.put("write_bytes", io.gdsBytes(false));
            d.put("fallbacks", io.fallbacks());
            devs.add(d);
        }
        g.putAll(devs.get(0));
        g.remove("device");
        g.put("promoted_blocks", p.promoted());
        g.put("promote_failures", p.failed());
        g.put("promote_skipped", p.skipped());
        if (devs.size() > 1) {
            g.put("devices", devs);
        }
        return g;
    }

    private static long[] keys(BlocksRequest r, String route) {
        if (r == null || r.keys() == null || r.keys().length == 0) {
            throw new BadRequestException("keys: " + route + " needs a body with 'keys', a non-empty array of int64"
                    + " block keys");
        }
        if (r.keys().length > MAX_KEYS_PER_CALL) {
            throw new BadRequestException("keys: at most " + MAX_KEYS_PER_CALL + " keys per call, got "
                    + r.keys().length);
        }
        return r.keys();
    }

    /** A field this route does not take is refused rather than ignored: the caller meant something by it. */
    private static void refuse(Object value, String field, String route) {
        if (value != null) {
            throw new BadRequestException(field + ": not taken by " + route);
        }
    }

    private MemorySegment slice(long offset, int len, String what) {
        try {
            return agent.shm().slice(offset, len);
        } catch (IllegalArgumentException e) {
            throw new BadRequestException(what + ": " + e.getMessage());
        }
    }

    /** 400 with a JSON message for bad input. */
    @Provider
    public static class BadRequestMapper implements ExceptionMapper<BadRequestException> {
        @Override
        public Response toResponse(BadRequestException e) {
            return BodyErrorMappers.error(400, e.getMessage());
        }
    }
}
