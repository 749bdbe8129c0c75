package dev.kvpool.api.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The engine-side client of the KVPool data agent: control over HTTP ({@code /v1/save}, {@code /v1/load},
 * {@code /v1/query}), block bytes through the shared-memory segment the agent created in /dev/shm (mapped here
 * too), so payloads never travel through JSON. The lower half of the segment is the engine's: put blocks there
 * and pass their offsets; loads land at offsets the engine chooses, or in the agent's half when it passes none.
 * Thread-safe.
 */
public final class AgentClient implements AutoCloseable {
    private static final ObjectMapper M = new ObjectMapper();
    private final HttpClient http;
    private final URI base;
    private final Duration timeout;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment shm;
    private final int blockBytes;
    private final Path shmPath;
    /** The mapped file's identity (device, inode): a new agent's segment at the same path is another file. */
    private final Object shmKey;

    /** Connects to an agent, reads its status and maps its shared segment. */
    public AgentClient(URI base, Duration timeout) {
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
        this.base = base;
        this.timeout = timeout;
        JsonNode st = get("/v1/status");
        this.blockBytes = st.path("block_bytes").asInt();
        Path path = Path.of(st.path("shm").path("path").asText());
        this.shmPath = path;
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            this.shm = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), arena);
            this.shmKey = fileKey(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map the agent's shared segment " + path, e);
        }
    }

    /** Bytes per block the agent stores. */
    public int blockBytes() {
        return blockBytes;
    }

    /** The whole shared segment; the engine owns [0, size/2). */
    public MemorySegment sharedMemory() {
        return shm;
    }

    /** The block at an offset of the shared segment. */
    public MemorySegment block(long offset) {
        return shm.asSlice(offset, blockBytes);
    }

    /** Result of a load: per key whether found, where its bytes are and which tier had it. */
    public record Loaded(boolean[] found, long[] offsets, String[] tiers) {
    }

    /** Saves blocks already placed in the shared segment; per key whether it is safe in the agent's first tier. */
    public boolean[] save(long[] keys, long[] offsets) {
        return save(keys, offsets, null);
    }

    public boolean[] save(long[] keys, long[] offsets, Long parent) {
        checkSegment();
        ObjectNode b = body(keys);
        b.putPOJO("offsets", offsets);
        if (parent != null) {
            b.put("parent", parent);
        }
        return bools(post("/v1/save", b).path("stored"));
    }

    /** Loads blocks to the given offsets (or, with null, to offsets the agent picks in its half). */
    public Loaded load(long[] keys, long[] offsets) {
        checkSegment();
        ObjectNode b = body(keys);
        if (offsets != null) {
            b.putPOJO("offsets", offsets);
        }
        return loaded(post("/v1/load", b));
    }

    /**
     * Starts a layer-wise load ({@code "layerwise": true}) to the given offsets (or, with null, to offsets the agent
     * picks): returns once the agent accepted it (a refused request throws here, with the agent's message); the
     * handle's {@link LayerwiseLoad#awaitLayer} blocks until a layer is in place.
     */
    public LayerwiseLoad loadLayerwise(long[] keys, long[] offsets) {
        ObjectNode b = body(keys);
        if (offsets != null) {
            b.putPOJO("offsets", offsets);
        }
        b.put("layerwise", true);
        try {
            HttpRequest req = HttpRequest.newBuilder(base.resolve("/v1/load")).timeout(timeout)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(M.writeValueAsBytes(b))).build();
            HttpResponse<java.io.InputStream> r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
            if (r.statusCode() != 200) {
                try (java.io.InputStream in = r.body()) {
                    throw new IllegalArgumentException("/v1/load answered " + r.statusCode() + ": "
                            + new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
                }
            }
            return new LayerwiseLoad(r.body(), timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new InterruptedIOException("/v1/load interrupted"));
        } catch (IOException e) {
            throw new UncheckedIOException(base.resolve("/v1/load") + " failed: "
                    + dev.kvpool.api.client.KvcmHttpClient.describe(e), e);
        }
    }

    /**
     * A layer-wise load in progress: the agent's lines are read as they come (on a thread of its own), and
     * {@link #awaitLayer} returns as soon as the agent said that layer is in place. No polling: the agent writes a
     * line when the layer is there.
     */
    public static final class LayerwiseLoad implements AutoCloseable {
        private final java.io.InputStream body;
        private final Duration timeout;
        private final List<int[]> layers = new ArrayList<>();
        private Loaded result;
        private String failure;

        LayerwiseLoad(java.io.InputStream body, Duration timeout) {
            this.body = body;
            this.timeout = timeout;
            Thread.ofVirtual().name("kvpool-layerwise").start(this::read);
        }

        private void read() {
            String end = "the agent closed the stream before the last line";
            try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(body,
                    java.nio.charset.StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    JsonNode n = M.readTree(line);
                    if (n.path("done").asBoolean(false)) {
                        if (n.has("error")) {
                            end = "the layer-wise load failed: " + n.path("error").asText();
                        } else {
                            synchronized (this) {
                                result = loaded(n);
                                notifyAll();
                            }
                            return;
                        }
                        break;
                    }
                    JsonNode m = n.path("missing");
                    int[] missing = new int[m.size()];
                    for (int i = 0; i < missing.length; i++) {
                        missing[i] = m.get(i).asInt();
                    }
                    synchronized (this) {
                        if (n.path("layer").asInt(-1) != layers.size()) {
                            end = "the agent sent layer " + n.path("layer") + " where " + layers.size() + " was due";
                            break;
                        }
                        layers.add(missing);
                        notifyAll();
                    }
                }
            } catch (IOException | RuntimeException e) {
                end = "reading the layer-wise load's answer failed: " + e;
            }
            synchronized (this) {
                failure = end;
                notifyAll();
            }
        }

        /**
         * Waits until layer {@code layer} of every block not listed is in its buffer, verified; returns the indexes
         * (into the load's keys) of the blocks that are not (cumulative: a block that failed at layer k is listed
         * from k on). Throws when the load failed before that layer, or no line came for the client's timeout.
         */
        public synchronized int[] awaitLayer(int layer) throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            while (layers.size() <= layer && failure == null && result == null) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("layer " + layer + ": no word from the agent for " + timeout);
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            if (layers.size() > layer) {
                return layers.get(layer).clone();
            }
            throw new IllegalStateException(failure != null ? failure
                    : "layer " + layer + ": the load has " + layers.size() + " layers");
        }

        /** Layers announced so far. */
        public synchronized int layersDone() {
            return layers.size();
        }

        /** Waits for the last line: the load's outcome, as {@link AgentClient#load} returns it. */
        public synchronized Loaded result() throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            while (result == null && failure == null) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("no word from the agent for " + timeout);
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            if (result == null) {
                throw new IllegalStateException(failure);
            }
            return result;
        }

        /** Stops reading (the agent finishes the load regardless). */
        @Override
        public void close() {
            try {
                body.close();
            } catch (IOException ignored) {
                // nothing to save: the stream is given up
            }
        }
    }

    private static Loaded loaded(JsonNode r) {
        JsonNode o = r.path("offsets");
        long[] offs = new long[o.size()];
        for (int i = 0; i < offs.length; i++) {
            offs[i] = o.get(i).asLong();
        }
        JsonNode t = r.path("tiers");
        String[] tiers = new String[t.size()];
        for (int i = 0; i < tiers.length; i++) {
            tiers[i] = t.get(i).isNull() ? null : t.get(i).asText();
        }
        return new Loaded(bools(r.path("found")), offs, tiers);
    }

    /** Per key the tiers holding it (gpu, host, nvme, pool); empty when none. */
    public List<List<String>> query(long[] keys) {
        List<List<String>> out = new ArrayList<>();
        for (JsonNode e : post("/v1/query", body(keys)).path("blocks")) {
            List<String> l = new ArrayList<>();
            e.path("tiers").forEach(x -> l.add(x.asText()));
            out.add(l);
        }
        return out;
    }

    public boolean[] remove(long[] keys, boolean global) {
        ObjectNode b = body(keys);
        b.put("global", global);
        return bools(post("/v1/remove", b).path("removed"));
    }

    /**
     * An agent that stopped cleanly removed its segment file; one started since created a new one at the same path.
     * The pages mapped here are then no longer the agent's: a save would store the new file's bytes under the
     * engine's keys, a load would land where the engine does not look. One stat per save or load, next to an HTTP
     * round trip, says so before the request goes out.
     */
    private void checkSegment() {
        Object now;
        try {
            now = fileKey(shmPath);
        } catch (IOException e) {
            now = null;
        }
        if (now == null || !now.equals(shmKey)) {
            throw new IllegalStateException("the agent's shared segment " + shmPath + " was "
                    + (now == null ? "removed" : "replaced") + " since this client mapped it (the agent stopped or"
                    + " restarted): create a new AgentClient");
        }
    }

    private static Object fileKey(Path p) throws IOException {
        return java.nio.file.Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
    }

    public JsonNode status() {
        return get("/v1/status");
    }

    private static ObjectNode body(long[] keys) {
        ObjectNode b = M.createObjectNode();
        b.putPOJO("keys", keys);
        return b;
    }

    private static boolean[] bools(JsonNode a) {
        boolean[] out = new boolean[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asBoolean();
        }
        return out;
    }

    private JsonNode post(String route, ObjectNode body) {
        try {
            return send(HttpRequest.newBuilder(base.resolve(route)).timeout(timeout)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(M.writeValueAsBytes(body))).build(), route);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private JsonNode get(String route) {
        return send(HttpRequest.newBuilder(base.resolve(route)).timeout(timeout).GET().build(), route);
    }

    private JsonNode send(HttpRequest req, String route) {
        try {
            HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                throw new IllegalArgumentException(route + " answered " + r.statusCode() + ": "
                        + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
            }
            return M.readTree(r.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new InterruptedIOException(route + " interrupted"));
        } catch (IOException e) {
            throw new UncheckedIOException(base.resolve(route) + " failed: " + dev.kvpool.api.client.KvcmHttpClient.describe(e), e);
        }
    }

    @Override
    public void close() {
        arena.close();
    }
}
