package dev.kvpool.console;

import static com.microsoft.playwright.assertions.PlaywrightAssertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.microsoft.playwright.Page;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The console in Chromium against the real control plane (which serves it) and the real metadata plane: what a
 * person does in it, in order — sign in, create a storage and a group, watch an engine's traffic arrive in the
 * charts, edit against another admin, look as a tenant, ask why a prompt misses, replay a trace.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleIT {
    @RegisterExtension
    static final Browser BROWSER = new Browser(Path.of(System.getProperty("kvpool.e2e.dir", "target/e2e")));
    static Stack stack;

    @BeforeAll
    static void start() throws Exception {
        stack = Stack.start();
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    /** Opens the console at {@code path} and signs in on the sign-in page it is sent to. */
    static Page signIn(String path, String user, String password) {
        Page p = BROWSER.page();
        p.navigate(stack.cp + path);
        p.getByTestId("sign-in-user").fill(user);
        p.getByTestId("sign-in-password").fill(password);
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("masthead-user")).containsText(user);
        return p;
    }

    @Test
    @Order(1)
    void signInRefusesABadPasswordAndAcceptsTheRightOne() {
        Page p = BROWSER.page();
        p.navigate(stack.cp + "/");
        assertThat(p.getByTestId("sign-in-form")).isVisible();
        p.getByTestId("sign-in-user").fill("admin");
        p.getByTestId("sign-in-password").fill("not-the-password");
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("sign-in-error")).containsText("Wrong user name or password");
        assertThat(p.getByTestId("masthead-user")).hasCount(0);

        p.getByTestId("sign-in-password").fill(Stack.ADMIN_PW);
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("masthead-user")).containsText("admin");
        assertThat(p.getByTestId("masthead-role")).containsText("admin");
    }

    @Test
    @Order(2)
    void aDeepLinkSurvivesSignIn() {
        Page p = signIn("/groups", "admin", Stack.ADMIN_PW);
        assertTrue(p.url().endsWith("/groups"), "back on the page asked for, not " + p.url());
        assertEquals(200, p.navigate(stack.cp + "/groups").status(), "a reload of a console page serves the console");
    }

    // ---- an admin sets the pool up ---------------------------------------------------------------------------

    static final String STORAGE = "nfs_e2e", GROUP = "search", OTHER = "other-team", INSTANCE = "e2e-inst";

    @Test
    @Order(3)
    void anAdminCreatesAStorageAndAGroupInTheConsole() throws Exception {
        Page p = signIn("/storages", "admin", Stack.ADMIN_PW);
        p.getByTestId("storage-create").click();
        p.locator("#storage-name").fill(STORAGE);
        p.locator("#storage-spec-root_path").fill(stack.dir.resolve("nfs").toAbsolutePath() + "/");
        p.getByTestId("storage-save").click();
        assertThat(p.getByTestId("storage-row-" + STORAGE)).isVisible();

        // the server's own refusal is shown next to the field it names
        p.getByTestId("storage-create").click();
        p.locator("#storage-name").fill(STORAGE);
        p.locator("#storage-spec-root_path").fill(stack.dir.resolve("nfs2").toAbsolutePath() + "/");
        p.getByTestId("storage-save").click();
        assertThat(p.locator("#storage-name-helper")).containsText(STORAGE);
        assertThat(p.locator("#storage-name-helper")).containsText("exists");
        p.getByTestId("storage-cancel").click();

        p.getByTestId("nav-groups").click();
        p.getByTestId("group-create").click();
        // a name the server would refuse is refused before anything is sent
        java.util.List<String> posted = new java.util.concurrent.CopyOnWriteArrayList<>();
        p.onRequest(r -> {
            if (r.method().equals("POST") && r.url().endsWith("/api/v1/instance-groups")) {
                posted.add(r.url());
            }
        });
        p.locator("#group-name").fill("bad/name");
        p.locator("#group-quotaBytes").fill("1000000000");
        p.getByTestId("group-save").click();
        assertThat(p.locator("#group-name-helper")).isVisible();
        assertTrue(posted.isEmpty(), "an invalid form was sent: " + posted);

        p.locator("#group-name").fill(GROUP);
        p.getByTestId("group-candidate-" + STORAGE).check();
        // PatternFly draws the switch over its input: the input itself is what a click toggles
        p.getByTestId("group-allowAnonymousMeta").check(new com.microsoft.playwright.Locator.CheckOptions().setForce(true));
        p.getByTestId("group-save").click();
        p.waitForURL("**/groups/" + GROUP);
        assertEquals(1, posted.size());

        Stack.Res g = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null);
        assertEquals(200, g.status(), g.raw());
        assertEquals(1_000_000_000L, g.body().path("quotaBytes").asLong());
        assertEquals(STORAGE, g.body().path("storageCandidates").path(0).asText());
        assertTrue(g.body().path("allowAnonymousMeta").asBoolean());
        // its candidate exists: no "missing" label on the detail page
        assertThat(p.getByTestId("candidate-" + STORAGE)).hasAttribute("data-missing", "false");

        // a group naming a storage not added yet (KVCM's CreateInstanceGroup stores it as given) shows it missing,
        // on the detail page and in the list, until the storage is added
        var pending = Stack.M.createObjectNode().put("name", "pending-g").put("quotaBytes", 1_000_000L);
        pending.putArray("storageCandidates").add("later_nfs").add(STORAGE);
        Stack.Res made = stack.rest("POST", "/api/v1/instance-groups", pending, admin(), null);
        assertEquals(201, made.status(), made.raw());
        assertEquals("later_nfs", made.body().path("missingStorages").path(0).asText(), made.raw());
        p.navigate(stack.cp + "/groups/pending-g");
        assertThat(p.getByTestId("candidate-missing-later_nfs")).isVisible();
        assertThat(p.getByTestId("candidate-missing-" + STORAGE)).hasCount(0);
        p.getByTestId("nav-groups").click();
        assertThat(p.getByTestId("group-row-pending-g").getByTestId("candidate-missing-later_nfs")).isVisible();
        var later = Stack.M.createObjectNode().put("name", "later_nfs").put("type", "nfs");
        later.putObject("spec").put("root_path", stack.dir.resolve("later").toAbsolutePath() + "/");
        Stack.Res added = stack.rest("POST", "/api/v1/storages", later, admin(), null);
        assertEquals(201, added.status(), added.raw());
        p.navigate(stack.cp + "/groups/pending-g");
        assertThat(p.getByTestId("candidate-later_nfs")).hasAttribute("data-missing", "false");
        assertThat(p.getByTestId("candidate-missing-later_nfs")).hasCount(0);
        // leave the stack as the later steps expect it
        assertEquals(204, stack.rest("DELETE", "/api/v1/instance-groups/pending-g", null, admin(), null).status());
        assertEquals(204, stack.rest("DELETE", "/api/v1/storages/later_nfs", null, admin(), null).status());
    }

    static String adminToken;

    static String admin() throws java.io.IOException {
        if (adminToken == null) {
            adminToken = stack.token("admin", Stack.ADMIN_PW);
        }
        return adminToken;
    }

    static long[] tokens(int n) {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            t[i] = 1000 + i;
        }
        return t;
    }

    // ---- an engine's traffic, as the overview shows it ------------------------------------------------------

    @Test
    @Order(4)
    void anEnginesWritesAndHitsShowInTheOverviewCharts() throws Exception {
        // the metadata plane learns the new group with its next resync (1 s here)
        stack.await("the metadata plane to accept instances of " + GROUP, 30_000, () -> {
            try {
                stack.register(GROUP, INSTANCE, 4);
                return true;
            } catch (AssertionError | java.io.IOException notYet) {
                return false;
            }
        });
        stack.write(INSTANCE, tokens(32)); // 8 blocks of 4 tokens
        for (int i = 0; i < 3; i++) {
            assertEquals(8, stack.prefixHits(INSTANCE, tokens(48)), "8 of the 12 blocks asked are cached");
        }
        // the metadata plane reports every second; the console reads what the control plane kept
        stack.await("the control plane to hold the group's hits and usage", 30_000, () -> {
            try {
                Stack.Res s = stack.rest("GET", "/api/v1/stats/summary", null, admin(), null);
                for (var g : s.body().path("groups")) {
                    if (g.path("group").asText().equals(GROUP) && g.path("hitRate").path("lastHour").asDouble() > 0
                            && g.path("usedBytes").asLong() > 0) {
                        return true;
                    }
                }
                return false;
            } catch (java.io.IOException e) {
                return false;
            }
        });

        Page p = signIn("/groups", "admin", Stack.ADMIN_PW);
        long t0 = System.nanoTime();
        p.navigate(stack.cp + "/");
        var card = p.getByTestId("group-card-" + GROUP);
        assertThat(card.getByTestId("group-hit-hour")).containsText("%");
        double paintMs = (System.nanoTime() - t0) / 1e6;
        // 24 hits of 36 blocks asked: 66.7 %
        assertThat(card.getByTestId("group-hit-hour")).containsText("66.7");
        assertThat(card.getByTestId("group-used")).not().containsText("0 B");
        assertThat(p.getByTestId("overview-hit-rate-chart").locator("svg path").first()).isAttached();
        assertThat(p.getByTestId("service-control-plane")).containsText("UP");
        assertThat(p.locator("[data-testid^=service-meta-]").first()).containsText("UP");
        assertThat(p.locator("[data-testid^=service-agent-]").first()).containsText("UP");
        figure("overview_first_meaningful_paint_ms", String.format(java.util.Locale.ROOT, "%.0f", paintMs));
        java.nio.file.Files.createDirectories(stack.dir.resolve("screenshots"));
        p.setViewportSize(1440, 1500); // the whole overview, charts included (docs/img/console-overview.png)
        p.waitForTimeout(500);
        p.screenshot(new Page.ScreenshotOptions().setPath(stack.dir.resolve("screenshots").resolve("overview.png")));

        // the group's own page: usage and hit rate over time, its instance
        p.navigate(stack.cp + "/groups/" + GROUP);
        assertThat(p.getByTestId("group-hit-rate-chart").locator("svg path").first()).isAttached();
        assertThat(p.getByTestId("group-usage-chart").locator("svg path").first()).isAttached();
        assertThat(p.getByTestId("instance-row-" + INSTANCE)).isVisible();
    }

    /** A figure for docs/benchmarks.md: printed and appended to target/e2e/figures.txt. */
    static void figure(String name, String value) throws java.io.IOException {
        System.out.println("[figure] " + name + " = " + value);
        java.nio.file.Files.writeString(stack.dir.resolve("figures.txt"), name + "=" + value + "\n",
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    }

    // ---- two admins, one group -------------------------------------------------------------------------------

    @Test
    @Order(5)
    void aStaleEditShowsTheConflictAndOverwritesNothing() throws Exception {
        Page p = signIn("/groups/" + GROUP + "/edit", "admin", Stack.ADMIN_PW);
        assertThat(p.locator("#group-quotaBytes")).hasValue("1000000000");

        // another admin changes the quota while this form is open
        Stack.Res g = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null);
        var changed = ((com.fasterxml.jackson.databind.node.ObjectNode) g.body()).put("quotaBytes", 2_000_000_000L);
        Stack.Res put = stack.rest("PUT", "/api/v1/instance-groups/" + GROUP, changed, admin(), g.etag());
        assertEquals(200, put.status(), put.raw());

        p.locator("[id='group-waterLevels-softPercent']").fill("70");
        p.getByTestId("group-save").click();
        assertThat(p.getByTestId("conflict-alert")).isVisible();
        assertThat(p.getByTestId("conflict-row-quotaBytes").getByTestId("conflict-current")).containsText("2000000000");

        Stack.Res now = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null);
        assertEquals(2_000_000_000L, now.body().path("quotaBytes").asLong(), "the other admin's quota stays");
        assertTrue(now.body().path("waterLevels").path("softPercent").asInt() != 70, "nothing was overwritten");
    }

    // ---- a tenant ---------------------------------------------------------------------------------------------

    @Test
    @Order(6)
    void aTenantSeesOnlyItsOwnGroupsAndFetchesNothingElse() throws Exception {
        var other = Stack.M.createObjectNode().put("name", OTHER).put("quotaBytes", 1_000_000_000L);
        other.putArray("storageCandidates").add(STORAGE);
        Stack.Res made = stack.rest("POST", "/api/v1/instance-groups", other, admin(), null);
        assertEquals(201, made.status(), made.raw());
        var acct = Stack.M.createObjectNode().put("name", "team-a").put("password", "Blue-Otter-42x")
                .put("role", "tenant");
        acct.putArray("groups").add(GROUP);
        Stack.Res a = stack.rest("POST", "/api/v1/accounts", acct, admin(), null);
        assertEquals(201, a.status(), a.raw());

        Page p = BROWSER.page();
        java.util.List<String> fetched = new java.util.concurrent.CopyOnWriteArrayList<>();
        p.onRequest(r -> {
            if (r.url().contains("/api/")) {
                fetched.add(r.method() + " " + r.url());
            }
        });
        p.navigate(stack.cp + "/");
        p.getByTestId("sign-in-user").fill("team-a");
        p.getByTestId("sign-in-password").fill("Blue-Otter-42x");
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("masthead-role")).containsText("tenant");
        assertThat(p.getByTestId("group-card-" + GROUP)).isVisible();
        assertThat(p.getByTestId("group-card-" + OTHER)).hasCount(0);
        assertThat(p.getByTestId("nav-storages")).hasCount(0);
        assertThat(p.getByTestId("nav-accounts")).hasCount(0);
        assertThat(p.getByTestId("nav-whatif")).hasCount(0);

        p.getByTestId("nav-groups").click();
        assertThat(p.getByTestId("group-row-" + GROUP)).isVisible();
        assertThat(p.getByTestId("group-row-" + OTHER)).hasCount(0);
        p.getByTestId("nav-instances").click();
        assertThat(p.getByTestId("instance-row-" + INSTANCE)).isVisible();
        p.waitForLoadState(com.microsoft.playwright.options.LoadState.NETWORKIDLE);

        for (String f : fetched) {
            assertTrue(!f.contains(OTHER) && !f.contains("/api/v1/storages") && !f.contains("/api/v1/accounts")
                    && !f.contains("/whatif"), "a tenant page fetched what the tenant may not see: " + f);
        }
        // and had it asked, the server would have refused
        for (String path : new String[] {"/api/v1/instance-groups/" + OTHER, "/api/v1/stats/series?group=" + OTHER,
                "/api/v1/usage/series?group=" + OTHER, "/api/v1/storages", "/api/v1/accounts"}) {
            Object status = p.evaluate("async (path) => { const s = JSON.parse(sessionStorage.getItem('kvpool.session'));"
                    + " const r = await fetch(path, {headers: {Authorization: 'Bearer ' + s.token}}); return r.status; }",
                    path);
            int st = ((Number) status).intValue();
            assertTrue(st == 403 || st == 404, path + " answered " + st + " to a tenant of " + GROUP);
        }
    }

    // ---- why does this prompt miss? ----------------------------------------------------------------------------

    @Test
    @Order(7)
    void thePromptMissToolMarksTheFirstMissingBlock() {
        Page p = signIn("/instances/" + INSTANCE, "admin", Stack.ADMIN_PW);
        StringBuilder ids = new StringBuilder();
        for (long t : tokens(48)) {
            ids.append(ids.isEmpty() ? "" : ", ").append(t);
        }
        p.getByTestId("prompt-miss-tokens").fill(ids.toString());
        p.getByTestId("prompt-miss-run").click();
        // blocks 0..7 were written, so block 8 (the 9th) is the first the engine would recompute
        assertThat(p.getByTestId("first-miss")).hasCount(1);
        assertThat(p.getByTestId("first-miss").locator("td").first()).hasText("8");
        assertThat(p.getByTestId("block-row-7")).isVisible();
        assertThat(p.getByTestId("prompt-miss-summary")).containsText("8");
    }

    // ---- engine caches (issue 36) -----------------------------------------------------------------------------

    @Test
    @Order(7) // reads the instance's blocks only, as the prompt-miss test of the same order does: either may run first
    void engineCachesShowWhereAnInstancesCacheLivesAndScorePromptsThroughTheRealStack() throws Exception {
        Page p = signIn("/instances/" + INSTANCE, "admin", Stack.ADMIN_PW);
        p.getByTestId("instance-engine-caches").click();
        p.waitForURL("**/engine/" + INSTANCE);
        // no engine has reported yet: the pods say so, the pool still holds the 8 blocks written
        assertThat(p.getByTestId("engine-pods-empty")).isVisible();
        assertThat(p.getByTestId("pool-keys")).hasText("8");
        assertThat(p.getByTestId("pool-storages")).containsText(STORAGE);
        assertThat(p.getByTestId("router-empty")).isVisible();
        assertThat(p.getByTestId("error-state")).hasCount(0);

        // a prompt scored through the control plane's proxy and the metadata plane: no pod, the pool's SERVING prefix
        StringBuilder ids = new StringBuilder();
        long[] prompt = tokens(48);
        for (long t : prompt) {
            ids.append(ids.isEmpty() ? "" : ", ").append(t);
        }
        p.getByTestId("score-input").fill(ids.toString());
        p.getByTestId("score-weights").fill("gpu=1, cpu=0.5");
        p.getByTestId("score-run").click();
        assertThat(p.getByTestId("score-summary")).containsText("12 blocks; the pool serves a prefix of 8");
        assertThat(p.getByTestId("score-no-pods")).isVisible();
        assertThat(p.getByTestId("score-error")).hasCount(0);
        // that prompt counts for the router's hit rate: no pod had any of it, the pool 8 of its 12 blocks
        var refetch = new com.microsoft.playwright.assertions.LocatorAssertions.HasCountOptions().setTimeout(20_000);
        assertThat(p.getByTestId("router-empty")).hasCount(0, refetch); // the page refetches every 10 s
        assertThat(p.getByTestId("rate-pool-value")).hasText("66.7 %");
        assertThat(p.getByTestId("rate-routed-value")).hasText("0.0 %");
        assertThat(p.getByTestId("router-queries")).hasText("1");

        // a refusal of the plane comes back through the proxy as its problem document
        Object refused = p.evaluate("async (id) => { const s = JSON.parse(sessionStorage.getItem('kvpool.session'));"
                + " const r = await fetch('/api/v1/meta/engine/scores', {method: 'POST', headers: {Authorization:"
                + " 'Bearer ' + s.token, 'Content-Type': 'application/json'}, body: JSON.stringify({instance_id: id})});"
                + " return r.status + ' ' + r.headers.get('Content-Type'); }", INSTANCE);
        assertTrue(String.valueOf(refused).startsWith("400 application/problem+json"),
                "a score request with neither token_ids nor block_keys: " + refused);

        // two vLLM pods publish KV events over ZMQ: pod-a holds 10 of the prompt's blocks on its GPU; pod-b 4 in host
        // memory, then skips a sequence number with no replay socket, so its view is uncertain
        Stack.Res bk = Stack.call("POST", stack.meta + "/api/v1/instances/" + INSTANCE + "/block-keys",
                Stack.M.createObjectNode().set("token_ids", Stack.M.valueToTree(prompt)), admin(), null);
        assertEquals(200, bk.status(), bk.raw());
        long[] keys = new long[12];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = Long.parseLong(bk.body().path("blocks").path(i).path("key").asText());
        }
        try (EnginePublisher a = new EnginePublisher(); EnginePublisher b = new EnginePublisher()) {
            for (String[] src : new String[][] {{"e2e-src-a", "pod-a", a.endpoint()}, {"e2e-src-b", "pod-b", b.endpoint()}}) {
                var body = Stack.M.createObjectNode().put("name", src[0]).put("instance_id", INSTANCE).put("pod", src[1])
                        .put("endpoint", src[2]);
                Stack.Res r = Stack.call("POST", stack.meta + "/api/v1/engine/sources", body, admin(), null);
                assertEquals(201, r.status(), r.raw());
            }
            byte[] onGpu = EnginePublisher.stored(java.util.Arrays.copyOf(keys, 10), prompt, 4, "GPU");
            byte[] onCpu = EnginePublisher.stored(java.util.Arrays.copyOf(keys, 4), prompt, 4, "CPU");
            // a SUB socket misses what was sent before it connected: sequence 0 again until both pods are in the view
            stack.await("both pods in the engine view", 30_000, () -> {
                a.publish(0, onGpu);
                b.publish(0, onCpu);
                JsonNode pods = engineCache().path("pods");
                return pods.size() == 2;
            });
            b.publish(2, onCpu); // sequence 1 never comes
            stack.await("pod-b uncertain", 30_000, () -> {
                for (JsonNode pod : engineCache().path("pods")) {
                    if (pod.path("pod").asText().equals("pod-b")) {
                        return pod.path("state").asText().equals("uncertain");
                    }
                }
                return false;
            });
        }

        p.reload();
        var podA = p.getByTestId("engine-pod-pod-a");
        assertThat(podA).hasAttribute("data-state", "live");
        assertThat(podA.getByTestId("pod-tier-gpu")).hasText("10");
        assertThat(podA.getByTestId("pod-tier-cpu")).hasText("0");
        var podB = p.getByTestId("engine-pod-pod-b");
        assertThat(podB).hasAttribute("data-state", "uncertain");
        assertThat(podB.getByTestId("pod-state")).hasText("uncertain");
        assertThat(podB.getByTestId("pod-tier-cpu")).hasText("4");
        assertThat(p.getByTestId("uncertain-warning")).isVisible();
        assertThat(p.getByTestId("tier-totals-gpu")).hasText("10");
        assertThat(p.getByTestId("tier-totals-cpu")).hasText("4");
        assertThat(p.getByTestId("where-pool")).containsText("8");

        // the same prompt now finds pod-a best: 10 blocks on its GPU, at weight 1 each
        p.getByTestId("score-input").fill(ids.toString());
        p.getByTestId("score-weights").fill("gpu=1, cpu=0.5");
        p.getByTestId("score-run").click();
        var best = p.getByTestId("score-table").locator("tbody tr").first();
        assertThat(best).hasAttribute("data-testid", "score-row-pod-a");
        assertThat(best.getByTestId("score-prefix")).hasText("10");
        assertThat(best.getByTestId("score-value")).hasText("10.00");
        assertThat(p.getByTestId("score-summary")).containsText("12 blocks; the pool serves a prefix of 8");
        assertThat(p.getByTestId("router-queries")).hasText("2", new com.microsoft.playwright.assertions
                .LocatorAssertions.HasTextOptions().setTimeout(20_000));
        java.nio.file.Files.createDirectories(stack.dir.resolve("screenshots"));
        p.setViewportSize(1440, 2200); // the whole page: the console scrolls inside its main area, not the document
        p.waitForTimeout(500);
        p.screenshot(new Page.ScreenshotOptions()
                .setPath(stack.dir.resolve("screenshots").resolve("engine-caches.png")));
        p.setViewportSize(1440, 960);

        // the nav's list: this instance with its two pods, one of them uncertain
        p.getByTestId("nav-engine").click();
        var row = p.getByTestId("engine-instance-row-" + INSTANCE);
        assertThat(row.getByTestId("engine-instance-pods")).hasText("2");
        assertThat(row.getByTestId("engine-instance-uncertain")).hasText("1");
        assertThat(p.getByTestId("error-state")).hasCount(0);
    }

    /** The metadata plane's engine view of the test instance (empty when it cannot be read). */
    static JsonNode engineCache() {
        try {
            Stack.Res r = Stack.call("GET", stack.meta + "/api/v1/engine/instances/" + INSTANCE + "/cache", null, admin(),
                    null);
            return r.status() == 200 ? r.body() : Stack.M.createObjectNode();
        } catch (java.io.IOException e) {
            return Stack.M.createObjectNode();
        }
    }

    // ---- what-if capacity ------------------------------------------------------------------------------------

    /** The first {@code n} requests of Mooncake's conversation trace, as a JSONL file a user would upload. */
    static Path smallTrace(int n) throws java.io.IOException {
        Path d = Path.of("").toAbsolutePath();
        while (d != null && !java.nio.file.Files.isDirectory(d.resolve("../shared/data/mooncake"))) {
            d = d.getParent();
        }
        if (d == null) {
            throw new IllegalStateException("../shared/data/mooncake not found above " + Path.of("").toAbsolutePath());
        }
        Path src = d.resolve("../shared/data/mooncake/conversation_trace.jsonl").normalize();
        Path out = stack.dir.resolve("small-e2e.jsonl");
        try (var lines = java.nio.file.Files.lines(src)) {
            java.nio.file.Files.write(out, lines.limit(n).toList());
        }
        return out;
    }

    static double progressNow(Page p) {
        String v = p.getByTestId("whatif-progress").locator("[role=progressbar]").getAttribute("aria-valuenow");
        return v == null ? -1 : Double.parseDouble(v);
    }

    @Test
    @Order(8)
    void whatIfReplaysWithProgressCancelsSurvivesAReloadAndAppliesTheQuota() throws Exception {
        Page p = signIn("/whatif", "admin", Stack.ADMIN_PW);

        // a long sweep of the shipped conversation trace: its progress moves, and cancel stops it
        p.locator("#whatif-trace").selectOption("conversation");
        p.locator("#whatif-min").fill("100K");
        p.locator("#whatif-max").fill("100M");
        p.locator("#whatif-points").fill("48");
        p.getByTestId("whatif-run").click();
        p.waitForURL(java.util.regex.Pattern.compile(".*/whatif/[^/]+$"));
        double seen = -1;
        long end = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < end) {
            double v = progressNow(p);
            if (v > 0 && v < 100) {
                seen = v;
                break;
            }
            p.waitForTimeout(100);
        }
        assertTrue(seen > 0 && seen < 100, "the progress bar never showed a replay under way");
        p.getByTestId("whatif-cancel").click();
        assertThat(p.getByTestId("whatif-state")).hasText("cancelled");
        double stopped = progressNow(p);
        p.waitForTimeout(1500);
        assertEquals(stopped, progressNow(p), "a cancelled replay goes on no further");

        // a small uploaded trace, run to the end
        p.navigate(stack.cp + "/whatif");
        p.locator("#whatif-uploadName").fill("small-e2e");
        p.getByTestId("whatif-trace-file").setInputFiles(smallTrace(600));
        p.getByTestId("whatif-trace-upload").click();
        assertThat(p.locator("#whatif-trace option[value='small-e2e']")).hasCount(1);
        p.locator("#whatif-trace").selectOption("small-e2e");
        p.locator("#whatif-min").fill("10K");
        p.locator("#whatif-max").fill("10M");
        p.locator("#whatif-points").fill("4");
        p.locator("#whatif-targetPercent").fill("10");
        p.locator("#whatif-targetPolicy").selectOption("LRU");
        long r0 = System.nanoTime();
        p.getByTestId("whatif-run").click();
        p.waitForURL(java.util.regex.Pattern.compile(".*/whatif/[^/]+$"));
        String runUrl = p.url();
        assertThat(p.getByTestId("whatif-state")).hasText("done", new com.microsoft.playwright.assertions
                .LocatorAssertions.HasTextOptions().setTimeout(120_000));
        figure("whatif_600_requests_4x4_with_bisection_s", String.format(java.util.Locale.ROOT, "%.1f",
                (System.nanoTime() - r0) / 1e9));
        assertEquals(100.0, progressNow(p));
        assertThat(p.getByTestId("whatif-chart").locator("svg path").first()).isAttached();
        assertTrue(p.getByTestId("whatif-results-table").locator("tbody tr").count() >= 4 * 4,
                "a row per policy and capacity");

        // the run lives on the server: a reload comes back to it
        p.reload();
        assertEquals(runUrl, p.url());
        assertThat(p.getByTestId("whatif-state")).hasText("done");
        assertThat(p.getByTestId("whatif-smallest")).containsText("Smallest quota that reaches 10 % with LRU");

        // apply the smallest quota to the group, with confirmation
        long before = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null).body()
                .path("quotaBytes").asLong();
        p.locator("#whatif-group").selectOption(GROUP);
        assertThat(p.locator("#whatif-bytesPerBlock")).not().hasValue("");
        p.getByTestId("whatif-apply").click();
        assertThat(p.getByTestId("whatif-apply-modal")).isVisible();
        p.getByTestId("whatif-apply-confirm").click();
        assertThat(p.getByTestId("whatif-applied")).isVisible();
        long after = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null).body()
                .path("quotaBytes").asLong();
        assertTrue(after > 0 && after != before, "the quota was applied: " + before + " -> " + after);
    }

    // ---- an expired session, a service that is down -------------------------------------------------------

    @Test
    @Order(9)
    void anExpiredSessionReturnsToTheSamePageAfterSignIn() {
        Page p = signIn("/groups/" + GROUP, "admin", Stack.ADMIN_PW);
        assertThat(p.getByTestId("group-hit-rate-chart")).isVisible();
        // the token runs out (as after its hour): the next call the page makes is refused with 401
        p.evaluate("() => { const s = JSON.parse(sessionStorage.getItem('kvpool.session'));"
                + " s.token = s.token.slice(0, -4) + 'AAAA'; sessionStorage.setItem('kvpool.session', JSON.stringify(s)); }");
        p.navigate(stack.cp + "/instances/" + INSTANCE);
        assertThat(p.getByTestId("session-expired")).isVisible();
        p.getByTestId("sign-in-user").fill("admin");
        p.getByTestId("sign-in-password").fill(Stack.ADMIN_PW);
        p.getByTestId("sign-in-submit").click();
        p.waitForURL("**/instances/" + INSTANCE);
        assertThat(p.getByTestId("prompt-miss-card")).isVisible();
    }

    @Test
    @Order(10)
    void aMetadataPlaneThatIsDownShowsAsDownNotAsABlankPage() throws Exception {
        stack.stopMetadataPlane();
        Page p = signIn("/", "admin", Stack.ADMIN_PW);
        // DOWN after three report periods without a report (1 s each here); the page polls
        assertThat(p.locator("[data-testid^=service-meta-]").first()).containsText("DOWN",
                new com.microsoft.playwright.assertions.LocatorAssertions.ContainsTextOptions().setTimeout(30_000));
        // what only the metadata plane can answer says so, rather than spinning
        p.navigate(stack.cp + "/instances/" + INSTANCE);
        assertThat(p.getByTestId("error-state").first()).containsText("service unavailable");
        assertThat(p.getByTestId("error-state").first()).containsText("no metadata plane reachable");
        assertThat(p.getByTestId("instance-meta")).hasCount(0);
    }

    @Test
    @Order(11)
    void anAdminCreatesAnOperatorAccountInTheConsole() throws Exception {
        Page p = signIn("/accounts", "admin", Stack.ADMIN_PW);
        assertThat(p.getByTestId("account-row-team-a")).isVisible();
        p.getByTestId("account-create").click();
        p.locator("#account-name").fill("ops-1");
        p.locator("#account-password").fill("Green-Heron-77q");
        p.locator("#account-role").selectOption("operator");
        p.getByTestId("account-save").click();
        assertThat(p.getByTestId("account-row-ops-1")).isVisible();
        Stack.Res a = stack.rest("GET", "/api/v1/accounts/ops-1", null, admin(), null);
        assertEquals(200, a.status(), a.raw());
        assertEquals("operator", a.body().path("role").asText());
    }

    // ---- event-report storages (issue 36) ---------------------------------------------------------------------

    @Test
    @Order(12)
    void anAdminAddsAnEventReportStorageAndListsItInAGroup() throws Exception {
        Page p = signIn("/storages", "admin", Stack.ADMIN_PW);
        p.getByTestId("storage-create").click();
        p.locator("#storage-name").fill("ui_events");
        p.locator("#storage-type").selectOption("event_report_l2");
        // the five durations with KVCM's defaults shown
        assertThat(p.locator("#storage-spec-heartbeat_timeout_ms")).hasValue("30000");
        assertThat(p.locator("#storage-spec-snapshot_min_interval_ms")).hasValue("30000");
        assertThat(p.locator("#storage-spec-snapshot_delta_drain_timeout_ms")).hasValue("10000");
        // a bound the server checks is checked before sending, with the same words
        p.locator("#storage-spec-snapshot_min_interval_ms").fill("0");
        p.getByTestId("storage-save").click();
        assertThat(p.locator("#storage-spec-snapshot_min_interval_ms-helper")).containsText("between 1 and");
        p.locator("#storage-spec-snapshot_min_interval_ms").fill("60000");
        p.locator("#storage-spec-heartbeat_timeout_ms").fill("2000");
        p.getByTestId("storage-save").click();
        assertThat(p.getByTestId("storage-row-ui_events")).isVisible();
        assertThat(p.getByTestId("storage-row-ui_events")).containsText("event_report_l2");
        assertThat(p.getByTestId("storage-row-ui_events").getByTestId("storage-usage")).containsText("no bytes");
        Stack.Res s = stack.rest("GET", "/api/v1/storages/ui_events", null, admin(), null);
        assertEquals(200, s.status(), s.raw());
        assertEquals(2000, s.body().path("spec").path("heartbeat_timeout_ms").asLong(), s.raw());
        assertEquals(60000, s.body().path("spec").path("snapshot_min_interval_ms").asLong(), s.raw());
        assertEquals(300000, s.body().path("spec").path("cleanup_grace_ms").asLong(), s.raw());
        // edit shows what is stored
        p.getByTestId("storage-edit-ui_events").click();
        assertThat(p.locator("#storage-spec-heartbeat_timeout_ms")).hasValue("2000");
        p.getByTestId("storage-cancel").click();

        // the group form offers it under "Event-report storages" only, and a pending name stays marked missing
        p.navigate(stack.cp + "/groups/" + GROUP + "/edit");
        assertThat(p.getByTestId("group-candidate-ui_events")).hasCount(0);
        p.getByTestId("group-report-ui_events").check();
        p.getByTestId("group-save").click();
        p.waitForURL("**/groups/" + GROUP);
        assertThat(p.getByTestId("group-report-candidates")).containsText("ui_events");
        Stack.Res g = stack.rest("GET", "/api/v1/instance-groups/" + GROUP, null, admin(), null);
        assertEquals("ui_events", g.body().path("eventReportStorageCandidates").path(0).asText(), g.raw());
        var changed = ((com.fasterxml.jackson.databind.node.ObjectNode) g.body());
        changed.putArray("eventReportStorageCandidates").add("ui_events").add("later_events");
        Stack.Res put = stack.rest("PUT", "/api/v1/instance-groups/" + GROUP, changed, admin(), g.etag());
        assertEquals(200, put.status(), put.raw());
        p.reload();
        assertThat(p.getByTestId("group-report-candidates").getByTestId("candidate-missing-later_events")).isVisible();
        assertThat(p.getByTestId("group-report-candidates").getByTestId("candidate-missing-ui_events")).hasCount(0);
        // the server's refusal lands next to the storage: listed by a group, it cannot be deleted
        p.navigate(stack.cp + "/storages");
        p.getByTestId("storage-delete-ui_events").click();
        p.getByTestId("storage-delete-modal-confirm").click();
        assertThat(p.getByTestId("modal-error")).containsText("eventReportStorageCandidates");
    }
}
