package dev.kvpool.meta.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Mooncake's published request traces (FAST'25 release): one JSON object per line with {@code timestamp} (ms from
 * the trace start), {@code input_length} (tokens) and {@code hash_ids}, the chained block ids of a 512-token block
 * size. hash_ids are used directly as block keys: equal ids mean equal prefixes.
 */
public final class MooncakeTrace {
    public static final int BLOCK_SIZE = 512;
    private static final ObjectMapper JSON = new ObjectMapper();

    public record Request(long timestampMs, int inputLength, long[] hashIds) {
    }

    private MooncakeTrace() {
    }

    public static List<Request> read(Path file, int limit) {
        List<Request> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file)) {
            String line;
            int no = 0;
            while ((line = r.readLine()) != null && out.size() < limit) {
                no++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode n = JSON.readTree(line);
                JsonNode ids = n.path("hash_ids");
                if (!ids.isArray()) {
                    throw new IllegalArgumentException(file + " line " + no + ": no hash_ids array");
                }
                long[] keys = new long[ids.size()];
                for (int i = 0; i < keys.length; i++) {
                    keys[i] = ids.get(i).asLong();
                }
                out.add(new Request(n.path("timestamp").asLong(), n.path("input_length").asInt(), keys));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + file, e);
        }
        return out;
    }

    /** {@code $KVPOOL_SHARED}, else the first {@code ../shared} with a data/ folder above the working directory. */
    public static Path shared() {
        String env = System.getenv("KVPOOL_SHARED");
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isDirectory(d.resolve("../shared/data"))) {
                return d.resolve("../shared").normalize();
            }
        }
        throw new IllegalStateException("cannot find the shared/ folder above " + Path.of("").toAbsolutePath()
                + "; set KVPOOL_SHARED");
    }

    public static Path conversation() {
        return shared().resolve("data/mooncake/conversation_trace.jsonl");
    }

    public static Path synthetic() {
        return shared().resolve("data/mooncake/synthetic_trace.jsonl");
    }
}
