package dev.kvpool.meta;

import dev.kvpool.meta.support.MetaProcess;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Crash consistency of the packaged metadata plane: a write load runs against a child process, the process is
 * killed with SIGKILL in the middle of it, and a new process on the same data directory must serve every block
 * whose FinishWriteCache was acknowledged, never serve a block that was not finished OK, keep the open write
 * sessions (finishable until their deadline) and clean up the ones that expired.
 */
class RestartIT {
    private static final ObjectMapper M = new ObjectMapper();
    private static final String INSTANCE = "restart-it";
    private static final int LOAD_TIMEOUT_S = 6;      // write_timeout_seconds of the load's sessions
    private static final int EXPIRING_TIMEOUT_S = 4;  // sessions deliberately left open, expiring after the restart
    private static final int SURVIVOR_TIMEOUT_S = 120; // sessions left open, finished after the restart

    @TempDir
    Path dir;

    private MetaProcess process;

    private static void log(String fmt, Object... args) {
        System.out.printf("[RestartIT] " + fmt + "%n", args);
        System.out.flush();
    }

    // ---- process -------------------------------------------------------------------------------------------

    private void startServer(String name) throws Exception {
        process = MetaProcess.start(name, dir, List.of("kvpool.data-dir=" + dir.resolve("data")));
    }

    private void kill() throws InterruptedException {
        process.kill();
    }

    @AfterEach
    void stop() throws Exception {
        if (process != null) {
            process.close();
        }
        // what the metadata plane complained about, for the build log (the temp dir goes away)
        try (var logs = Files.list(dir)) {
            for (Path l : logs.filter(p -> p.toString().endsWith(".log")).sorted().toList()) {
                List<String> bad = Files.readAllLines(l).stream().filter(x -> x.contains(" ERROR ") || x.contains(" WARN "))
                        .limit(20).toList();
                log("%s: %d warnings/errors%s", l.getFileName(), bad.size(), bad.isEmpty() ? "" : ":\n  " + String.join("\n  ", bad));
            }
        }
    }

    // ---- RPC -----------------------------------------------------------------------------------------------

    private JsonNode rpc(String route, String body) throws IOException {
        return process.rpc(route, body);
    }

    private static String code(JsonNode r) {
        return r.path("header").path("status").path("code").asText();
    }

    private JsonNode ok(String route, String body) throws IOException {
        JsonNode r = rpc(route, body);
        assertEquals("OK", code(r), () -> route + " " + body + " -> " + r);
        return r;
    }

    private static String keys(List<Long> keys) {
        return keys.stream().map(String::valueOf).collect(Collectors.joining(",", "[", "]"));
    }

    private JsonNode start(List<Long> keys, int timeout) throws IOException {
        return rpc("startWriteCache", "{\"trace_id\":\"s\",\"instance_id\":\"" + INSTANCE + "\",\"block_keys\":"
                + keys(keys) + ",\"write_timeout_seconds\":" + timeout + "}");
    }

    private JsonNode finish(String session, List<Boolean> values) throws IOException {
        return rpc("finishWriteCache", "{\"trace_id\":\"f\",\"instance_id\":\"" + INSTANCE + "\",\"write_session_id\":\""
                + session + "\",\"success_blocks\":{\"bool_masks\":{\"values\":" + values + "}}}");
    }

