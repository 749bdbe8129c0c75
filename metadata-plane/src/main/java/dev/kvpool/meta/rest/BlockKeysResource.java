package dev.kvpool.meta.rest;

import dev.kvpool.api.hash.ExtraKeyInputs;
import dev.kvpool.api.hash.ExtraKeys;
import dev.kvpool.api.hash.KvcmHash;
import dev.kvpool.api.hash.MmItem;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** KVPool's own REST on the meta HTTP port: what is registered, and why a prompt misses. */
@Path("/api/v1/instances")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "instances", description = "Registered instances and their block keys")
public class BlockKeysResource {

    @Inject
    MetaRuntime runtime;

    public record InstanceSummary(String instance_id, String instance_group, int block_size, String hash_scheme,
                                  List<String> specs, long bytes_per_block, long keys, int open_write_sessions,
                                  long file_slots) {
    }

    /**
     * Token ids and, for the vLLM schemes, the request-level inputs of vLLM's extra keys (shared/spec/hashing.md
     * §3.4): the LoRA adapter's name, the cache salt (first block only) and the multimodal items in position order.
     */
    public record BlockKeysRequest(List<Long> token_ids, String lora_name, String cache_salt,
                                   List<MmItemBody> mm_items) {
    }

    /** A multimodal item: vLLM's content identifier and its placeholder tokens [offset, offset + length). */
    public record MmItemBody(String identifier, Long offset, Long length) {
    }

    public record KeyState(int block, String key, String hex, String status, boolean cached) {
    }

    public record BlockKeysResponse(String instance_id, String hash_scheme, int block_size, int tokens,
                                    int tokens_not_in_a_full_block, int prefix_hit_blocks, List<KeyState> blocks) {
    }

    public static WebApplicationException problem(int status, String detail) {
        return new WebApplicationException(detail, Response.status(status).type("application/problem+json")
                .entity(new Problem("about:blank", Response.Status.fromStatusCode(status).getReasonPhrase(), status, detail))
                .build());
    }

    public record Problem(String type, String title, int status, String detail) {
    }

    private Instance instance(String id) {
        Instance inst = runtime.registry().instance(id);
        if (inst == null) {
            throw problem(404, "instance '" + id + "' is not registered");
        }
        return inst;
    }

    private InstanceSummary summary(Instance i) {
        long slots = runtime.registry().storages().stream().filter(st -> st.usesFiles())
                .mapToLong(st -> i.allocator(st).usedSlots()).sum();
        return new InstanceSummary(i.id, i.group, i.blockSize, i.hashScheme.schemeName(), List.of(i.specNames),
                i.bytesPerKey, i.index.keyCount(), i.index.sessionCount(), slots);
    }

    @GET
    @Operation(summary = "List registered instances with their key counts")
    public List<InstanceSummary> list() {
        return runtime.registry().instances().stream().map(this::summary)
                .sorted(java.util.Comparator.comparing(InstanceSummary::instance_id)).toList();
    }

    @GET
    @Path("/{id}")
    @Operation(summary = "One registered instance")
    public InstanceSummary get(@PathParam("id") String id) {
        return summary(instance(id));
    }

