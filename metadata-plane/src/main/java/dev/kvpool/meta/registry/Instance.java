package dev.kvpool.meta.registry;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.hash.ExtraKeyInputs;
import dev.kvpool.api.hash.HashScheme;
import dev.kvpool.api.hash.KvcmHash;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpecGroup;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.slots.Slots;
import dev.kvpool.meta.storage.Storage;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A registered instance: its fixed KV config (block size, specs, spec groups, hashing scheme), its index and the
 * slot allocators of the storages it writes to. Cache is shared only inside one instance.
 */
public final class Instance {
    private static final ObjectMapper JSON = new ObjectMapper();

    public final InstanceInfo info;
    public final String id;
    public final String group;
    public final int blockSize;
    public final String[] specNames;
    public final long[] specSizes;
    /** Σ spec sizes: what one key costs in the group total, even when spec groups store fewer specs. */
    public final long bytesPerKey;
    /** Spec indices per spec group number (0 = all specs, g+1 = location_spec_groups[g] sorted by name). */
    public final int[][] specGroups;
    private final Map<String, Integer> specGroupByName = new HashMap<>();
    public final HashScheme hashScheme;
    public final String hashSeed;
    public final InstanceIndex index;
    private final Map<Integer, Slots> allocators = new ConcurrentHashMap<>();
    /** "scheme://host" + base path + "instance/spec/" per (storage number, spec), built once. */
    private final Map<Integer, String[]> uriPrefixes = new ConcurrentHashMap<>();

    public Instance(InstanceInfo info, InstanceIndex index) {
        this.info = info;
        this.id = info.getInstanceId();
        this.group = info.getInstanceGroupName();
        this.blockSize = info.getBlockSize();
        int n = info.getLocationSpecInfosCount();
        specNames = new String[n];
        specSizes = new long[n];
        long sum = 0;
        Map<String, Integer> specIndex = new HashMap<>();
        for (int i = 0; i < n; i++) {
            specNames[i] = info.getLocationSpecInfos(i).getName();
            specSizes[i] = info.getLocationSpecInfos(i).getSize();
            if (specSizes[i] < 0 || specSizes[i] > dev.kvpool.api.limits.Limits.MAX_SPEC_BYTES) {
                // registration refuses these; a record from before the limits must not reach the usage sums
                throw new IllegalArgumentException("instance " + id + ": spec " + specNames[i] + " has size "
                        + specSizes[i] + ", beyond the limit " + dev.kvpool.api.limits.Limits.MAX_SPEC_BYTES);
            }
            specIndex.put(specNames[i], i);
            sum = Math.addExact(sum, specSizes[i]);
        }
        bytesPerKey = sum;
        List<LocationSpecGroup> groups = info.getLocationSpecGroupsList();
        specGroups = new int[groups.size() + 1][];
        int[] all = new int[n];
        for (int i = 0; i < n; i++) {
            all[i] = i;
        }
        specGroups[0] = all;
        for (int g = 0; g < groups.size(); g++) {
            // registration order of the specs, whatever order the group lists them in
            specGroups[g + 1] = groups.get(g).getSpecNamesList().stream().mapToInt(specIndex::get).sorted().toArray();
            specGroupByName.put(groups.get(g).getName(), g + 1);
        }
        String[] scheme = hashingOf(info.getModelDeployment().getExtra());
        this.hashScheme = HashScheme.fromName(scheme[0]);
        this.hashSeed = scheme[1];
        this.index = index;
    }

    /**
     * KVPool extension: {@code model_deployment.extra} may be a JSON object with {@code hash_scheme}
     * ("kvcm" | "vllm-sha256-cbor" | "vllm-xxhash-cbor") and {@code hash_seed} (vLLM's PYTHONHASHSEED, a string;
     * "" is a seed). It is part of the identity, so an instance can never change scheme. Anything else in extra is
     * opaque. Returns {scheme, seed}; the seed is null when absent: a vLLM engine without PYTHONHASHSEED has a random
     * root hash, so such an instance can use block keys but not token ids.
     *
     * @throws IllegalArgumentException for an unknown scheme or a seed that is not a string
     */
    public static String[] hashingOf(String extra) {
        if (extra == null || extra.isBlank() || !extra.trim().startsWith("{")) {
            return new String[] {"kvcm", null};
        }
        JsonNode n;
        try {
            n = JSON.readTree(extra);
        } catch (java.io.IOException e) {
            return new String[] {"kvcm", null};
        }
        String scheme = n.path("hash_scheme").asText("kvcm");
        HashScheme.fromName(scheme); // validates
        JsonNode seed = n.get("hash_seed");
        if (seed == null || seed.isNull()) {
            return new String[] {scheme, null};
        }
        if (!seed.isTextual() && !seed.isIntegralNumber()) {
            throw new IllegalArgumentException("hash_seed must be a string (the engine's PYTHONHASHSEED, e.g. \"0\"), "
                    + "got " + seed.getNodeType().toString().toLowerCase(java.util.Locale.ROOT));
        }
        String text = seed.asText();
        if (text.length() > MAX_SEED_CHARS) {
            throw new IllegalArgumentException("hash_seed: at most " + MAX_SEED_CHARS + " characters, got "
                    + text.length());
        }
        return new String[] {scheme, text};
    }