    /** BATCH_GET: for each key its served location, or null for a miss (placeholder). */
    private List<JsonNode> served(List<Long> keys) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        for (int off = 0; off < keys.size(); off += 500) {
            List<Long> chunk = keys.subList(off, Math.min(keys.size(), off + 500));
            JsonNode r = ok("getCacheLocation", "{\"trace_id\":\"q\",\"instance_id\":\"" + INSTANCE
                    + "\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":" + keys(chunk) + "}");
            assertEquals(chunk.size(), r.path("locations").size());
            for (JsonNode l : r.path("locations")) {
                out.add(l.path("location_specs").get(0).path("uri").asText().isEmpty() ? null : l);
            }
        }
        return out;
    }

    private int prefixHits(List<Long> keys) throws IOException {
        return ok("getCacheLocation", "{\"trace_id\":\"q\",\"instance_id\":\"" + INSTANCE
                + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":" + keys(keys) + ",\"block_mask\":{\"offset\":0}}")
                .path("locations").size();
    }

    private List<String> statuses(List<Long> keys) throws IOException {
        List<String> out = new ArrayList<>();
        for (int off = 0; off < keys.size(); off += 500) {
            List<Long> chunk = keys.subList(off, Math.min(keys.size(), off + 500));
            JsonNode r = ok("getCacheMeta", "{\"trace_id\":\"m\",\"instance_id\":\"" + INSTANCE + "\",\"block_keys\":"
                    + keys(chunk) + "}");
            for (JsonNode m : r.path("metas")) {
                out.add(M.readTree(m.asText()).path("status").asText());
            }
        }
        return out;
    }

    private static List<Long> newKeys(int n) {
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(ThreadLocalRandom.current().nextLong());
        }
        return out;
    }

    record Open(String session, List<Long> keys, long deadlineMs) {
    }

    // ---- the test ------------------------------------------------------------------------------------------

    @Test
    void killDuringWriteLoadLosesNothingAcknowledged() throws Exception {
        startServer("first");
        ok("registerInstance", "{\"trace_id\":\"r\",\"instance_group\":\"default\",\"instance_id\":\"" + INSTANCE
                + "\",\"block_size\":16,\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"bf16\"},"
                + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":4096},{\"name\":\"tp1\",\"size\":4096}]}");

        // what every key went through; a key is in at most one of these
        Map<Long, JsonNode> acked = new ConcurrentHashMap<>();       // finish OK with true: must be served
        Set<Long> notFinishedOk = ConcurrentHashMap.newKeySet();    // finish OK with false, or never sent
        Set<Long> uncertain = ConcurrentHashMap.newKeySet();        // start or finish cut by the kill
        long loadStart = System.currentTimeMillis();

        List<Open> survivors = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            List<Long> k = newKeys(3);
            JsonNode s = ok("startWriteCache", "{\"trace_id\":\"s\",\"instance_id\":\"" + INSTANCE + "\",\"block_keys\":"
                    + keys(k) + ",\"write_timeout_seconds\":" + SURVIVOR_TIMEOUT_S + "}");
            assertEquals(3, s.path("locations").size());
            survivors.add(new Open(s.path("write_session_id").asText(), k, System.currentTimeMillis() + SURVIVOR_TIMEOUT_S * 1000L));
        }

        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger finishes = new AtomicInteger();
        List<Open> expiring = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Thread> load = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            Thread t = new Thread(() -> {
                var rnd = ThreadLocalRandom.current();
                while (!stop.get()) {
                    List<Long> k = newKeys(1 + rnd.nextInt(6));
                    int choice = rnd.nextInt(100);
                    int timeout = choice < 10 ? EXPIRING_TIMEOUT_S : LOAD_TIMEOUT_S;
                    JsonNode s;
                    try {
                        s = start(k, timeout);
                    } catch (IOException e) {
                        uncertain.addAll(k);
                        return;
                    }
                    if (!code(s).equals("OK") || s.path("locations").size() != k.size()) {
                        uncertain.addAll(k);
                        errors.add("start answered " + s);
                        stop.set(true);
                        return;
                    }
                    String session = s.path("write_session_id").asText();
                    if (choice < 10) { // left open, expires
                        notFinishedOk.addAll(k);
                        expiring.add(new Open(session, k, System.currentTimeMillis() + timeout * 1000L));
                        continue;
                    }
                    List<Boolean> values = new ArrayList<>();
                    for (int i = 0; i < k.size(); i++) {
                        values.add(choice < 30 ? rnd.nextBoolean() : true); // 20 % partly or wholly failed
                    }
                    JsonNode f;
                    try {
                        f = finish(session, values);
                    } catch (IOException e) {
                        uncertain.addAll(k);
                        return;
                    }
                    if (!code(f).equals("OK")) {
                        uncertain.addAll(k);
                        errors.add("finish answered " + f);
                        stop.set(true);
                        return;
                    }
                    finishes.incrementAndGet();
                    for (int i = 0; i < k.size(); i++) {
                        if (values.get(i)) {
                            acked.put(k.get(i), s.path("locations").get(i));
                        } else {
                            notFinishedOk.add(k.get(i));
                        }
                    }
                }
            }, "load-" + w);
            t.setDaemon(true);
            load.add(t);
            t.start();
        }
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while ((finishes.get() < 200 || expiring.size() < 3) && System.nanoTime() < until && !stop.get()) {
            Thread.sleep(20);
        }
        log("load: %d finishes, %d blocks acknowledged, %d sessions left open to expire; killing pid %d",
                finishes.get(), acked.size(), expiring.size(), process.pid());
        kill();
        long killedAt = System.currentTimeMillis();
        stop.set(true);
        for (Thread t : load) {
            t.join(20_000);
            assertFalse(t.isAlive(), "load thread still running");
        }
        assertEquals(List.of(), errors, "the load saw logical errors before the kill");
        assertTrue(acked.size() > 0 && expiring.size() > 0, "the load did not get going");
        log("killed; %d acknowledged, %d not finished OK, %d cut by the kill", acked.size(), notFinishedOk.size(),
                uncertain.size());

        startServer("second");

        // 1. every acknowledged block is served, at the URI the write handed out
        List<Long> ackedKeys = new ArrayList<>(acked.keySet());
        List<JsonNode> got = served(ackedKeys);
        int missing = 0;
        for (int i = 0; i < ackedKeys.size(); i++) {
            if (got.get(i) == null) {
                missing++;
            } else {
                assertEquals(acked.get(ackedKeys.get(i)), got.get(i), "location of key " + ackedKeys.get(i));
            }
        }
        assertEquals(0, missing, missing + " of " + ackedKeys.size() + " acknowledged blocks lost");
        for (int off = 0; off < Math.min(ackedKeys.size(), 200); off += 20) {
            List<Long> run = ackedKeys.subList(off, Math.min(ackedKeys.size(), off + 20));
            assertEquals(run.size(), prefixHits(run));
        }
        log("all %d acknowledged blocks served after the restart", ackedKeys.size());

        // 2. nothing that was not finished OK is served
        List<Long> never = new ArrayList<>(notFinishedOk);
        assertTrue(served(never).stream().allMatch(java.util.Objects::isNull), "a block never finished OK is served");
        log("none of %d blocks not finished OK is served", never.size());

        // 3. open sessions survived: finishing one before its deadline works
        for (Open o : survivors) {
            assertEquals("OK", code(finish(o.session(), List.of(true, true, true))), "survivor " + o.session());
            assertEquals(3, prefixHits(o.keys()));
        }
        log("%d open sessions finished after the restart", survivors.size());

        // 4. expired sessions leave nothing: their keys become writable again after the deadline
        long lastExpiring = expiring.stream().mapToLong(Open::deadlineMs).max().orElse(0);
        List<Long> expiringKeys = expiring.stream().flatMap(o -> o.keys().stream()).toList();
        long bound = lastExpiring + 8_000;
        while (!statuses(expiringKeys).stream().allMatch("CLS_NOT_FOUND"::equals)) {
            assertTrue(served(expiringKeys).stream().allMatch(java.util.Objects::isNull));
            if (System.currentTimeMillis() > bound) {
                fail("expired sessions' keys still present " + (System.currentTimeMillis() - lastExpiring)
                        + " ms after the last deadline: " + statuses(expiringKeys));
            }
            Thread.sleep(200);
        }
        for (Open o : expiring) {
            assertFalse(code(finish(o.session(), o.keys().stream().map(k -> true).toList())).equals("OK"),
                    "a late finish of an expired session");
            JsonNode again = ok("startWriteCache", "{\"trace_id\":\"s\",\"instance_id\":\"" + INSTANCE + "\",\"block_keys\":"
                    + keys(o.keys()) + ",\"write_timeout_seconds\":30}");
            assertEquals("{\"offset\":0}", again.path("block_mask").toString());
            assertEquals(o.keys().size(), again.path("locations").size());
            ok("finishWriteCache", "{\"trace_id\":\"f\",\"instance_id\":\"" + INSTANCE + "\",\"write_session_id\":\""
                    + again.path("write_session_id").asText() + "\",\"success_blocks\":{\"offset\":0}}");
        }
        log("%d expired sessions cleaned up; their %d keys were writable again", expiring.size(), expiringKeys.size());

        // 5. once every deadline has passed, nothing is left WRITING
        long lastDeadline = killedAt + LOAD_TIMEOUT_S * 1000L;
        Set<Long> all = new HashSet<>(acked.keySet());
        all.addAll(notFinishedOk);
        all.addAll(uncertain);
        survivors.forEach(o -> all.addAll(o.keys()));
        List<Long> allKeys = new ArrayList<>(all);
        long end = lastDeadline + 8_000;
        while (true) {
            Map<String, Integer> counts = new HashMap<>();
            statuses(allKeys).forEach(s -> counts.merge(s, 1, Integer::sum));
            if (System.currentTimeMillis() > lastDeadline && !counts.containsKey("CLS_WRITING")) {
                log("after all deadlines: %s over %d keys (load started %d ms before the kill)", counts, allKeys.size(),
                        killedAt - loadStart);
                break;
            }
            if (System.currentTimeMillis() > end) {
                fail("CLS_WRITING left after every deadline passed: " + counts);
            }
            Thread.sleep(250);
        }
        assertTrue(served(never).stream().allMatch(java.util.Objects::isNull), "a block never finished OK is served");
        assertEquals(0, served(ackedKeys).stream().filter(java.util.Objects::isNull).count());

        // 6. slots of live blocks are not handed out again after the restart
        Set<String> liveSlots = new HashSet<>();
        for (JsonNode l : served(allKeys)) {
            if (l != null) {
                for (JsonNode spec : l.path("location_specs")) {
                    liveSlots.add(spec.path("uri").asText().replaceAll("&size=\\d+$", ""));
                }
            }
        }
        JsonNode fresh = ok("startWriteCache", "{\"trace_id\":\"s\",\"instance_id\":\"" + INSTANCE + "\",\"block_keys\":"
                + keys(newKeys(40)) + ",\"write_timeout_seconds\":30}");
        for (JsonNode l : fresh.path("locations")) {
            for (JsonNode spec : l.path("location_specs")) {
                String slot = spec.path("uri").asText().replaceAll("&size=\\d+$", "");
                assertFalse(liveSlots.contains(slot), "slot of a live block handed out again: " + slot);
            }
        }
        log("40 new blocks got slots disjoint from %d live ones", liveSlots.size());
    }
}
