package dev.kvpool.meta.whatif;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.sim.PolicySweep;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The traces a what-if can replay: the Mooncake examples ({@code conversation}, {@code synthetic}, when the shared
 * data folder is found) and Mooncake JSONL files uploaded through the REST API, stored as
 * {@code <data dir>/whatif/traces/<name>.jsonl} (with {@code <name>.json} holding their counts). Every stored path
 * is built by {@link #file}, which proves it stays inside the traces folder. Parsed traces are cached (a couple of
 * them), so a sweep parses its trace once.
 */
public final class WhatIfTraces {
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String EXAMPLE = "example", UPLOADED = "uploaded";
    /** Parsed traces kept in memory (the most recently used). */
    private static final int CACHED = 2;

    /** One entry of {@code GET /api/v1/whatif/traces}. */
    public record Entry(String name, String kind, long requests, long blocks, long bytes) {
    }

    /** A line of an upload that is not a Mooncake request: 400 naming it. */
    public static final class BadTrace extends IllegalArgumentException {
        public final long line;

        BadTrace(long line, String message) {
            super(line > 0 ? "line " + line + ": " + message : message);
            this.line = line;
        }
    }

    /** An upload over the byte limit: 413. */
    public static final class TooLarge extends IllegalArgumentException {
        TooLarge(String message) {
            super(message);
        }
    }

    private final Path root;
    private final Map<String, Path> examples;
    private final long maxBytes;
    private final int maxRequests;
    private final long maxBlocks;
    private final Map<String, Entry> counted = new ConcurrentHashMap<>();
    /** name → parsed trace, with the stamp (size, mtime) of the file it came from; most recently used last. */
    private final LinkedHashMap<String, Parsed> parsed = new LinkedHashMap<>(4, 0.75f, true);

    private record Parsed(String stamp, PolicySweep.Trace trace) {
    }

    /**
     * @param root     the folder uploads live in (created when missing)
     * @param examples example name → file (only files that exist are listed)
     */
    public WhatIfTraces(Path root, Map<String, Path> examples, long maxBytes, int maxRequests, long maxBlocks) {
        this.root = root.toAbsolutePath().normalize();
        this.examples = examples;
        this.maxBytes = maxBytes;
        this.maxRequests = maxRequests;
        this.maxBlocks = maxBlocks;
    }

    /** The shipped Mooncake examples, where the shared data folder can be found; else none. */
    public static Map<String, Path> defaultExamples() {
        Map<String, Path> m = new LinkedHashMap<>();
        try {
            m.put("conversation", MooncakeTrace.conversation());
            m.put("synthetic", MooncakeTrace.synthetic());
        } catch (IllegalStateException e) {
            // no shared/ folder (KVPOOL_SHARED unset): no examples
        }
        return m;
    }

    /**
     * The one path function for stored traces: {@code <root>/<name><suffix>} with {@code name} a valid
     * {@link Identifiers.Kind#TRACE} name, proven after normalisation to be a direct child of the root.
     */
    static Path file(Path root, String name, String suffix) {
        Identifiers.require(Identifiers.Kind.TRACE, "name", name);
        if (!suffix.equals(".jsonl") && !suffix.equals(".json") && !suffix.startsWith(".upload-")) {
            throw new IllegalArgumentException("unknown trace file suffix " + suffix);
        }
        Path r = root.toAbsolutePath().normalize();
        Path p = r.resolve(name + suffix).normalize();
        if (!p.startsWith(r) || !r.equals(p.getParent())) {
            throw new IllegalArgumentException("trace path " + Text.safe(p.toString()) + " would leave " + r);
        }
        return p;
    }

    private Path jsonl(String name) {
        return file(root, name, ".jsonl");
    }