    @POST
    @Path("/{id}/block-keys")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Block keys of a token sequence and which of them are cached",
            description = "Hashes token_ids with the instance's scheme and block size (a trailing partial block is "
                    + "not keyed; vllm-* schemes take vLLM's extra keys from lora_name, cache_salt and mm_items) and "
                    + "reports, per block, its key (signed decimal and the unsigned hex used in storage paths), its "
                    + "location status, and whether a reader would get it.")
    public BlockKeysResponse blockKeys(@PathParam("id") String id, BlockKeysRequest req) {
        Instance inst = instance(id);
        if (req == null || req.token_ids() == null || req.token_ids().isEmpty()) {
            throw problem(400, "token_ids is required and must not be empty");
        }
        if (inst.blockSize <= 0) {
            throw problem(400, "instance '" + id + "' registered block_size " + inst.blockSize
                    + ", so token ids cannot be keyed");
        }
        if (req.token_ids().size() > Limits.MAX_TOKENS_PER_CALL) {
            throw problem(400, "token_ids: at most " + Limits.MAX_TOKENS_PER_CALL + " tokens per call, got "
                    + req.token_ids().size());
        }
        if (req.token_ids().size() / inst.blockSize > Limits.MAX_KEYS_PER_CALL) {
            throw problem(400, "token_ids: " + req.token_ids().size() + " tokens make more than "
                    + Limits.MAX_KEYS_PER_CALL + " blocks of " + inst.blockSize);
        }
        long[] tokens = new long[req.token_ids().size()];
        for (int i = 0; i < tokens.length; i++) {
            Long t = req.token_ids().get(i);
            if (t == null) {
                throw problem(400, "token_ids[" + i + "] is null");
            }
            tokens[i] = t;
        }
        ExtraKeyInputs extras = extras(req);
        long[] keys;
        try {
            keys = inst.keysOf(tokens, extras);
        } catch (MetaException e) {
            throw problem(400, e.getMessage());
        }
        Block[] blocks = lookup(inst, keys);
        List<KeyState> out = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            Block b = blocks[i];
            String status = b == null ? "CLS_NOT_FOUND" : Loc.statusName(Loc.status(b.a(0)));
            out.add(new KeyState(i, Long.toString(keys[i]), KvcmHash.hex(keys[i]), status, cached(b)));
        }
        return new BlockKeysResponse(id, inst.hashScheme.schemeName(), inst.blockSize, tokens.length,
                tokens.length % inst.blockSize, servingPrefix(blocks), out);
    }

    private static Block[] lookup(Instance inst, long[] keys) {
        Block[] blocks = new Block[keys.length];
        inst.index.getAll(keys, 0, keys.length, blocks);
        return blocks;
    }

    /** A reader gets the block: it has a SERVING location. */
    private static boolean cached(Block b) {
        return b != null && b.first(Loc.SERVING) >= 0;
    }

    private static int servingPrefix(Block[] blocks) {
        int prefix = 0;
        while (prefix < blocks.length && cached(blocks[prefix])) {
            prefix++;
        }
        return prefix;
    }

    /**
     * How many leading {@code keys} the instance's own KVPool index serves (a SERVING location): block-keys'
     * {@code prefix_hit_blocks}, and the engine scores' pool prefix.
     */
    public static int servingPrefix(Instance inst, long[] keys) {
        return servingPrefix(lookup(inst, keys));
    }

    /** The request's extra-key inputs (null when it has none), checked field by field. */
    private static ExtraKeyInputs extras(BlockKeysRequest req) {
        return extras(req.lora_name(), req.cache_salt(), req.mm_items());
    }

    /**
     * vLLM's request-level extra-key inputs (null when there are none), checked field by field; shared by block-keys
     * and the engine prefix scores.
     */
    public static ExtraKeyInputs extras(String loraName, String cacheSalt, List<MmItemBody> mmItems) {
        if (loraName == null && cacheSalt == null && mmItems == null) {
            return null;
        }
        List<MmItem> items = null;
        if (mmItems != null) {
            if (mmItems.size() > ExtraKeys.MAX_MM_ITEMS) {
                throw problem(400, "mm_items: at most " + ExtraKeys.MAX_MM_ITEMS + " items, got " + mmItems.size());
            }
            items = new ArrayList<>(mmItems.size());
            for (int i = 0; i < mmItems.size(); i++) {
                MmItemBody m = mmItems.get(i);
                String at = "mm_items[" + i + "]";
                if (m == null) {
                    throw problem(400, at + " is null");
                }
                if (m.identifier() == null || m.offset() == null || m.length() == null) {
                    throw problem(400, at + "." + (m.identifier() == null ? "identifier"
                            : m.offset() == null ? "offset" : "length") + " is required");
                }
                try {
                    items.add(new MmItem(m.identifier(), m.offset(), m.length()));
                } catch (IllegalArgumentException e) {
                    throw problem(400, at + "." + e.getMessage());
                }
            }
        }
        try {
            return new ExtraKeyInputs(loraName, cacheSalt, items);
        } catch (IllegalArgumentException e) {
            throw problem(400, e.getMessage());
        }
    }
}
