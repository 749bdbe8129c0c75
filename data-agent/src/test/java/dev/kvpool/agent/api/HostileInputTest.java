package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.agent.AgentClient;
import dev.kvpool.testing.hostile.HostileJson;
import dev.kvpool.testing.hostile.RawHttp;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every route of the engine API driven with malformed and oversized input: broken bodies (truncated, not JSON,
 * invalid UTF-8, NUL bytes, 1000 and 100,000 levels deep), every field at every depth replaced by wrong kinds, huge
 * numbers (2^64, 1e400), -1, NUL and control characters, path segments and long strings, keys given twice,
 * byte-level fuzz, arrays past the per-call bound, bodies past the body bound (declared and chunked), slow and
 * stalled bodies, bad chunked framing and lying lengths. Each must end in a 4xx with a message (a query or a remove
 * that is still valid may answer 200: both leave the blocks as they are), never a 5xx, a dropped connection or a
 * hang; the blocks, counters and shared segment are what they were; idle connections that declare large bodies
 * allocate nothing up front; nothing is logged at ERROR.
 */
@QuarkusTest
class HostileInputTest {
    static final String HOST = "127.0.0.1";
    static final int PORT = 16390;
    static final URI BASE = URI.create("http://" + HOST + ":" + PORT);
    /** No exchange may take longer: the %test idle timeout is 4 s. */
    static final Duration T = Duration.ofSeconds(10);
    /** Blocks saved before the hostile input, which must come through it untouched. */
    static final long[] KNOWN = {5001, 5002, 5003, 5004};
    /** Keys a hostile value may name (0, -1, 1, 2, the extremes): none may appear. */
    static final long[] PROBES = {0, -1, 1, 2, Long.MAX_VALUE, Long.MIN_VALUE, 900_001, 900_002};
    static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Bodies each route refuses in at least two independent places (save: misaligned offsets and a field save does
     * not take; load: the same), so no single hostile replacement can make one valid: a save or load that answered
     * 200 would have changed the blocks or the counters. Query and remove only read, or remove keys never saved.
     */
    static final Map<String, String> BASES = new LinkedHashMap<>();

    static {
        BASES.put("/v1/save", "{\"keys\":[1,2],\"offsets\":[123,4095],\"parent\":7,\"global\":true}");
        BASES.put("/v1/load", "{\"keys\":[1,2],\"offsets\":[123,4095],\"parent\":7}");
        BASES.put("/v1/query", "{\"keys\":[1,2]}");
        BASES.put("/v1/remove", "{\"keys\":[900001,900002],\"global\":false}");
    }

    @Inject
    AgentService agent;