    /** Examples first, then uploads by name. */
    public List<Entry> list() {
        List<Entry> out = new ArrayList<>();
        for (var e : examples.entrySet()) {
            if (Files.isRegularFile(e.getValue())) {
                out.add(counts(e.getKey()));
            }
        }
        if (Files.isDirectory(root)) {
            try (var s = Files.list(root)) {
                s.map(p -> p.getFileName().toString()).filter(f -> f.endsWith(".jsonl")).sorted()
                        .map(f -> f.substring(0, f.length() - ".jsonl".length()))
                        .filter(n -> Identifiers.valid(Identifiers.Kind.TRACE, n) && !examples.containsKey(n))
                        .forEach(n -> {
                            Entry e = counts(n);
                            if (e != null) {
                                out.add(e);
                            }
                        });
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + root, e);
            }
        }
        return out;
    }

    /** The entry of trace {@code name}; null when there is none. */
    public Entry entry(String name) {
        if (!Identifiers.valid(Identifiers.Kind.TRACE, name)) {
            return null;
        }
        if (examples.containsKey(name)) {
            return Files.isRegularFile(examples.get(name)) ? counts(name) : null;
        }
        return Files.isRegularFile(jsonl(name)) ? counts(name) : null;
    }

    private Entry counts(String name) {
        Entry c = counted.get(name);
        if (c != null) {
            return c;
        }
        if (!examples.containsKey(name)) {
            Path side = file(root, name, ".json");
            try {
                c = JSON.readValue(side.toFile(), Entry.class);
            } catch (IOException e) {
                // no or a broken side file: count the trace itself
            }
        }
        if (c == null) {
            Path f = examples.containsKey(name) ? examples.get(name) : jsonl(name);
            PolicySweep.Trace t = trace(name);
            try {
                c = new Entry(name, examples.containsKey(name) ? EXAMPLE : UPLOADED, t.requests().size(), t.blocks(),
                        Files.size(f));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        counted.put(name, c);
        return c;
    }

    /** The parsed trace (cached while its file is unchanged). */
    public PolicySweep.Trace trace(String name) {
        Path f = examples.containsKey(name) ? examples.get(name) : jsonl(name);
        String stamp;
        try {
            stamp = Files.size(f) + "/" + Files.getLastModifiedTime(f).toMillis();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + name, e);
        }
        synchronized (parsed) {
            Parsed p = parsed.get(name);
            if (p != null && p.stamp.equals(stamp)) {
                return p.trace;
            }
        }
        PolicySweep.Trace t = PolicySweep.load(name, f, Integer.MAX_VALUE, false);
        synchronized (parsed) {
            parsed.put(name, new Parsed(stamp, t));
            while (parsed.size() > CACHED) {
                parsed.remove(parsed.keySet().iterator().next());
            }
        }
        return t;
    }

    /**
     * Stores an upload: read as it arrives (never more than {@code maxBytes}), each line checked, written to a
     * temporary file beside its final one and moved into place once whole.
     *
     * @param declaredLength the request's Content-Length, or -1
     * @throws BadTrace     a line that is not a Mooncake request, or too many requests or blocks
     * @throws TooLarge     more than the byte limit
     * @throws IllegalStateException the name is taken
     */
    public Entry upload(String name, InputStream body, long declaredLength) throws IOException {
        Identifiers.require(Identifiers.Kind.TRACE, "name", name);
        if (examples.containsKey(name)) {
            throw new IllegalStateException("'" + name + "' is an example trace; choose another name");
        }
        if (declaredLength > maxBytes) {
            throw new TooLarge("the trace is " + declaredLength + " bytes; at most " + maxBytes + " are taken "
                    + "(kvpool.meta.whatif.max-trace-bytes)");
        }
        Files.createDirectories(root);
        Path target = jsonl(name);
        if (Files.exists(target)) {
            throw new IllegalStateException("a trace named '" + name + "' exists; delete it first or choose another name");
        }
        Path tmp = file(root, name, ".upload-" + ProcessHandle.current().pid() + "-" + Thread.currentThread().threadId());
        long requests = 0, blocks = 0, bytes;
        try {
            try (var counting = new Bounded(body, maxBytes);
                 BufferedReader r = new BufferedReader(new InputStreamReader(counting, StandardCharsets.UTF_8));
                 OutputStream out = Files.newOutputStream(tmp)) {
                String line;
                long no = 0;
                while ((line = r.readLine()) != null) {
                    no++;
                    if (line.isBlank()) {
                        continue;
                    }
                    int n = checkLine(no, line);
                    requests++;
                    blocks += n;
                    if (requests > maxRequests) {
                        throw new BadTrace(no, "more than " + maxRequests + " requests (kvpool.meta.whatif.max-trace-requests)");
                    }
                    if (blocks > maxBlocks) {
                        throw new BadTrace(no, "more than " + maxBlocks + " hash ids in all (kvpool.meta.whatif.max-trace-blocks)");
                    }
                    out.write(line.getBytes(StandardCharsets.UTF_8));
                    out.write('\n');
                }
                bytes = counting.count;
            }
            if (requests == 0) {
                throw new BadTrace(0, "the trace holds no request (one JSON object per line: "
                        + "{\"timestamp\": <ms>, \"hash_ids\": [<id>, ...]})");
            }
            Entry e = new Entry(name, UPLOADED, requests, blocks, Files.size(tmp));
            Files.writeString(file(root, name, ".json"), JSON.writeValueAsString(e));
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException x) {
                Files.move(tmp, target);
            }
            counted.put(name, e);
            return e;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Deletes an uploaded trace; false when there is none of that name. */
    public boolean delete(String name) throws IOException {
        Identifiers.require(Identifiers.Kind.TRACE, "name", name);
        if (examples.containsKey(name)) {
            throw new IllegalStateException("'" + name + "' is an example trace and cannot be deleted");
        }
        boolean had = Files.deleteIfExists(jsonl(name));
        Files.deleteIfExists(file(root, name, ".json"));
        counted.remove(name);
        synchronized (parsed) {
            parsed.remove(name);
        }
        return had;
    }

    public boolean isExample(String name) {
        return examples.containsKey(name);
    }

    private static final com.fasterxml.jackson.core.JsonFactory FACTORY = com.fasterxml.jackson.core.JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(8).build()).build();

    /** One line: an object with an integer {@code timestamp} ≥ 0 and a non-empty {@code hash_ids} array of integers. */
    static int checkLine(long no, String line) {
        ObjectNode n;
        try (JsonParser p = FACTORY.createParser(line)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new BadTrace(no, "not a JSON object");
            }
            n = JSON.readTree(p);
            if (p.nextToken() != null) {
                throw new BadTrace(no, "trailing characters after the JSON object");
            }
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new BadTrace(no, "not JSON: " + Text.safe(e.getOriginalMessage()));
        } catch (IOException e) {
            throw new BadTrace(no, "not JSON: " + Text.safe(String.valueOf(e.getMessage())));
        }
        var ts = n.get("timestamp");
        if (ts == null || !ts.isIntegralNumber() || !ts.canConvertToLong() || ts.asLong() < 0) {
            throw new BadTrace(no, "timestamp must be an integer number of milliseconds, 0 or more");
        }
        var len = n.get("input_length");
        if (len != null && !(len.isIntegralNumber() && len.canConvertToInt())) {
            throw new BadTrace(no, "input_length must be an integer");
        }
        var ids = n.get("hash_ids");
        if (ids == null || !ids.isArray()) {
            throw new BadTrace(no, "hash_ids must be an array of integers");
        }
        if (ids.isEmpty()) {
            throw new BadTrace(no, "hash_ids must not be empty");
        }
        for (int i = 0; i < ids.size(); i++) {
            if (!ids.get(i).isIntegralNumber() || !ids.get(i).canConvertToLong()) {
                throw new BadTrace(no, "hash_ids[" + i + "] is not an integer");
            }
        }
        return ids.size();
    }

    /** Counts what passes and stops past the limit. */
    private static final class Bounded extends java.io.FilterInputStream {
        private final long max;
        long count;

        Bounded(InputStream in, long max) {
            super(in);
            this.max = max;
        }

        private void add(long n) {
            if (n > 0) {
                count += n;
                if (count > max) {
                    throw new TooLarge("the trace is over " + max + " bytes (kvpool.meta.whatif.max-trace-bytes)");
                }
            }
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                add(1);
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            add(n);
            return n;
        }
    }
}