    /** PYTHONHASHSEED is a decimal up to 4294967295 or "random"; this leaves room without taking essays. */
    static final int MAX_SEED_CHARS = 256;

    public int specGroupNumber(String name) {
        Integer g = specGroupByName.get(name);
        return g == null ? -1 : g;
    }

    /** Block keys of a token prefix under this instance's scheme; a trailing partial block is dropped. */
    public long[] keysOf(long[] tokens) {
        return keysOf(tokens, null);
    }

    /**
     * Block keys of a token prefix with vLLM's extra keys (LoRA name, cache salt, multimodal items; null: none).
     *
     * @throws MetaException INVALID naming why: extras on a kvcm instance, a vLLM instance without a seed
     */
    public long[] keysOf(long[] tokens, ExtraKeyInputs extras) {
        if (hashScheme == HashScheme.KVCM && extras == null) {
            return KvcmHash.keys(tokens, blockSize);
        }
        try {
            return hashScheme.keys(tokens, blockSize, hashSeed, extras);
        } catch (IllegalArgumentException e) {
            throw MetaException.invalid("instance '" + id + "' (hash scheme " + hashScheme.schemeName() + "): "
                    + e.getMessage());
        }
    }

    /** Bytes that a location of this spec group occupies on its storage. */
    public long bytesOf(int specGroup) {
        long s = 0;
        for (int i : specGroups[specGroup]) {
            s += specSizes[i];
        }
        return s;
    }

    /** Makes the slot allocation of one (instance, storage): in-process, or shared through the store. */
    public interface SlotsFactory {
        Slots create(String instanceId, Storage st);

        SlotsFactory LOCAL = (id, st) -> new SlotAllocator(st.keyCountPerFile);
    }

    private volatile SlotsFactory slotsFactory = SlotsFactory.LOCAL;

    /**
     * Share of the keys of recent write starts that were already cached, a moving average the write path keeps to
     * decide whether looking keys up before a start pays (updates may race: it is only a cost estimate).
     */
    private volatile double startExistingShare;

    public double startExistingShare() {
        return startExistingShare;
    }

    public void recordStart(int keys, int existing) {
        if (keys > 0) {
            startExistingShare += 0.25 * ((double) existing / keys - startExistingShare);
        }
    }

    public void slotsFactory(SlotsFactory f) {
        this.slotsFactory = f;
    }

    public Slots allocator(Storage st) {
        return allocators.computeIfAbsent(st.number, k -> slotsFactory.create(id, st));
    }

    public Slots allocatorIfAny(int storageNumber) {
        return allocators.get(storageNumber);
    }

    public Map<Integer, Slots> allocators() {
        return allocators;
    }

    /** Forgets every slot (TS_REMOVE_ALL_META): shared allocators are emptied too. */
    public void resetSlots() {
        for (Slots s : allocators.values()) {
            s.rebuild(new long[0]);
        }
        allocators.clear();
    }

    String[] uriPrefixes(Storage st) {
        return uriPrefixes.computeIfAbsent(st.number, k -> {
            String[] p = new String[specNames.length];
            for (int i = 0; i < p.length; i++) {
                p[i] = switch (st.kind) {
                    case MOONCAKE -> "mooncake://" + st.name + "/?key=" + id + "/" + specNames[i] + "/";
                    case FILE -> "file://" + st.name + st.basePath + id + "/" + specNames[i] + "/";
                    default -> st.kind.scheme + "://" + st.name + st.basePath + "/" + id + "/" + specNames[i] + "/";
                };
            }
            return p;
        });
    }
}