    final HttpClient http = HttpClient.newBuilder().connectTimeout(T).build();
    final List<String> problems = new ArrayList<>();
    final List<String> errorsLogged = new CopyOnWriteArrayList<>();
    final Handler errorWatch = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.SEVERE.intValue()) {
                errorsLogged.add(r.getLoggerName() + ": " + r.getMessage()
                        + (r.getThrown() == null ? "" : " " + r.getThrown()));
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void knownBlocksAndALogWatch() throws Exception {
        try (AgentClient c = new AgentClient(BASE, Duration.ofSeconds(10))) {
            int bb = c.blockBytes();
            long[] offs = new long[KNOWN.length];
            for (int i = 0; i < KNOWN.length; i++) {
                offs[i] = (long) i * bb;
                c.block(offs[i]).fill((byte) (i + 1));
            }
            for (boolean ok : c.save(KNOWN, offs, null)) {
                assertTrue(ok);
            }
        }
        agent.store().awaitWriteBehind(); // the NVMe copies land now, not during the comparisons
        Logger.getLogger("").addHandler(errorWatch);
        // the watch sees what the agent's loggers write at ERROR (else its check below could not fail)
        org.jboss.logging.Logger.getLogger(AgentResource.class).error("hostile-input test: watch check");
        assertEquals(1, errorsLogged.size(), errorsLogged.toString());
        errorsLogged.clear();
    }

    @AfterEach
    void noErrorLogged() {
        Logger.getLogger("").removeHandler(errorWatch);
        assertEquals(List.of(), errorsLogged, "hostile input is the client's fault: nothing logged at ERROR");
    }

    @Test
    void everyRouteRefusesMalformedBodiesWithAMessage() throws Exception {
        for (Map.Entry<String, String> route : BASES.entrySet()) {
            String path = route.getKey();
            List<HostileJson.Case> cases = new ArrayList<>();
            cases.addAll(HostileJson.broken(route.getValue()));
            cases.addAll(HostileJson.fields(route.getValue()));
            cases.addAll(HostileJson.fuzz(route.getValue(), 32, 150));
            // what the generators do not cover: names of fields with control characters, unknown and misspelt fields
            cases.add(new HostileJson.Case("NUL in a field name", bytes("{\"keys\":[1],\"\u0000\":1}")));
            cases.add(new HostileJson.Case("raw control character in a name", bytes("{\"ke\u0001ys\":[1]}")));
            cases.add(new HostileJson.Case("unknown field", bytes("{\"keys\":[1],\"kes\":[1]}")));
            cases.add(new HostileJson.Case("key 2^63", bytes("{\"keys\":[9223372036854775808]}")));
            cases.add(new HostileJson.Case("offset near Long.MAX_VALUE",
                    bytes("{\"keys\":[1],\"offsets\":[9223372036854771712]}")));
            cases.add(new HostileJson.Case("offset -4096", bytes("{\"keys\":[1],\"offsets\":[-4096]}")));
            cases.add(new HostileJson.Case("more keys than offsets", bytes("{\"keys\":[1,2],\"offsets\":[0]}")));
            String before = state();
            String shm = shmDigest();
            for (HostileJson.Case c : cases) {
                RawHttp.Reply r = post(path, c.body(), "application/json");
                judge(path + " [" + c.label() + "]", r, readOnly(path));
                String after = state();
                if (!after.equals(before)) {
                    problems.add(path + " [" + c.label() + "]: state changed: " + before + " -> " + after);
                    before = after;
                }
            }
            if (!shmDigest().equals(shm)) {
                problems.add(path + ": the shared segment changed");
            }
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void arraysAndBodiesPastTheirBoundsAreRefusedBeforeTheyCost() throws Exception {
        String before = state();
        for (Map.Entry<String, String> route : BASES.entrySet()) {
            String path = route.getKey();
            HostileJson.Case many = HostileJson.withArray(route.getValue(), "keys", AgentResource.MAX_KEYS_PER_CALL + 1);
            RawHttp.Reply r = post(path, many.body(), "application/json");
            judge(path + " [" + many.label() + "]", r, false);
            if (r.status() != 400 || !message(r).startsWith("keys: at most " + AgentResource.MAX_KEYS_PER_CALL)) {
                problems.add(path + " [" + many.label() + "]: " + r);
            }
            // a body past the 4 MiB bound with its length declared: 413 with a message, before it is read
            byte[] big = new byte[5 << 20];
            java.util.Arrays.fill(big, (byte) ' ');
            r = post(path, big, "application/json");
            if (r.status() != 413 || !message(r).contains("4194304")) {
                problems.add(path + " [5 MiB body]: " + r);
            }
            // the same size in chunks: cut off with a 413 as soon as it passes the bound (api's HttpGuard)
            r = RawHttp.exchange(HOST, PORT, RawHttp.concat(RawHttp.head("POST", path, "localhost",
                    "Content-Type: application/json", "Transfer-Encoding: chunked"), chunked(big)), T);
            if (r.status() != 413) {
                problems.add(path + " [5 MiB chunked]: " + r);
            }
            if (!state().equals(before)) {
                problems.add(path + ": state changed");
            }
        }
        // the bound itself is taken: 65,536 keys in one query
        RawHttp.Reply r = post("/v1/query", HostileJson.withArray("{\"keys\":[1]}", "keys",
                AgentResource.MAX_KEYS_PER_CALL).body(), "application/json");
        if (r.status() != 200) {
            problems.add("query of " + AgentResource.MAX_KEYS_PER_CALL + " keys: " + r);
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void badFramingWrongMethodsAndContentTypesAreAnswered() throws Exception {
        String before = state();
        // refused by Netty's decoder before any code of the agent runs: a 400 whose body Quarkus leaves empty
        List<String> refusedByNetty = List.of("Content-Length not a number", "Content-Length negative",
                "Content-Length beyond a long", "NUL in a header value", "header without a colon",
                "two different Content-Lengths");
        for (String path : BASES.keySet()) {
            for (Map.Entry<String, byte[]> e : RawHttp.badFraming(path, "localhost", "application/json").entrySet()) {
                RawHttp.Reply r = RawHttp.exchange(HOST, PORT, e.getValue(), T);
                String label = path + " [" + e.getKey() + "]";
                if (refusedByNetty.contains(e.getKey()) && r.status() == 400) {
                    continue;
                }
                judge(label, r, false);
            }
            for (String method : List.of("GET", "PUT", "DELETE", "PATCH")) {
                RawHttp.Reply r = RawHttp.exchange(HOST, PORT, RawHttp.head(method, path, "localhost"), T);
                judge(path + " [" + method + "]", r, false);
            }
            RawHttp.Reply r = post(path, bytes("{\"keys\":[1]}"), "text/plain");
            judge(path + " [text/plain]", r, false);
            if (r.status() != 415) {
                problems.add(path + " [text/plain]: " + r);
            }
        }
        for (String path : List.of("/v1/status", "/v1/nope", "/v1/status/..%2f..%2fetc", "/v1/%00", "/")) {
            judge(path + " [POST]", post(path, bytes("{}"), "application/json"), false);
        }
        RawHttp.Reply status = RawHttp.exchange(HOST, PORT, RawHttp.head("GET", "/v1/status?x=%00&y=" + "a".repeat(2000),
                "localhost", "X-Junk: \u0001\u001b"), T);
        if (status.outcome() != RawHttp.Outcome.ANSWERED || status.status() >= 500) {
            problems.add("/v1/status with junk: " + status);
        }
        if (!state().equals(before)) {
            problems.add("state changed by framing errors");
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void slowStalledAndIdleBodiesAreBoundedInTimeAndMemory() throws Exception {
        String before = state();
        // a slow but complete body is served
        byte[] body = bytes("{\"keys\":[5001,5002]}");
        try (RawHttp.Connection c = RawHttp.open(HOST, PORT, T)) {
            c.send(RawHttp.head("POST", "/v1/query", "localhost", "Content-Type: application/json",
                    "Content-Length: " + body.length));
            for (byte b : body) {
                c.send(new byte[] {b});
                Thread.sleep(40); // real time is the attack: a body trickled in one byte per 40 ms
            }
            RawHttp.Reply r = c.read(T);
            assertEquals(200, r.status(), r.toString());
            assertTrue(r.body().contains("\"key\":5001"), r.body());
        }
        // a body that stops short of its length: 408 at the body timeout (2 s here), then the connection closes;
        // nothing logged, not held open
        Map<String, RawHttp.Connection> stalled = new LinkedHashMap<>();
        try {
            for (String path : BASES.keySet()) { // all at once: each waits out the body timeout
                RawHttp.Connection c = RawHttp.open(HOST, PORT, T);
                stalled.put(path, c);
                c.send(RawHttp.stalled(path, "localhost", 100, 10));
            }
            long start = System.nanoTime();
            for (Map.Entry<String, RawHttp.Connection> e : stalled.entrySet()) {
                RawHttp.Reply r = e.getValue().read(T);
                assertEquals(408, r.status(), e.getKey() + ": " + r);
                assertTrue(message(r).contains("stopped arriving"), e.getKey() + ": " + r);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 8_000, "stalled bodies answered after " + ms + " ms (body timeout 2 s)");
        } finally {
            for (RawHttp.Connection c : stalled.values()) {
                c.close();
            }
        }
        // connections that declare bodies and send nothing more allocate nothing up front: 8 at just under the
        // bound (4 MB each, 32 MB if buffers were sized by the declared length) and 8 declaring 60 MB (refused at once)
        long used = RawHttp.usedHeapAfterGc();
        // the measurement sees buffers of that size: 8 × 4 MB held show as ~32 MB
        byte[][] calibration = new byte[8][4_000_000];
        long seen = RawHttp.usedHeapAfterGc() - used;
        assertTrue(seen > 30_000_000L && calibration[7].length > 0, "calibration: 32 MB held, measured " + seen);
        calibration = null;
        used = RawHttp.usedHeapAfterGc();
        List<RawHttp.Connection> idle = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                RawHttp.Connection c = RawHttp.open(HOST, PORT, T);
                idle.add(c);
                c.send(RawHttp.concat(RawHttp.head("POST", "/v1/save", "localhost", "Content-Type: application/json",
                        "Content-Length: 4000000"), bytes("{\"keys\":[1")));
            }
            List<RawHttp.Reply> large = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                try (RawHttp.Connection c = RawHttp.open(HOST, PORT, T)) {
                    c.send(RawHttp.head("POST", "/v1/save", "localhost", "Content-Type: application/json",
                            "Content-Length: 60000000"));
                    large.add(c.read(T));
                }
            }
            for (RawHttp.Reply r : large) {
                assertEquals(413, r.status(), r.toString());
                assertTrue(message(r).startsWith("request body of 60000000 bytes exceeds the limit of 4194304"), r.toString());
            }
            Thread.sleep(500); // the idle ones' heads are in and parsed
            long grown = RawHttp.usedHeapAfterGc() - used;
            assertTrue(grown < 4L << 20, "8 idle 4 MB bodies and 8 refused 60 MB ones grew the heap by " + grown
                    + " bytes");
        } finally {
            for (RawHttp.Connection c : idle) {
                c.close();
            }
        }
        assertEquals(before, state());
    }

    // ---- helpers -------------------------------------------------------------------------------------------

    /** A reply is a 4xx with a message, or (where {@code okAllowed}) a 200; never 5xx, never silence. */
    void judge(String label, RawHttp.Reply r, boolean okAllowed) {
        if (r.outcome() == RawHttp.Outcome.TIMED_OUT) {
            problems.add(label + ": no answer within " + T);
        } else if (r.outcome() == RawHttp.Outcome.CLOSED_WITHOUT_ANSWER) {
            problems.add(label + ": connection closed without an answer");
        } else if (r.status() == 200 && okAllowed) {
            return;
        } else if (r.status() < 400 || r.status() >= 500) {
            problems.add(label + ": HTTP " + r);
        } else if (message(r).isBlank()) {
            problems.add(label + ": " + r.status() + " without a message: " + r);
        } else if (message(r).chars().anyMatch(ch -> ch < 0x20)) {
            problems.add(label + ": control character in the message: " + r);
        }
    }

    /** The agent's {@code error}, or the {@code detail} of a framing refusal answered before any route runs. */
    static String message(RawHttp.Reply r) {
        try {
            JsonNode n = JSON.readTree(r.body());
            return n == null ? "" : n.path("error").asText(n.path("detail").asText(""));
        } catch (IOException e) {
            return "";
        }
    }

    static boolean readOnly(String path) {
        return path.equals("/v1/query") || path.equals("/v1/remove"); // remove names only keys never saved
    }

    static RawHttp.Reply post(String path, byte[] body, String contentType) throws IOException {
        return RawHttp.exchange(HOST, PORT, RawHttp.post(path, "localhost", contentType, body), T);
    }

    /** The counters, per-tier block counts and where the known and probe keys are, from /v1/status and /v1/query. */
    String state() throws Exception {
        JsonNode s = JSON.readTree(http.send(HttpRequest.newBuilder(BASE.resolve("/v1/status")).timeout(T).build(),
                HttpResponse.BodyHandlers.ofString()).body());
        StringBuilder b = new StringBuilder();
        b.append("saved=").append(s.path("saved_blocks")).append(" hits=").append(s.path("load_hits"))
                .append(" misses=").append(s.path("load_misses"));
        for (JsonNode t : s.path("tiers")) {
            b.append(' ').append(t.path("name").asText()).append('=').append(t.path("blocks"));
        }
        StringBuilder keys = new StringBuilder("{\"keys\":[");
        for (long k : KNOWN) {
            keys.append(k).append(',');
        }
        for (long k : PROBES) {
            keys.append(k).append(',');
        }
        keys.setLength(keys.length() - 1);
        String q = http.send(HttpRequest.newBuilder(BASE.resolve("/v1/query")).timeout(T)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(keys + "]}")).build(), HttpResponse.BodyHandlers.ofString())
                .body();
        return b.append(' ').append(q).toString();
    }

    /** A digest of the whole shared segment: a refused load must not have written into it. */
    String shmDigest() throws Exception {
        MemorySegment seg = agent.shm().segment();
        java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[1 << 16];
        for (long off = 0; off < seg.byteSize(); off += buf.length) {
            int n = (int) Math.min(buf.length, seg.byteSize() - off);
            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, off, buf, 0, n);
            d.update(buf, 0, n);
        }
        return java.util.HexFormat.of().formatHex(d.digest());
    }

    static byte[] chunked(byte[] body) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int off = 0; off < body.length; off += 1 << 16) {
            int n = Math.min(1 << 16, body.length - off);
            out.writeBytes(bytes(Integer.toHexString(n) + "\r\n"));
            out.write(body, off, n);
            out.writeBytes(bytes("\r\n"));
        }
        out.writeBytes(bytes("0\r\n\r\n"));
        return out.toByteArray();
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
